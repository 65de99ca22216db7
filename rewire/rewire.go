// Package rewire expands a graph to its r-hop graph (an edge u→v for every directed path of at
// most r steps, self-loops included by default), optionally joins a CLS node to every node, and
// attaches the shortest-path and adjacency-power edge encodings that keep the original graph
// recoverable (Recover), and measures density: docs/protocol.md §"Rewiring" to
// §"Adjacency-power encoding", §"Density" and §"Lossless recovery".
package rewire

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/posenc"
)

// Options says how to rewire.
type Options struct {
	R         int      // hop radius, ≥ 1
	SelfLoops bool     // add u→u for every node (docs/protocol.md §"Rewiring"; the paper's setting is true)
	CLS       bool     // append a CLS node joined to every node in both directions
	SP        bool     // attach the shortest-path encoding (Graph.SP)
	Adj       bool     // attach the adjacency-power encoding (Graph.Adj, R values per edge)
	EdgeConst data.Row // C_e: features of added, self-loop and CLS edges
	CLSNode   data.Row // C_v: features of the CLS node
}

// Defaults returns the paper's options for a dataset at radius r: self-loops on, no CLS, both
// edge encodings, and the dataset's constants.
func Defaults(spec *data.Spec, r int) Options {
	return Options{R: r, SelfLoops: true, SP: true, Adj: true, EdgeConst: spec.EdgeConst, CLSNode: spec.CLSNode}
}

// Validate checks the options against the graph they will be applied to.
func (o *Options) Validate(g *data.Graph) error {
	if o.R < 1 {
		return fmt.Errorf("rewire: r = %d: the hop radius must be at least 1", o.R)
	}
	if !g.Edge.Empty() && !g.Edge.FitsRow(o.EdgeConst) {
		return fmt.Errorf("rewire: edge constant has %d categorical and %d float values, the edges have %d and %d",
			len(o.EdgeConst.Cat), len(o.EdgeConst.Float), g.Edge.CatDim, g.Edge.FloatDim)
	}
	if o.CLS && !g.Node.Empty() && !g.Node.FitsRow(o.CLSNode) {
		return fmt.Errorf("rewire: CLS node feature has %d categorical and %d float values, the nodes have %d and %d",
			len(o.CLSNode.Cat), len(o.CLSNode.Float), g.Node.CatDim, g.Node.FloatDim)
	}
	if g.HasCLS || g.R != 0 {
		return fmt.Errorf("rewire: the graph is already rewired")
	}
	return nil
}

// Rewirer rewires graphs, reusing its workspace between calls. Not safe for concurrent use:
// keep one per goroutine.
type Rewirer struct {
	walks  posenc.Walks
	edgeOf []int32 // input edge u→v of the current source u, by v; -1 if none
	eidx   []int32 // input edge of every kept pair, -1 for added ones

	// Output arrays are carved from slabs shared by consecutive graphs: one allocation serves
	// many graphs, which matters when a whole dataset is rewired (a slab is freed once every
	// graph carved from it is unreachable).
	ints   []int32
	floats []float32
}

// slabSize is the number of values per slab; a graph larger than that gets its own.
const slabSize = 1 << 16

// take carves k values from *slab, starting a new slab when it runs short. An empty request
// gets an empty but present slice: the encoding of a graph without edges.
func take[T int32 | float32](slab *[]T, k int) []T {
	if k == 0 {
		return []T{}
	}
	if len(*slab) < k {
		*slab = make([]T, max(k, slabSize))
	}
	s := (*slab)[:k:k]
	*slab = (*slab)[k:]
	return s
}

// Rewire returns the r-hop graph of g with the encodings opt asks for. Edges are ordered by
// (source, destination); the CLS edges, if any, follow: c→v for every v, then v→c, then c→c
// when self-loops are on. Original edges keep their features; every other edge gets
// opt.EdgeConst. The shortest-path value of a CLS edge is R+1; its adjacency vector is zero.
// Node labels are copied, the CLS node's is -1 (ignored by losses and metrics); a Laplacian
// encoding already on g is copied, with a zero row for the CLS node.
func (rw *Rewirer) Rewire(g *data.Graph, opt Options) (*data.Graph, error) {
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("rewire: %w", err)
	}
	if err := opt.Validate(g); err != nil {
		return nil, err
	}
	w := &rw.walks
	w.SkipDist = !opt.SP
	if err := w.Reset(g.N, g.Src, g.Dst, opt.R, opt.Adj); err != nil {
		return nil, fmt.Errorf("rewire: %w", err)
	}
	m := rw.countPairs(g.N, opt.SelfLoops)
	out := rw.allocate(g, opt, m)
	rw.fillPairs(g, opt, out)
	copyNodes(out, g, opt)
	if opt.CLS {
		addCLS(out, g.N, m, opt)
	}
	return out, nil
}

// countPairs counts the kept pairs: every reached pair, less the self-pairs when self-loops are
// off (an original self-loop stays).
func (rw *Rewirer) countPairs(n int, selfLoops bool) int {
	w := &rw.walks
	m := 0
	for u := 0; u < n; u++ {
		for _, word := range w.Reach(u) {
			m += bits.OnesCount64(word)
		}
	}
	if !selfLoops {
		m -= n
		for u := 0; u < n; u++ {
			for _, v := range nbrs(w, u) {
				if int(v) == u {
					m++
				}
			}
		}
	}
	return m
}

func nbrs(w *posenc.Walks, u int) []int32 {
	nb, _ := w.OutEdges(u)
	return nb
}

// allocate makes the output graph with room for m pairs plus the CLS edges, its edge arrays
// carved from the slabs.
func (rw *Rewirer) allocate(g *data.Graph, opt Options, m int) *data.Graph {
	n, total := g.N, m
	if opt.CLS {
		total += 2 * n
		if opt.SelfLoops {
			total++
		}
	}
	cd, fd := g.Edge.CatDim, g.Edge.FloatDim
	spLen, adjDim := 0, 0
	if opt.SP {
		spLen = total
	}
	if opt.Adj {
		adjDim = opt.R
	}
	ints := take(&rw.ints, total*(2+cd)+spLen)
	floats := take(&rw.floats, total*(fd+adjDim))
	out := &data.Graph{N: n, R: opt.R, HasCLS: opt.CLS, Y: g.Y, Label: g.Label, AdjDim: adjDim}
	if opt.CLS {
		out.N++
	}
	take := func(k int) []int32 { s := ints[:k:k]; ints = ints[k:]; return s }
	takeF := func(k int) []float32 { s := floats[:k:k]; floats = floats[k:]; return s }
	out.Src, out.Dst = take(total), take(total)
	out.Edge = data.Features{CatDim: cd, Cat: take(total * cd), FloatDim: fd, Float: takeF(total * fd)}
	if opt.SP {
		out.SP = take(total)
	}
	if opt.Adj {
		out.Adj = takeF(total * adjDim)
	}
	return out
}

// fillPairs writes the kept pairs in (source, destination) order with their features and
// encodings, one column at a time: endpoints, distances and input-edge indices in one pass over
// the reach bitsets, then features, then walk counts, each a short loop.
func (rw *Rewirer) fillPairs(g *data.Graph, opt Options, out *data.Graph) {
	w := &rw.walks
	n := g.N
	m := len(out.Src)
	if opt.CLS {
		m -= 2 * n
		if opt.SelfLoops {
			m--
		}
	}
	if cap(rw.edgeOf) < n {
		rw.edgeOf = make([]int32, n)
	}
	edgeOf := rw.edgeOf[:n]
	for v := range edgeOf {
		edgeOf[v] = -1
	}
	if cap(rw.eidx) < m {
		rw.eidx = make([]int32, m)
	}
	eidx := rw.eidx[:m]
	src, dst := out.Src[:m], out.Dst[:m]
	i := 0
	for u := 0; u < n; u++ {
		nbr, eid := w.OutEdges(u)
		for j, v := range nbr {
			edgeOf[v] = eid[j]
		}
		var dist []int32
		if opt.SP {
			dist = w.DistRow(u)
		}
		for wi, word := range w.Reach(u) {
			for ; word != 0; word &= word - 1 {
				v := wi*64 + bits.TrailingZeros64(word)
				e := edgeOf[v]
				if v == u && !opt.SelfLoops && e < 0 {
					continue
				}
				src[i], dst[i], eidx[i] = int32(u), int32(v), e
				if opt.SP {
					out.SP[i] = dist[v]
				}
				i++
			}
		}
		for _, v := range nbr {
			edgeOf[v] = -1
		}
	}
	fillFeatures(&out.Edge, &g.Edge, eidx, opt.EdgeConst)
	if opt.Adj {
		fillAdj(out.Adj[:m*opt.R], src, dst, w.CountTable(), n, opt.R)
	}
}

// fillFeatures sets feature row i of out to row eidx[i] of in, or to c where eidx[i] < 0.
func fillFeatures(out, in *data.Features, eidx []int32, c data.Row) {
	cd, fd := in.CatDim, in.FloatDim
	switch {
	case cd == 1 && fd == 0: // molecules: one bond type
		cat, c0 := out.Cat[:len(eidx)], c.Cat[0]
		for i, e := range eidx {
			if e >= 0 {
				cat[i] = in.Cat[e]
			} else {
				cat[i] = c0
			}
		}
	case cd == 0 && fd == 1: // superpixels, SBMs: one weight
		fl, c0 := out.Float[:len(eidx)], c.Float[0]
		for i, e := range eidx {
			if e >= 0 {
				fl[i] = in.Float[e]
			} else {
				fl[i] = c0
			}
		}
	default:
		for i, e := range eidx {
			if e >= 0 {
				copyRow(out.Cat[i*cd:(i+1)*cd], in.Cat[int(e)*cd:(int(e)+1)*cd])
				copyRow(out.Float[i*fd:(i+1)*fd], in.Float[int(e)*fd:(int(e)+1)*fd])
			} else {
				copyRow(out.Cat[i*cd:(i+1)*cd], c.Cat)
				copyRow(out.Float[i*fd:(i+1)*fd], c.Float)
			}
		}
	}
}

// fillAdj writes the r walk counts of every pair (src[i], dst[i]) from the level-major count
// table.
func fillAdj(adj []float32, src, dst []int32, counts []float64, n, r int) {
	nn := n * n
	for i := range src {
		row := adj[i*r : (i+1)*r]
		at := int(src[i])*n + int(dst[i])
		for k := range row {
			row[k] = float32(counts[at])
			at += nn
		}
	}
}

// copyRow copies a feature row of a few values; a loop beats copy's call at these lengths.
func copyRow[T int32 | float32](dst, src []T) {
	for k := range dst {
		dst[k] = src[k]
	}
}

// copyNodes copies node features, node labels and any node encoding (Laplacian or random walk,
// whose CLS row is zero), appending the CLS node's row when there is one.
func copyNodes(out, g *data.Graph, opt Options) {
	out.Node = data.Features{CatDim: g.Node.CatDim, FloatDim: g.Node.FloatDim}
	out.Node.Cat = append(make([]int32, 0, len(g.Node.Cat)+len(opt.CLSNode.Cat)), g.Node.Cat...)
	out.Node.Float = append(make([]float32, 0, len(g.Node.Float)+len(opt.CLSNode.Float)), g.Node.Float...)
	if g.NodeLabel != nil {
		out.NodeLabel = append(make([]int32, 0, g.N+1), g.NodeLabel...)
	}
	if g.NodePE != nil {
		out.NodePEDim = g.NodePEDim
		out.NodePE = append(make([]float32, 0, (g.N+1)*g.NodePEDim), g.NodePE...)
	}
	if !opt.CLS {
		return
	}
	if !g.Node.Empty() {
		out.Node.AppendRow(opt.CLSNode)
	}
	if out.NodeLabel != nil {
		out.NodeLabel = append(out.NodeLabel, -1)
	}
	if out.NodePE != nil {
		out.NodePE = append(out.NodePE, make([]float32, g.NodePEDim)...)
	}
}

// addCLS fills edges from index m on with the CLS node's edges: c→v for all v, v→c for all v,
// and c→c with self-loops.
func addCLS(out *data.Graph, n, m int, opt Options) {
	c := int32(n)
	cd, fd := out.Edge.CatDim, out.Edge.FloatDim
	set := func(i int, s, d int32) {
		out.Src[i], out.Dst[i] = s, d
		copy(out.Edge.Cat[i*cd:(i+1)*cd], opt.EdgeConst.Cat)
		copy(out.Edge.Float[i*fd:(i+1)*fd], opt.EdgeConst.Float)
		if opt.SP {
			out.SP[i] = int32(opt.R + 1)
		}
		// Adjacency rows are already zero.
	}
	for v := int32(0); v < c; v++ {
		set(m+int(v), c, v)
		set(m+n+int(v), v, c)
	}
	if opt.SelfLoops {
		set(m+2*n, c, c)
	}
}

// Density returns |E'| / n² over the non-CLS nodes of a rewired graph: the number of its edges
// that do not touch the CLS node, self-loops included, over the squared number of original
// nodes (docs/protocol.md §"Density"). It is NaN for a graph without nodes.
func Density(g *data.Graph) float64 {
	n := g.OrigNodes()
	if n == 0 {
		return math.NaN()
	}
	m := g.NumEdges()
	if g.HasCLS {
		c := int32(g.N - 1)
		m = 0
		for i := range g.Src {
			if g.Src[i] != c && g.Dst[i] != c {
				m++
			}
		}
	}
	return float64(m) / float64(n*n)
}

// ParseRadii parses a list of hop radii such as "1-10", "1,2,4" or "1-3,6".
func ParseRadii(s string) ([]int, error) {
	var rs []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := parseRadius(lo)
		if err != nil {
			return nil, fmt.Errorf("radii %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = parseRadius(hi); err != nil {
				return nil, fmt.Errorf("radii %q: %w", s, err)
			}
			if b < a {
				return nil, fmt.Errorf("radii %q: range %d-%d runs backwards", s, a, b)
			}
		}
		for r := a; r <= b; r++ {
			rs = append(rs, r)
		}
	}
	return rs, nil
}

func parseRadius(s string) (int, error) {
	r, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	if r < 1 {
		return 0, fmt.Errorf("r = %d: the hop radius must be at least 1", r)
	}
	return r, nil
}

// CompleteR returns the smallest radius that makes every graph of gs complete on its reachable
// pairs: the largest node count minus one (at least 1). Use it for the "complete" setting, so
// that every graph of a dataset shares one radius and one encoding width.
func CompleteR(gs []*data.Graph) int {
	r := 1
	for _, g := range gs {
		if g.N-1 > r {
			r = g.N - 1
		}
	}
	return r
}
