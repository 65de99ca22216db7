package rewire

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/data"
)

// Encoding names the edge encoding Recover reads.
type Encoding int

const (
	ByAny Encoding = iota // the adjacency encoding if present, else the shortest-path one
	BySP                  // edges whose shortest-path value is 1
	ByAdj                 // edges whose first adjacency power (A¹) is 1
)

// Recover returns the original graph of a rewired one, read from one of its encodings alone
// (the paper's lossless property): the edges whose shortest-path value is 1, or whose first
// adjacency power is 1. The CLS node and its edges are dropped; nodes, their
// features and labels, edge features and targets are kept. A self-loop of the original graph
// is recoverable from the adjacency encoding only: its shortest-path value is 0, like the
// self-loop that rewiring adds.
func Recover(g *data.Graph, by Encoding) (*data.Graph, error) {
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	isOrig, err := originalTest(g, by)
	if err != nil {
		return nil, err
	}
	n := g.OrigNodes()
	out := &data.Graph{N: n, Y: g.Y, Label: g.Label}
	out.Node = data.Features{CatDim: g.Node.CatDim, FloatDim: g.Node.FloatDim}
	out.Node.Cat = append([]int32(nil), g.Node.Cat[:n*g.Node.CatDim]...)
	out.Node.Float = append([]float32(nil), g.Node.Float[:n*g.Node.FloatDim]...)
	if g.NodeLabel != nil {
		out.NodeLabel = append([]int32(nil), g.NodeLabel[:n]...)
	}
	out.Edge = data.Features{CatDim: g.Edge.CatDim, FloatDim: g.Edge.FloatDim}
	for m := range g.Src {
		if int(g.Src[m]) >= n || int(g.Dst[m]) >= n || !isOrig(m) {
			continue
		}
		out.Src = append(out.Src, g.Src[m])
		out.Dst = append(out.Dst, g.Dst[m])
		if !g.Edge.Empty() {
			out.Edge.Append(&g.Edge, m)
		}
	}
	return out, nil
}

// originalTest returns the test that identifies original edges.
func originalTest(g *data.Graph, by Encoding) (func(m int) bool, error) {
	hasSP, hasAdj := g.SP != nil, g.Adj != nil && g.AdjDim >= 1
	if by == ByAny {
		by = BySP
		if hasAdj {
			by = ByAdj
		}
	}
	switch {
	case by == BySP && hasSP:
		return func(m int) bool { return g.SP[m] == 1 }, nil
	case by == ByAdj && hasAdj:
		return func(m int) bool { return g.Adj[m*g.AdjDim] == 1 }, nil
	case by == BySP:
		return nil, fmt.Errorf("recover: the graph carries no shortest-path encoding")
	case by == ByAdj:
		return nil, fmt.Errorf("recover: the graph carries no adjacency encoding")
	default:
		return nil, fmt.Errorf("recover: the graph carries neither a shortest-path nor an adjacency encoding")
	}
}

// CheckLossless recovers the original graph from every edge encoding the rewired graph carries
// and reports the first one that does not give back orig's nodes and edges exactly. The
// shortest-path encoding is skipped when orig has self-loops, which it cannot represent.
func CheckLossless(orig, rewired *data.Graph) error {
	var encs []Encoding
	if rewired.SP != nil && !hasSelfLoop(orig) {
		encs = append(encs, BySP)
	}
	if rewired.Adj != nil {
		encs = append(encs, ByAdj)
	}
	if len(encs) == 0 {
		return fmt.Errorf("lossless: the graph carries neither a shortest-path nor an adjacency encoding")
	}
	names := map[Encoding]string{BySP: "shortest-path", ByAdj: "adjacency"}
	for _, by := range encs {
		back, err := Recover(rewired, by)
		if err != nil {
			return err
		}
		if back.N != orig.N || !data.SameEdges(back, orig) {
			return fmt.Errorf("lossless: the %s encoding gives back %d nodes and %d edges that differ from the original %d and %d",
				names[by], back.N, back.NumEdges(), orig.N, orig.NumEdges())
		}
		for i := 0; i < orig.N; i++ {
			if !back.Node.RowEqual(i, &orig.Node, i) {
				return fmt.Errorf("lossless: node %d features differ after recovery", i)
			}
		}
	}
	return nil
}

func hasSelfLoop(g *data.Graph) bool {
	for m := range g.Src {
		if g.Src[m] == g.Dst[m] {
			return true
		}
	}
	return false
}
