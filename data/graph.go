// Package data provides the graph and batch types every stage of the pipeline consumes, and the
// loaders of the benchmark files.
//
// Every edge is directed: undirected datasets store each undirected edge as two directed edges.
// Messages flow Src → Dst.
package data

import (
	"errors"
	"fmt"
	"sort"
)

// Features holds the features of a set of rows (the nodes or the edges of a graph): CatDim
// categorical ids and FloatDim float values per row, stored row-major.
type Features struct {
	CatDim   int
	Cat      []int32
	FloatDim int
	Float    []float32
}

// Row is the feature vector of a single node or edge, e.g. the constant C_e given to edges that
// rewiring adds, or the feature C_v of a CLS node.
type Row struct {
	Cat   []int32
	Float []float32
}

// Rows reports the number of rows the features describe, or an error if the categorical and
// float parts disagree or are not whole rows.
func (f *Features) Rows() (int, error) {
	rows := -1
	if f.CatDim < 0 || f.FloatDim < 0 {
		return 0, fmt.Errorf("negative feature width (cat %d, float %d)", f.CatDim, f.FloatDim)
	}
	if f.CatDim > 0 {
		if len(f.Cat)%f.CatDim != 0 {
			return 0, fmt.Errorf("%d categorical values is not a multiple of width %d", len(f.Cat), f.CatDim)
		}
		rows = len(f.Cat) / f.CatDim
	} else if len(f.Cat) != 0 {
		return 0, fmt.Errorf("%d categorical values with width 0", len(f.Cat))
	}
	if f.FloatDim > 0 {
		if len(f.Float)%f.FloatDim != 0 {
			return 0, fmt.Errorf("%d float values is not a multiple of width %d", len(f.Float), f.FloatDim)
		}
		n := len(f.Float) / f.FloatDim
		if rows >= 0 && n != rows {
			return 0, fmt.Errorf("%d categorical rows but %d float rows", rows, n)
		}
		rows = n
	} else if len(f.Float) != 0 {
		return 0, fmt.Errorf("%d float values with width 0", len(f.Float))
	}
	return rows, nil
}

// Empty reports whether the features have no columns at all.
func (f *Features) Empty() bool { return f.CatDim == 0 && f.FloatDim == 0 }

// Append adds row i of src to f. Widths must match.
func (f *Features) Append(src *Features, i int) {
	f.Cat = append(f.Cat, src.Cat[i*src.CatDim:(i+1)*src.CatDim]...)
	f.Float = append(f.Float, src.Float[i*src.FloatDim:(i+1)*src.FloatDim]...)
}

// AppendRow adds r to f. Its widths must match f's.
func (f *Features) AppendRow(r Row) {
	f.Cat = append(f.Cat, r.Cat...)
	f.Float = append(f.Float, r.Float...)
}

// RowEqual reports whether row i of f equals row j of g.
func (f *Features) RowEqual(i int, g *Features, j int) bool {
	if f.CatDim != g.CatDim || f.FloatDim != g.FloatDim {
		return false
	}
	for k := 0; k < f.CatDim; k++ {
		if f.Cat[i*f.CatDim+k] != g.Cat[j*g.CatDim+k] {
			return false
		}
	}
	for k := 0; k < f.FloatDim; k++ {
		if f.Float[i*f.FloatDim+k] != g.Float[j*g.FloatDim+k] {
			return false
		}
	}
	return true
}

// FitsRow reports whether r has the widths of f.
func (f *Features) FitsRow(r Row) bool {
	return len(r.Cat) == f.CatDim && len(r.Float) == f.FloatDim
}

// Graph is one graph: N nodes, directed edges Src[m] → Dst[m], node and edge features, targets,
// and the positional encodings attached by rewiring (rewire, posenc).
type Graph struct {
	N        int
	Src, Dst []int32
	Node     Features // N rows
	Edge     Features // len(Src) rows

	// Targets. Which of them a dataset uses is part of the dataset's description.
	Y         []float32 // graph-level regression target(s)
	Label     int32     // graph-level class
	NodeLabel []int32   // node-level class per node (nil for graph-level tasks)

	// Set by rewiring.
	HasCLS bool      // the last node (N-1) is a CLS node joined to every other node
	R      int       // the hop radius the graph was rewired with (0: not rewired)
	SP     []int32   // shortest-path encoding per edge (nil if not computed)
	AdjDim int       // width of Adj
	Adj    []float32 // adjacency-power encoding per edge, AdjDim values each (nil if not computed)
	// NodePE is the node encoding computed on the original graph, NodePEDim values per node
	// (the CLS node's row zero): the Laplacian eigenvectors (encoding lp) or the random-walk
	// return probabilities (rwse). Which one it is, the preprocessing key and the run's config
	// say; the batches and the model's input layer treat both alike, but for the Laplacian
	// sign flip, which only lp gets.
	NodePEDim int
	NodePE    []float32
}

// ApplySigns multiplies column j of the row-major encoding lap (len(signs) columns, the layout
// of Graph.NodePE) by signs[j]: the Laplacian encoding's sign flip, whose signs posenc.DrawSigns
// draws. It lives here, with the layout, so that the model side (nn) and the preprocessing side
// (posenc) both use it without importing each other.
func ApplySigns(lap, signs []float32) {
	q := len(signs)
	for i := range lap {
		lap[i] *= signs[i%q]
	}
}

// NumEdges returns the number of directed edges.
func (g *Graph) NumEdges() int { return len(g.Src) }

// OrigNodes returns the number of nodes that are not the CLS node.
func (g *Graph) OrigNodes() int {
	if g.HasCLS {
		return g.N - 1
	}
	return g.N
}

// ErrInvalid is wrapped by every error Validate returns.
var ErrInvalid = errors.New("invalid graph")

// Validate checks that every array has the length its counts imply and that every edge joins
// two existing nodes.
func (g *Graph) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
	}
	if g.N < 0 {
		return bad("negative node count %d", g.N)
	}
	if len(g.Src) != len(g.Dst) {
		return bad("%d edge sources but %d destinations", len(g.Src), len(g.Dst))
	}
	for m := range g.Src {
		if s, d := g.Src[m], g.Dst[m]; s < 0 || int(s) >= g.N || d < 0 || int(d) >= g.N {
			return bad("edge %d (%d→%d) points outside the %d nodes", m, s, d, g.N)
		}
	}
	if !g.Node.Empty() {
		rows, err := g.Node.Rows()
		if err != nil {
			return bad("node features: %v", err)
		}
		if rows != g.N {
			return bad("node features have %d rows for %d nodes", rows, g.N)
		}
	}
	if !g.Edge.Empty() {
		rows, err := g.Edge.Rows()
		if err != nil {
			return bad("edge features: %v", err)
		}
		if rows != len(g.Src) {
			return bad("edge features have %d rows for %d edges", rows, len(g.Src))
		}
	}
	if g.NodeLabel != nil && len(g.NodeLabel) != g.N {
		return bad("%d node labels for %d nodes", len(g.NodeLabel), g.N)
	}
	if g.SP != nil && len(g.SP) != len(g.Src) {
		return bad("%d shortest-path values for %d edges", len(g.SP), len(g.Src))
	}
	if g.Adj != nil && len(g.Adj) != len(g.Src)*g.AdjDim {
		return bad("%d adjacency values for %d edges of width %d", len(g.Adj), len(g.Src), g.AdjDim)
	}
	if g.NodePE != nil && len(g.NodePE) != g.N*g.NodePEDim {
		return bad("%d node-encoding values for %d nodes of width %d", len(g.NodePE), g.N, g.NodePEDim)
	}
	if g.HasCLS && g.N < 1 {
		return bad("CLS flag set on an empty graph")
	}
	return nil
}

// CheckSimple returns an error naming the first repeated directed edge, if any. Rewiring
// needs each ordered pair at most once, since the rewired graph has one edge per pair.
func (g *Graph) CheckSimple() error {
	seen := make(map[int64]int, len(g.Src))
	for m := range g.Src {
		key := int64(g.Src[m])<<32 | int64(uint32(g.Dst[m]))
		if prev, ok := seen[key]; ok {
			return fmt.Errorf("%w: edges %d and %d both join %d→%d", ErrInvalid, prev, m, g.Src[m], g.Dst[m])
		}
		seen[key] = m
	}
	return nil
}

// SameEdges reports whether a and b have the same directed edges with the same features,
// in any order.
func SameEdges(a, b *Graph) bool {
	if a.NumEdges() != b.NumEdges() || a.Edge.CatDim != b.Edge.CatDim || a.Edge.FloatDim != b.Edge.FloatDim {
		return false
	}
	ia, ib := a.edgeOrder(), b.edgeOrder()
	for k := range ia {
		i, j := ia[k], ib[k]
		if a.Src[i] != b.Src[j] || a.Dst[i] != b.Dst[j] || !a.Edge.RowEqual(i, &b.Edge, j) {
			return false
		}
	}
	return true
}

// edgeOrder returns the edge indices sorted by (source, destination).
func (g *Graph) edgeOrder() []int {
	idx := make([]int, g.NumEdges())
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(x, y int) bool {
		i, j := idx[x], idx[y]
		if g.Src[i] != g.Src[j] {
			return g.Src[i] < g.Src[j]
		}
		return g.Dst[i] < g.Dst[j]
	})
	return idx
}
