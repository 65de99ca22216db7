package testgraphs

import (
	"math"
	"math/rand/v2"

	"github.com/rewiregnn/rewiregnn/data"
)

// Synthetic returns k small random connected graphs (4–8 nodes: a random tree plus one chord)
// shaped like spec's: its node and edge feature kinds and widths (read off the CLS node's row
// and the dataset's vocabularies) and a target of its task. Edges are stored in both directions
// with the same feature. The targets of a multi-target regression (Targets > 1) and the labels
// of a multi-label task are functions of the node types that a mean readout can learn (see
// MultiTargetSpec, MultiLabelSpec); a single regression target is noise.
func Synthetic(spec *data.Spec, k int, seed uint64) []*data.Graph {
	rng := rand.New(rand.NewPCG(seed, 7))
	gs := make([]*data.Graph, k)
	for i := range gs {
		n := 4 + rng.IntN(5)
		g := &data.Graph{N: n}
		for v := 1; v < n; v++ {
			u := int32(rng.IntN(v))
			g.Src, g.Dst = append(g.Src, u, int32(v)), append(g.Dst, int32(v), u)
		}
		if g.Src[2*(n-2)] != 0 { // a chord 0–(n−1) unless it is a tree edge
			g.Src, g.Dst = append(g.Src, 0, int32(n-1)), append(g.Dst, int32(n-1), 0)
		}
		g.Node = nodeFeatures(rng, spec, n)
		g.Edge = edgeFeatures(rng, spec, len(g.Src))
		switch spec.Task {
		case data.GraphRegression:
			if spec.Targets > 1 {
				g.Y = typeFractions(g.Node, spec.Targets, spec.NodeVocab)
				break
			}
			g.Y = []float32{float32(rng.NormFloat64())}
		case data.GraphMultiLabel:
			g.Y = typeFractions(g.Node, spec.Classes, spec.NodeVocab)
			for c, f := range g.Y {
				g.Y[c] = float32(btoi(f > 0))
				if rng.IntN(8) == 0 {
					g.Y[c] = float32(math.NaN()) // a missing label
				}
			}
		case data.NodeClass:
			g.NodeLabel = make([]int32, n)
			for v := range g.NodeLabel {
				g.NodeLabel[v] = int32(rng.IntN(spec.Classes))
			}
		default:
			g.Label = int32(rng.IntN(spec.Classes))
		}
		gs[i] = g
	}
	return gs
}

func nodeFeatures(rng *rand.Rand, spec *data.Spec, n int) data.Features {
	if cd := len(spec.CLSNode.Cat); cd > 0 {
		vocabs := spec.NodeColumnVocabs()
		f := data.Features{CatDim: cd, Cat: make([]int32, n*cd)}
		for j := range f.Cat {
			v := 1
			if len(vocabs) == cd {
				v = vocabs[j%cd]
			}
			f.Cat[j] = int32(rng.IntN(v))
		}
		return f
	}
	fd := len(spec.CLSNode.Float)
	f := data.Features{FloatDim: fd, Float: make([]float32, n*fd)}
	for j := range f.Float {
		f.Float[j] = rng.Float32()
	}
	return f
}

// edgeFeatures gives both directions of an edge (positions 2j, 2j+1) the same bond ids, each
// column's drawn from its vocabulary without C_e's id, or independent float values for float
// edge features.
func edgeFeatures(rng *rand.Rand, spec *data.Spec, m int) data.Features {
	if vocabs := spec.EdgeColumnVocabs(); len(vocabs) > 0 && len(vocabs) == len(spec.EdgeConst.Cat) {
		cd := len(vocabs)
		f := data.Features{CatDim: cd, Cat: make([]int32, m*cd)}
		for j := 0; j < m; j += 2 {
			for c, v := range vocabs {
				b := int32(rng.IntN(v - 1))
				if b >= spec.EdgeConst.Cat[c] {
					b++ // skip C_e's id
				}
				f.Cat[j*cd+c], f.Cat[(j+1)*cd+c] = b, b
			}
		}
		return f
	}
	f := data.Features{FloatDim: 1, Float: make([]float32, m)}
	for j := range f.Float {
		f.Float[j] = rng.Float32()
	}
	return f
}

// MultiLabelSpec is a synthetic multi-label task (data.GraphMultiLabel) with categorical node and
// edge features: label c of a graph is 1 when some node has type c mod the vocabulary, else 0,
// and each label is missing (NaN) with probability 1/8.
func MultiLabelSpec(classes int) *data.Spec {
	s := categoricalSpec("synthetic-multilabel")
	s.Task, s.Classes = data.GraphMultiLabel, classes
	return s
}

// MultiTargetSpec is a synthetic regression with targets values per graph: target t is the
// fraction of the graph's nodes of type t mod the vocabulary.
func MultiTargetSpec(targets int) *data.Spec {
	s := categoricalSpec("synthetic-multitarget")
	s.Task, s.Targets = data.GraphRegression, targets
	return s
}

// categoricalSpec is a ZINC-like spec: 6 node types, 3 bond types, a CLS node of its own type.
func categoricalSpec(name string) *data.Spec {
	const types = 6
	return &data.Spec{Name: name, NodeVocab: types, EdgeVocab: 3, EdgeConst: data.Row{Cat: []int32{0}},
		CLSNode: data.Row{Cat: []int32{types}}, Splits: []string{"train", "val", "test"}}
}

// typeFractions returns, for k = 0..cols−1, the fraction of the nodes of f (categorical, first
// column) whose type is k mod vocab.
func typeFractions(f data.Features, cols, vocab int) []float32 {
	n := len(f.Cat) / max(f.CatDim, 1)
	out := make([]float32, cols)
	for v := 0; v < n; v++ {
		t := int(f.Cat[v*f.CatDim])
		for k := range out {
			if t == k%max(vocab, 1) {
				out[k] += 1 / float32(n)
			}
		}
	}
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
