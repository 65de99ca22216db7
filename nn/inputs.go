package nn

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/kern"
	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/tensor"
)

// Bucket is a padded batch shape: room for Nodes nodes, Edges edges and Graphs graphs.
type Bucket struct{ Nodes, Edges, Graphs int }

func (b Bucket) String() string { return fmt.Sprintf("%dn/%de/%dg", b.Nodes, b.Edges, b.Graphs) }

// Fits reports whether a batch fits in b.
func (b Bucket) Fits(bt *data.Batch) bool {
	return b.holds(bt.Union.N, bt.Union.NumEdges(), bt.NumGraphs)
}

// holds reports whether a batch of these counts fits in b.
func (b Bucket) holds(nodes, edges, graphs int) bool {
	return nodes <= b.Nodes && edges <= b.Edges && graphs <= b.Graphs
}

// PickBucket returns the smallest bucket (by nodes, then edges) a batch fits in.
func PickBucket(buckets []Bucket, bt *data.Batch) (int, error) {
	return PickBucketFor(buckets, bt.Union.N, bt.Union.NumEdges(), bt.NumGraphs)
}

// PickBucketFor is PickBucket for a batch of the given counts (nodes, edges, graphs), without
// building it.
func PickBucketFor(buckets []Bucket, nodes, edges, graphs int) (int, error) {
	best := -1
	for i, b := range buckets {
		if !b.holds(nodes, edges, graphs) {
			continue
		}
		if best < 0 || b.Nodes < buckets[best].Nodes || (b.Nodes == buckets[best].Nodes && b.Edges < buckets[best].Edges) {
			best = i
		}
	}
	if best < 0 {
		return -1, fmt.Errorf("batch of %d graphs, %d nodes, %d edges fits no bucket", graphs, nodes, edges)
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
	return MakeBucketsFor(ns, es, batchSize, k)
}

// MakeBucketsFor is MakeBuckets from the graphs' node and edge counts alone (a memory plan has
// no graphs); it sorts ns and es.
func MakeBucketsFor(ns, es []int, batchSize, k int) ([]Bucket, error) {
	if len(ns) == 0 || len(ns) != len(es) || batchSize <= 0 || k <= 0 {
		return nil, fmt.Errorf("buckets: %d graphs, batch size %d, %d buckets", len(ns), batchSize, k)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(ns)))
	sort.Sort(sort.Reverse(sort.IntSlice(es)))
	maxN, maxE := 0, 0
	for i := 0; i < batchSize && i < len(ns); i++ {
		maxN += ns[i]
		maxE += es[i]
	}
	var mean [2]float64
	for i := range ns {
		mean[0] += float64(ns[i])
		mean[1] += float64(es[i])
	}
	bs := float64(min(batchSize, len(ns)))
	meanN, meanE := mean[0]/float64(len(ns))*bs, mean[1]/float64(len(ns))*bs
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
	NodeCat   []*ops.Index  // one per categorical node column, -1 on padding
	NodeFloat *tensor.Dense // [Nodes, width] float node features (nil if unused)
	EdgeCat   []*ops.Index  // one per categorical edge column, -1 on padding
	EdgeFloat *tensor.Dense // [Edges, width] float edge features (nil if unused)
	SP        *ops.Index    // shortest-path value per edge, for the table encoder (nil if unused)
	SPValue   *tensor.Dense // [Edges, 1] shortest-path value, for the linear encoder (nil if unused)
	Src, Dst  *ops.Index
	NodeGraph *ops.Index // node → graph with weight 1/size (mean readout) or 1 (sum readout)
	CLS       *ops.Index // graph → its CLS node (CLS readout; nil if unused)
	Root      *ops.Index // graph → its node 0 (root readout; nil if unused)
	NodeMask  *ops.Mask
	EdgeMask  *ops.Mask
	Adj       *tensor.Dense // [Edges, AdjDim] adjacency-power encoding (nil if unused)
	NodePE    *tensor.Dense // [Nodes, width] node encoding, Laplacian or random walk (nil if unused)
	// LapSign multiplies column j of the node encoding by LapSign[j] on Load: the Laplacian
	// encoding's training-time random sign flip (docs/protocol.md §"Laplacian encoding",
	// "Sign"). All ones unless the trainer sets it; nil for every other encoding, which is
	// loaded as it is.
	LapSign   []float32
	Y         *tensor.Dense // [Graphs, T] regression targets or binary labels (nil for classes)
	Labels    *ops.Index    // class per graph, or per node for node tasks, weighted (nil for regression)
	NodeLevel bool          // Labels and predictions are per node
	SBM       bool          // Labels carry the SBM per-batch class weights
	BCE       bool          // Y holds binary labels for the BCE loss (NaN in the batch: missing)
	Classes   int
	GraphW    *tensor.Dense // [Graphs, T] weights of Y's entries in the loss (TargetWeights)
	DegSrc    *tensor.Dense // [Edges, 2]: MoNet pseudo-coordinates (nil unless asked)
	// Degree-weighted aggregation, from the in-degree d_v of every node of the batch's graph
	// (the rewired graph the model reads, CLS edges included); nil unless the model asks
	// (InputSpec.GCNNorm, MeanAgg, DegScale):
	//   - GCNDst: each edge's destination, weighted 1/√((d_src+1)(d_dst+1)) (GCN's symmetric
	//     normalisation with self-loops); GCNSelf: each node itself, weighted 1/(d_v+1);
	//   - MeanDst: each edge's destination, weighted 1/d_dst (the mean over in-neighbours);
	//   - DegScale [Nodes, 3]: PNA's scalers (1, log(d+1)/δ, δ/log(d+1)) with d clamped at 1
	//     and δ = AvgLogDeg; zero rows on padding.
	GCNDst, GCNSelf, MeanDst *ops.Index
	DegScale                 *tensor.Dense
	AvgLogDeg                float64
	sumReadout               bool      // NodeGraph's weights are 1 (InputSpec.SumReadout)
	deg                      []float64 // scratch: in-degrees
	pseudo                   []float32
	scratch                  []float32
	counts                   []int
}

// InputSpec says which optional inputs a model reads.
type InputSpec struct {
	NodeCols, NodeFloat int  // categorical node columns or float node width
	EdgeCols            int  // categorical edge columns
	EdgeFloat           int  // float edge width
	SP, SPLinear        bool // shortest-path encoding as table index or as value
	CLS, Root, Pseudo   bool
	SumReadout          bool // NodeGraph weighs every node 1 (the sum readout), not 1/size
	AdjDim              int
	NodePE              int    // width of the node encoding (lp or rwse); 0 without
	LapSign             bool   // the node encoding takes the Laplacian sign flip (lp only)
	Loss                string // LossL1 and LossBCE read Y; LossCE and LossSBM read Labels
	Classes             int
	Targets             int     // columns of Y (L1: targets, BCE: labels per graph); 0 means 1
	GCNNorm, MeanAgg    bool    // the degree-weighted destination indexes GCNDst/GCNSelf and MeanDst
	DegScale            bool    // PNA's degree scalers, with AvgLogDeg as δ
	AvgLogDeg           float64 // PNA's δ (IO.AvgLogDeg)
}

// NewInputs allocates the holders for bucket b.
func NewInputs(b Bucket, dt tensor.Dtype, s InputSpec) *Inputs {
	mat := func(rows, cols int) *tensor.Dense { return tensor.New(tensor.WithShape(rows, cols), tensor.Of(dt)) }
	in := &Inputs{
		B: b, Dtype: dt,
		Src: ops.NewIndex("src", b.Edges), Dst: ops.NewIndex("dst", b.Edges),
		NodeGraph: ops.NewIndex("node graph", b.Nodes),
		NodeMask:  ops.NewMask("nodes", b.Nodes), EdgeMask: ops.NewMask("edges", b.Edges),
		GraphW: mat(b.Graphs, 1), Classes: s.Classes, sumReadout: s.SumReadout,
	}
	in.NodeGraph.W = make([]float64, b.Nodes)
	for c := 0; c < s.NodeCols; c++ {
		name := "node type"
		if c > 0 {
			name = fmt.Sprintf("node feature %d", c)
		}
		in.NodeCat = append(in.NodeCat, ops.NewIndex(name, b.Nodes))
	}
	if s.NodeFloat > 0 {
		in.NodeFloat = mat(b.Nodes, s.NodeFloat)
	}
	for c := 0; c < s.EdgeCols; c++ {
		name := "edge type"
		if c > 0 {
			name = fmt.Sprintf("edge feature %d", c)
		}
		in.EdgeCat = append(in.EdgeCat, ops.NewIndex(name, b.Edges))
	}
	if s.EdgeFloat > 0 {
		in.EdgeFloat = mat(b.Edges, s.EdgeFloat)
	}
	if s.SP {
		in.SP = ops.NewIndex("shortest path", b.Edges)
	}
	if s.SPLinear {
		in.SPValue = mat(b.Edges, 1)
	}
	if s.CLS {
		in.CLS = ops.NewIndex("cls", b.Graphs)
	}
	if s.Root {
		in.Root = ops.NewIndex("root", b.Graphs)
	}
	if s.AdjDim > 0 {
		in.Adj = mat(b.Edges, s.AdjDim)
	}
	if s.NodePE > 0 {
		in.NodePE = mat(b.Nodes, s.NodePE)
	}
	if s.NodePE > 0 && s.LapSign {
		in.LapSign = make([]float32, s.NodePE)
		for j := range in.LapSign {
			in.LapSign[j] = 1
		}
	}
	if s.Pseudo {
		in.DegSrc = mat(b.Edges, 2)
	}
	weighted := func(name string, n int) *ops.Index {
		ix := ops.NewIndex(name, n)
		ix.W = make([]float64, n)
		return ix
	}
	if s.GCNNorm {
		in.GCNDst, in.GCNSelf = weighted("gcn dst", b.Edges), weighted("gcn self", b.Nodes)
	}
	if s.MeanAgg {
		in.MeanDst = weighted("mean dst", b.Edges)
	}
	if s.DegScale {
		in.DegScale, in.AvgLogDeg = mat(b.Nodes, 3), s.AvgLogDeg
	}
	switch s.Loss {
	case LossCE, LossSBM:
		in.NodeLevel = s.Loss == LossSBM
		rows := b.Graphs
		if in.NodeLevel {
			rows = b.Nodes
		}
		in.Labels = ops.NewIndex("labels", rows)
		in.Labels.W = make([]float64, rows)
		in.SBM = s.Loss == LossSBM
	default:
		t := max(s.Targets, 1)
		in.Y, in.GraphW = mat(b.Graphs, t), mat(b.Graphs, t)
		in.BCE = s.Loss == LossBCE
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
	if err := in.checkWidths(u); err != nil {
		return fmt.Errorf("inputs: %w", err)
	}
	n, m := u.N, u.NumEdges()
	for _, ix := range in.indexes() {
		if ix != nil {
			ix.Clear()
		}
	}
	for c, ix := range in.NodeCat {
		for v := 0; v < n; v++ {
			ix.Idx[v] = u.Node.Cat[v*u.Node.CatDim+c]
		}
	}
	copy(in.NodeGraph.Idx, bt.NodeGraph)
	for v := 0; v < n; v++ {
		in.NodeMask.Keep[v] = true
	}
	clear(in.NodeMask.Keep[n:])
	for c, ix := range in.EdgeCat {
		for e := 0; e < m; e++ {
			ix.Idx[e] = u.Edge.Cat[e*u.Edge.CatDim+c]
		}
	}
	for e := 0; e < m; e++ {
		in.EdgeMask.Keep[e] = true
	}
	clear(in.EdgeMask.Keep[m:])
	copy(in.Src.Idx, u.Src)
	copy(in.Dst.Idx, u.Dst)
	for gi := 0; gi < bt.NumGraphs; gi++ {
		lo, hi := bt.NodeOff[gi], bt.NodeOff[gi+1]
		w := 1 / float64(hi-lo)
		if in.sumReadout {
			w = 1
		}
		for v := lo; v < hi; v++ {
			in.NodeGraph.W[v] = w
		}
		if in.Root != nil {
			in.Root.Idx[gi] = lo
		}
	}
	if in.NodeFloat != nil {
		fill(in.NodeFloat, u.Node.Float)
	}
	if in.EdgeFloat != nil {
		fill(in.EdgeFloat, u.Edge.Float)
	}
	if in.SP != nil {
		copy(in.SP.Idx, u.SP)
	}
	if in.SPValue != nil {
		in.scratch = growF32(in.scratch, m)
		for e, s := range u.SP {
			in.scratch[e] = float32(s)
		}
		fill(in.SPValue, in.scratch[:m])
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
		fill(in.Adj, u.Adj)
	}
	switch {
	case in.NodePE != nil && in.LapSign != nil:
		in.scratch = growF32(in.scratch, len(u.NodePE))
		copy(in.scratch, u.NodePE)
		data.ApplySigns(in.scratch[:len(u.NodePE)], in.LapSign)
		fill(in.NodePE, in.scratch[:len(u.NodePE)])
	case in.NodePE != nil:
		fill(in.NodePE, u.NodePE)
	}
	if err := in.loadTargets(bt); err != nil {
		return fmt.Errorf("inputs: %w", err)
	}
	if in.DegSrc != nil {
		in.pseudoCoords(u)
	}
	return in.degreeWeights(u)
}

// indexes lists the index holders (nil where unused).
func (in *Inputs) indexes() []*ops.Index {
	return slices.Concat([]*ops.Index{in.SP, in.Src, in.Dst, in.NodeGraph, in.CLS, in.Root, in.Labels, in.GCNDst, in.GCNSelf, in.MeanDst}, in.NodeCat, in.EdgeCat)
}

// inDegrees returns the in-degree of every node of u (a scratch slice, valid until the next call).
func (in *Inputs) inDegrees(u *data.Graph) []float64 {
	if cap(in.deg) < u.N {
		in.deg = make([]float64, in.B.Nodes)
	}
	deg := in.deg[:u.N]
	clear(deg)
	for _, d := range u.Dst {
		deg[d]++
	}
	return deg
}

// degreeWeights fills the degree-weighted indexes and PNA's scalers the model reads.
func (in *Inputs) degreeWeights(u *data.Graph) error {
	if in.GCNDst == nil && in.MeanDst == nil && in.DegScale == nil {
		return nil
	}
	deg := in.inDegrees(u)
	if in.GCNDst != nil {
		for e := range u.Dst {
			in.GCNDst.Idx[e], in.GCNDst.W[e] = u.Dst[e], 1/math.Sqrt((deg[u.Src[e]]+1)*(deg[u.Dst[e]]+1))
		}
		for v := range deg {
			in.GCNSelf.Idx[v], in.GCNSelf.W[v] = int32(v), 1/(deg[v]+1)
		}
	}
	if in.MeanDst != nil {
		for e, d := range u.Dst {
			in.MeanDst.Idx[e], in.MeanDst.W[e] = d, 1/deg[d]
		}
	}
	if in.DegScale != nil {
		return in.degreeScalers(deg)
	}
	return nil
}

// degreeScalers writes PNA's scalers (1, log(d+1)/δ, δ/log(d+1)) per node, d clamped at 1,
// computed in float64 and rounded once to the element type; padding rows are zero.
func (in *Inputs) degreeScalers(deg []float64) error {
	delta := in.AvgLogDeg
	if !(delta > 0) || math.IsInf(delta, 1) {
		return fmt.Errorf("inputs: the degree scalers need δ, the training split's mean log(d+1), got %g", delta)
	}
	if in.DegScale.Dtype() == tensor.Float64 {
		writeScalers(in.DegScale.Float64s(), deg, delta)
	} else {
		writeScalers(in.DegScale.Float32s(), deg, delta)
	}
	return nil
}

func writeScalers[T kern.Float](dst []T, deg []float64, delta float64) {
	for v, d := range deg {
		l := math.Log(max(d, 1) + 1)
		dst[3*v], dst[3*v+1], dst[3*v+2] = 1, T(l/delta), T(delta/l)
	}
	clear(dst[3*len(deg):])
}

// checkWidths reports the first input the model reads that the batch lacks or shapes differently.
func (in *Inputs) checkWidths(u *data.Graph) error {
	n, m := u.N, u.NumEdges()
	switch {
	case u.Node.CatDim < len(in.NodeCat):
		return fmt.Errorf("the model reads %d categorical node columns, the batch has %d", len(in.NodeCat), u.Node.CatDim)
	case in.NodeFloat != nil && u.Node.FloatDim != in.NodeFloat.Shape()[1]:
		return fmt.Errorf("the model reads %d float node features, the batch has %d", in.NodeFloat.Shape()[1], u.Node.FloatDim)
	case m > 0 && u.Edge.CatDim < len(in.EdgeCat):
		return fmt.Errorf("the model reads %d categorical edge columns, the batch has %d", len(in.EdgeCat), u.Edge.CatDim)
	case in.EdgeFloat != nil && u.Edge.FloatDim != in.EdgeFloat.Shape()[1]:
		return fmt.Errorf("the model reads %d float edge features, the batch has %d", in.EdgeFloat.Shape()[1], u.Edge.FloatDim)
	case (in.SP != nil || in.SPValue != nil) && len(u.SP) != m:
		return fmt.Errorf("the model reads the shortest-path encoding, the batch has %d values for %d edges", len(u.SP), m)
	case in.Adj != nil && (u.AdjDim != in.Adj.Shape()[1] || len(u.Adj) != m*u.AdjDim):
		return fmt.Errorf("the model reads a %d-wide adjacency encoding, the batch has width %d", in.Adj.Shape()[1], u.AdjDim)
	case in.NodePE != nil && (u.NodePEDim != in.NodePE.Shape()[1] || len(u.NodePE) != n*u.NodePEDim):
		return fmt.Errorf("the model reads a %d-wide node encoding, the batch has width %d", in.NodePE.Shape()[1], u.NodePEDim)
	}
	return nil
}

// loadTargets fills the regression targets or the class labels and their weights.
func (in *Inputs) loadTargets(bt *data.Batch) error {
	switch {
	case in.Y != nil:
		if in.Y.Dtype() == tensor.Float64 {
			return TargetWeights(in.Y.Float64s(), in.GraphW.Float64s(), bt, in.Y.Shape()[1], in.BCE)
		}
		return TargetWeights(in.Y.Float32s(), in.GraphW.Float32s(), bt, in.Y.Shape()[1], in.BCE)
	case in.NodeLevel:
		if len(bt.Union.NodeLabel) != bt.Union.N {
			return fmt.Errorf("the model predicts node classes, the batch has %d node labels for %d nodes", len(bt.Union.NodeLabel), bt.Union.N)
		}
		copy(in.Labels.Idx, bt.Union.NodeLabel)
	default:
		copy(in.Labels.Idx, bt.Labels)
	}
	for i, y := range in.Labels.Idx {
		if int(y) >= in.Classes {
			return fmt.Errorf("label %d of row %d outside %d classes", y, i, in.Classes)
		}
	}
	if in.SBM {
		return ops.SBMClassWeightsBuf(in.Labels.Idx, in.Classes, in.Labels.W, &in.counts)
	}
	for i, y := range in.Labels.Idx {
		in.Labels.W[i] = float64(btoi(y >= 0))
	}
	return nil
}

func growF32(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
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

// TargetWeights writes the loss targets y and weights w of batch bt's graph-level targets (cols
// per graph; y and w hold at least NumGraphs·cols entries, the rest, padding graphs, get 0):
//   - L1 (bce false): y = the targets, w = 1/(B·cols) on the B real graphs' entries, so Σ w|p − y|
//     is the mean absolute error over all entries;
//   - BCE: y = the labels (0 or 1), w = 1/L on the L labelled entries; a missing label (NaN)
//     gets y = 0 and w = 0, so no NaN reaches the loss and Σ w·ℓ is the mean over the labelled
//     entries (0 when none is).
//
// The reciprocal is taken in the element type. It fails when the batch's target width is not
// cols or a label is neither 0, 1 nor NaN.
func TargetWeights[T kern.Float](y, w []T, bt *data.Batch, cols int, bce bool) error {
	n := bt.NumGraphs * cols
	if bt.YDim != cols || len(bt.Y) != n {
		return fmt.Errorf("batch targets have width %d (%d values for %d graphs), want %d", bt.YDim, len(bt.Y), bt.NumGraphs, cols)
	}
	clear(y)
	clear(w)
	if !bce {
		for i, v := range bt.Y {
			y[i], w[i] = T(v), 1/T(n)
		}
		return nil
	}
	labelled := 0
	for i, v := range bt.Y {
		switch {
		case v != v: // NaN: missing
		case v == 0 || v == 1:
			y[i] = T(v)
			labelled++
		default:
			return fmt.Errorf("graph %d, label %d of the batch is %g, want 0, 1 or NaN (missing)", i/cols, i%cols, v)
		}
	}
	for i, v := range bt.Y {
		if v == v {
			w[i] = 1 / T(labelled)
		}
	}
	return nil
}

// pseudoCoords writes MoNet's pseudo-coordinates (1/√(deg src + 1), 1/√(deg dst + 1)) per
// edge, with in-degrees of the graph fed to the model (docs/protocol.md §"MoNet layer").
func (in *Inputs) pseudoCoords(u *data.Graph) {
	deg := in.inDegrees(u)
	if cap(in.pseudo) < 2*u.NumEdges() {
		in.pseudo = make([]float32, 2*in.B.Edges)
	}
	vals := in.pseudo[:2*u.NumEdges()]
	for e := range u.Src {
		vals[2*e] = float32(1 / math.Sqrt(deg[u.Src[e]]+1))
		vals[2*e+1] = float32(1 / math.Sqrt(deg[u.Dst[e]]+1))
	}
	fill(in.DegSrc, vals)
}

// Bytes returns the memory of the holders (indexes, masks, dense inputs and their scratch),
// allocated by NewInputs.
func (in *Inputs) Bytes() int64 {
	var n int64
	for _, ix := range in.indexes() {
		if ix != nil {
			n += 4*int64(len(ix.Idx)) + 8*int64(len(ix.W))
		}
	}
	for _, m := range []*ops.Mask{in.NodeMask, in.EdgeMask} {
		if m != nil {
			n += int64(len(m.Keep))
		}
	}
	for _, t := range []*tensor.Dense{in.NodeFloat, in.EdgeFloat, in.SPValue, in.Adj, in.NodePE, in.Y, in.GraphW, in.DegSrc, in.DegScale} {
		if t != nil {
			n += int64(t.Shape().TotalSize()) * int64(t.Dtype().Size())
		}
	}
	return n
}

// dense names the dense input holders the net reads (those that exist).
func (in *Inputs) dense() map[*tensor.Dense]string {
	m := map[*tensor.Dense]string{}
	if in == nil {
		return m
	}
	for _, x := range []struct {
		t    *tensor.Dense
		name string
	}{{in.NodeFloat, "node features"}, {in.EdgeFloat, "edge features"}, {in.SPValue, "shortest-path values"},
		{in.Adj, "adjacency powers"}, {in.NodePE, "node encoding"}, {in.Y, "targets"}, {in.GraphW, "graph weights"},
		{in.DegSrc, "pseudo-coordinates"}, {in.DegScale, "degree scalers"}} {
		if x.t != nil {
			m[x.t] = x.name
		}
	}
	return m
}
