package nn

import (
	"fmt"
	"sort"

	"github.com/rewiregnn/rewiregnn/data"
	"gorgonia.org/tensor"
)

// Bucket is a padded batch shape: room for Nodes nodes, Edges edges and Graphs graphs.
type Bucket struct{ Nodes, Edges, Graphs int }

func (b Bucket) String() string { return fmt.Sprintf("%dn/%de/%dg", b.Nodes, b.Edges, b.Graphs) }

// Fits reports whether a batch fits in b.
func (b Bucket) Fits(bt *data.Batch) bool {
	return bt.Union.N <= b.Nodes && bt.Union.NumEdges() <= b.Edges && bt.NumGraphs <= b.Graphs
}

// PickBucket returns the smallest bucket (by nodes, then edges) a batch fits in.
func PickBucket(buckets []Bucket, bt *data.Batch) (int, error) {
	best := -1
	for i, b := range buckets {
		if !b.Fits(bt) {
			continue
		}
		if best < 0 || b.Nodes < buckets[best].Nodes || (b.Nodes == buckets[best].Nodes && b.Edges < buckets[best].Edges) {
			best = i
		}
	}
	if best < 0 {
		return -1, fmt.Errorf("batch of %d graphs, %d nodes, %d edges fits no bucket", bt.NumGraphs, bt.Union.N, bt.Union.NumEdges())
	}
	return best, nil
}

// MakeBuckets proposes k buckets for batches of batchSize graphs drawn from gs: node and edge
// counts at evenly spaced quantiles of the totals of consecutive batches, with headroom, the
// largest covering the worst case of batchSize largest graphs (so every batch fits).
func MakeBuckets(gs []*data.Graph, batchSize, k int) ([]Bucket, error) {
	if len(gs) == 0 || batchSize <= 0 || k <= 0 {
		return nil, fmt.Errorf("buckets: %d graphs, batch size %d, %d buckets", len(gs), batchSize, k)
	}
	ns := make([]int, len(gs))
	es := make([]int, len(gs))
	for i, g := range gs {
		ns[i], es[i] = g.N, g.NumEdges()
	}
	sort.Sort(sort.Reverse(sort.IntSlice(ns)))
	sort.Sort(sort.Reverse(sort.IntSlice(es)))
	maxN, maxE := 0, 0
	for i := 0; i < batchSize && i < len(gs); i++ {
		maxN += ns[i]
		maxE += es[i]
	}
	var mean [2]float64
	for i := range ns {
		mean[0] += float64(ns[i])
		mean[1] += float64(es[i])
	}
	bs := float64(min(batchSize, len(gs)))
	meanN, meanE := mean[0]/float64(len(gs))*bs, mean[1]/float64(len(gs))*bs
	out := make([]Bucket, 0, k)
	for i := 0; i < k-1; i++ {
		f := 1.03 + 0.06*float64(i) // steps above the mean batch size
		out = append(out, Bucket{Nodes: int(meanN * f), Edges: int(meanE * f), Graphs: batchSize})
	}
	return append(out, Bucket{Nodes: maxN, Edges: maxE, Graphs: batchSize}), nil
}

// Inputs holds what a compiled graph reads from a batch: index and mask holders for the ops and
// dense input tensors, all sized for one bucket. Load refills them in place.
type Inputs struct {
	B         Bucket
	Dtype     tensor.Dtype
	NodeCat   *Index // first categorical node feature (atom type), -1 on padding
	EdgeCat   *Index // first categorical edge feature (bond type)
	SP        *Index // shortest-path value per edge (nil if unused)
	Src, Dst  *Index
	NodeGraph *Index // node → graph with weight 1/size (mean readout)
	CLS       *Index // graph → its CLS node (CLS readout; nil if unused)
	NodeMask  *Mask
	EdgeMask  *Mask
	Adj       *tensor.Dense // [Edges, AdjDim] adjacency-power encoding (nil if unused)
	Lap       *tensor.Dense // [Nodes, LapQ] Laplacian encoding (nil if unused)
	Y         *tensor.Dense // [Graphs, 1] regression target
	GraphW    *tensor.Dense // [Graphs, 1]: 1/(real graphs) for real graphs, 0 for padding
	DegSrc    *tensor.Dense // [Edges, 2]: MoNet pseudo-coordinates (nil unless asked)
	deg       []float64     // scratch for the pseudo-coordinates
	pseudo    []float32
}

// InputSpec says which optional inputs a model reads.
type InputSpec struct {
	SP, CLS, Pseudo bool
	AdjDim, LapQ    int
}

// NewInputs allocates the holders for bucket b.
func NewInputs(b Bucket, dt tensor.Dtype, s InputSpec) *Inputs {
	in := &Inputs{
		B: b, Dtype: dt,
		NodeCat: NewIndex("node type", b.Nodes), EdgeCat: NewIndex("edge type", b.Edges),
		Src: NewIndex("src", b.Edges), Dst: NewIndex("dst", b.Edges),
		NodeGraph: NewIndex("node graph", b.Nodes),
		NodeMask:  NewMask("nodes", b.Nodes), EdgeMask: NewMask("edges", b.Edges),
		Y: tensor.New(tensor.WithShape(b.Graphs, 1), tensor.Of(dt)), GraphW: tensor.New(tensor.WithShape(b.Graphs, 1), tensor.Of(dt)),
	}
	in.NodeGraph.W = make([]float64, b.Nodes)
	if s.SP {
		in.SP = NewIndex("shortest path", b.Edges)
	}
	if s.CLS {
		in.CLS = NewIndex("cls", b.Graphs)
	}
	if s.AdjDim > 0 {
		in.Adj = tensor.New(tensor.WithShape(b.Edges, s.AdjDim), tensor.Of(dt))
	}
	if s.LapQ > 0 {
		in.Lap = tensor.New(tensor.WithShape(b.Nodes, s.LapQ), tensor.Of(dt))
	}
	if s.Pseudo {
		in.DegSrc = tensor.New(tensor.WithShape(b.Edges, 2), tensor.Of(dt))
	}
	return in
}

// Load copies bt into the holders, padding the rest. It fails if bt does not fit the bucket or
// lacks an input the model reads.
func (in *Inputs) Load(bt *data.Batch) error {
	u := &bt.Union
	if !in.B.Fits(bt) {
		return fmt.Errorf("inputs: batch of %d graphs, %d nodes, %d edges does not fit bucket %v", bt.NumGraphs, u.N, u.NumEdges(), in.B)
	}
	if u.Node.CatDim < 1 || (u.NumEdges() > 0 && u.Edge.CatDim < 1) {
		return fmt.Errorf("inputs: node/edge features have %d/%d categorical columns, want at least 1", u.Node.CatDim, u.Edge.CatDim)
	}
	n, m := u.N, u.NumEdges()
	for _, ix := range []*Index{in.NodeCat, in.EdgeCat, in.SP, in.Src, in.Dst, in.NodeGraph, in.CLS} {
		if ix != nil {
			ix.Clear()
		}
	}
	for v := 0; v < n; v++ {
		in.NodeCat.Idx[v] = u.Node.Cat[v*u.Node.CatDim]
		in.NodeGraph.Idx[v] = bt.NodeGraph[v]
		in.NodeMask.Keep[v] = true
	}
	clear(in.NodeMask.Keep[n:])
	for e := 0; e < m; e++ {
		in.EdgeCat.Idx[e] = u.Edge.Cat[e*u.Edge.CatDim]
		in.EdgeMask.Keep[e] = true
	}
	clear(in.EdgeMask.Keep[m:])
	copy(in.Src.Idx, u.Src)
	copy(in.Dst.Idx, u.Dst)
	for gi := 0; gi < bt.NumGraphs; gi++ {
		lo, hi := bt.NodeOff[gi], bt.NodeOff[gi+1]
		for v := lo; v < hi; v++ {
			in.NodeGraph.W[v] = 1 / float64(hi-lo)
		}
	}
	if in.SP != nil {
		if len(u.SP) != m {
			return fmt.Errorf("inputs: the model reads the shortest-path encoding, the batch has %d values for %d edges", len(u.SP), m)
		}
		copy(in.SP.Idx, u.SP)
	}
	if in.CLS != nil {
		for gi, c := range bt.CLS {
			if c < 0 {
				return fmt.Errorf("inputs: the model reads out from the CLS node, graph %d of the batch has none", gi)
			}
			in.CLS.Idx[gi] = c
		}
	}
	if in.Adj != nil {
		if w := in.Adj.Shape()[1]; u.AdjDim != w || len(u.Adj) != m*w {
			return fmt.Errorf("inputs: the model reads a %d-wide adjacency encoding, the batch has width %d", w, u.AdjDim)
		}
		fill(in.Adj, u.Adj)
	}
	if in.Lap != nil {
		if w := in.Lap.Shape()[1]; u.LapDim != w || len(u.Lap) != n*w {
			return fmt.Errorf("inputs: the model reads a %d-wide Laplacian encoding, the batch has width %d", w, u.LapDim)
		}
		fill(in.Lap, u.Lap)
	}
	if bt.YDim != 1 || len(bt.Y) != bt.NumGraphs {
		return fmt.Errorf("inputs: batch targets have width %d, want 1", bt.YDim)
	}
	fill(in.Y, bt.Y)
	fillW(in.GraphW, bt.NumGraphs)
	if in.DegSrc != nil {
		in.pseudoCoords(u)
	}
	return nil
}

// fill copies src into the start of t and zeroes the rest.
func fill(t *tensor.Dense, src []float32) {
	switch t.Dtype() {
	case tensor.Float64:
		d := t.Float64s()
		for i, v := range src {
			d[i] = float64(v)
		}
		clear(d[len(src):])
	default:
		d := t.Float32s()
		copy(d, src)
		clear(d[len(src):])
	}
}

func fillW(t *tensor.Dense, real int) {
	switch t.Dtype() {
	case tensor.Float64:
		d := t.Float64s()
		clear(d)
		for i := 0; i < real; i++ {
			d[i] = 1 / float64(real)
		}
	default:
		d := t.Float32s()
		clear(d)
		for i := 0; i < real; i++ {
			d[i] = 1 / float32(real)
		}
	}
}

// pseudoCoords writes MoNet's pseudo-coordinates (1/√(deg src + 1), 1/√(deg dst + 1)) per
// edge, with in-degrees of the graph fed to the model (REFERENCE §3.1).
func (in *Inputs) pseudoCoords(u *data.Graph) {
	if cap(in.deg) < u.N {
		in.deg = make([]float64, in.B.Nodes)
	}
	deg := in.deg[:u.N]
	clear(deg)
	for _, d := range u.Dst {
		deg[d]++
	}
	if cap(in.pseudo) < 2*u.NumEdges() {
		in.pseudo = make([]float32, 2*in.B.Edges)
	}
	vals := in.pseudo[:2*u.NumEdges()]
	for e := range u.Src {
		vals[2*e] = float32(1 / sqrt64(deg[u.Src[e]]+1))
		vals[2*e+1] = float32(1 / sqrt64(deg[u.Dst[e]]+1))
	}
	fill(in.DegSrc, vals)
}
