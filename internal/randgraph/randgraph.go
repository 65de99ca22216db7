// Package randgraph makes random graphs for tests: directed or undirected, with isolated nodes,
// several components, self-loops if asked, and categorical and float features.
package randgraph

import (
	"math/rand/v2"

	"github.com/rewiregnn/rewiregnn/data"
)

// Options says what kind of random graph to make.
type Options struct {
	N          int     // nodes
	P          float64 // probability of each (unordered, or ordered if Directed) pair
	Directed   bool
	SelfLoops  bool // allow u→u edges in the original graph
	EdgeVocab  int  // categorical edge features drawn from 1..EdgeVocab-1 (0 = none)
	FloatEdges bool // one float edge feature in (0, 1]
}

// New returns a random simple graph (no repeated directed edge). Node features are one
// categorical id per node; edge features as asked.
func New(rng *rand.Rand, o Options) *data.Graph {
	g := &data.Graph{N: o.N, Y: []float32{rng.Float32()}}
	g.Node = data.Features{CatDim: 1, Cat: make([]int32, o.N)}
	for i := range g.Node.Cat {
		g.Node.Cat[i] = int32(rng.IntN(5))
	}
	if o.EdgeVocab > 0 {
		g.Edge.CatDim = 1
	}
	if o.FloatEdges {
		g.Edge.FloatDim = 1
	}
	add := func(u, v int, cat int32, w float32) {
		g.Src = append(g.Src, int32(u))
		g.Dst = append(g.Dst, int32(v))
		if o.EdgeVocab > 0 {
			g.Edge.Cat = append(g.Edge.Cat, cat)
		}
		if o.FloatEdges {
			g.Edge.Float = append(g.Edge.Float, w)
		}
	}
	for u := 0; u < o.N; u++ {
		lo := u + 1
		if o.Directed {
			lo = 0
		}
		if o.SelfLoops {
			if rng.Float64() < o.P {
				add(u, u, feature(rng, o), 1-rng.Float32())
			}
		}
		for v := lo; v < o.N; v++ {
			if u == v || rng.Float64() >= o.P {
				continue
			}
			cat, w := feature(rng, o), 1-rng.Float32()
			add(u, v, cat, w)
			if !o.Directed {
				add(v, u, cat, w)
			}
		}
	}
	// Shuffle the edge order so that nothing relies on sorted input.
	perm := rng.Perm(len(g.Src))
	shuffled := &data.Graph{N: g.N, Node: g.Node, Y: g.Y}
	shuffled.Edge = data.Features{CatDim: g.Edge.CatDim, FloatDim: g.Edge.FloatDim}
	for _, m := range perm {
		shuffled.Src = append(shuffled.Src, g.Src[m])
		shuffled.Dst = append(shuffled.Dst, g.Dst[m])
		shuffled.Edge.Append(&g.Edge, m)
	}
	return shuffled
}

func feature(rng *rand.Rand, o Options) int32 {
	if o.EdgeVocab <= 1 {
		return 0
	}
	return int32(1 + rng.IntN(o.EdgeVocab-1))
}

// Suite returns a varied set of graphs: empty, single node, isolated nodes, disconnected,
// sparse and dense, directed and undirected.
func Suite(seed uint64) []*data.Graph {
	rng := rand.New(rand.NewPCG(seed, 7))
	gs := []*data.Graph{
		New(rng, Options{N: 0, EdgeVocab: 4}),
		New(rng, Options{N: 1, EdgeVocab: 4}),
		New(rng, Options{N: 1, P: 1, SelfLoops: true, Directed: true, EdgeVocab: 4}),
		New(rng, Options{N: 5, P: 0, EdgeVocab: 4}), // only isolated nodes
	}
	for i := 0; i < 40; i++ {
		n := 2 + rng.IntN(30)
		p := []float64{0.02, 0.08, 0.15, 0.3, 0.7}[i%5]
		gs = append(gs, New(rng, Options{N: n, P: p, Directed: i%2 == 1, EdgeVocab: 4, FloatEdges: i%3 == 0}))
	}
	// Larger graphs, so that reachability bitsets span several 64-bit words.
	for _, n := range []int{65, 130} {
		gs = append(gs, New(rng, Options{N: n, P: 2.5 / float64(n), EdgeVocab: 4}))
		gs = append(gs, New(rng, Options{N: n, P: 1.5 / float64(n), Directed: true, EdgeVocab: 4}))
	}
	return gs
}
