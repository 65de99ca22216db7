package data

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// NeighborsMatchMaxDepth is the deepest tree the paper's figure uses.
const NeighborsMatchMaxDepth = 9

// NeighborsMatchTree returns the blank tree of the NeighborsMatch task (Alon & Yahav 2021,
// tech-srl/bottleneck tasks/tree_dataset.py) for problem radius depth: a complete binary tree
// whose 2^(depth+1)−1 nodes are numbered in DFS pre-order (root 0, left subtree first), edges
// child→parent and no self-loops (rewiring adds them; docs/protocol.md §"NeighborsMatch"). It
// returns the node count, the edges and the leaves in DFS order.
func NeighborsMatchTree(depth int) (n int, src, dst []int32, leaves []int32) {
	n = 1<<(depth+1) - 1
	var walk func(cur, last int)
	walk = func(cur, last int) {
		if cur == last {
			leaves = append(leaves, int32(cur))
			return
		}
		left := cur + 1
		right := cur + 1 + (last-cur)/2
		src = append(src, int32(left), int32(right))
		dst = append(dst, int32(cur), int32(cur))
		walk(left, right-1)
		walk(right, last)
	}
	walk(0, n-1)
	return n, src, dst, leaves
}

// NeighborsMatch generates the dictionary-lookup dataset of depth 1..9 and splits it 80/20,
// stratified by label, deterministically for a seed. Each example is the blank tree with leaf ℓ
// (1-based, DFS order) carrying (key ℓ, value π(ℓ)), internal nodes (0, 0) and the root (κ, 0);
// the graph label is π(κ) ∈ 1..L. Permutations: for depth ≤ 3, min(1000, L!) distinct ones;
// deeper, min(1000, L!, ⌊32000/L⌋) independent random ones; each is paired with every key κ.
// Node features are two categorical ids (key, value) from a vocabulary of L+1; edge features
// are the constant 1.0. All examples of a depth share one read-only copy of the tree's Src, Dst
// and edge-feature arrays; copy them before modifying a graph in place.
func NeighborsMatch(depth int, seed uint64) (train, test []*Graph, err error) {
	if depth < 1 || depth > NeighborsMatchMaxDepth {
		return nil, nil, fmt.Errorf("neighborsmatch: depth %d outside 1..%d", depth, NeighborsMatchMaxDepth)
	}
	rng := streamRNG(seed, nameHash("neighborsmatch"), uint64(depth))
	n, src, dst, leaves := NeighborsMatchTree(depth)
	L := len(leaves)
	perms := neighborsPermutations(rng, depth, L)
	edgeFeat := make([]float32, len(src))
	for i := range edgeFeat {
		edgeFeat[i] = 1
	}
	var all []*Graph
	for _, perm := range perms {
		for key := 1; key <= L; key++ {
			g := &Graph{N: n, Src: src, Dst: dst, Edge: Features{FloatDim: 1, Float: edgeFeat}}
			g.Node = Features{CatDim: 2, Cat: make([]int32, 2*n)}
			g.Node.Cat[0] = int32(key)
			for l, v := range leaves {
				g.Node.Cat[2*v] = int32(l + 1)
				g.Node.Cat[2*v+1] = int32(perm[l])
			}
			g.Label = int32(perm[key-1])
			all = append(all, g)
		}
	}
	train, test = stratifiedSplit(rng, all, 0.8)
	return train, test, nil
}

// neighborsPermutations draws the value permutations of 1..L.
func neighborsPermutations(rng *rand.Rand, depth, L int) [][]int {
	count := 1000
	fact, big := 1, false
	for i := 2; i <= L; i++ {
		fact *= i
		if fact > 1<<20 {
			big = true
			break
		}
	}
	if !big {
		count = min(count, fact)
	}
	if depth > 3 {
		count = min(count, 32000/L)
	}
	perms := make([][]int, 0, count)
	if depth <= 3 {
		// distinct permutations, sampled without replacement
		seen := map[string]bool{}
		for len(perms) < count {
			p := permFrom1(rng, L)
			k := fmt.Sprint(p)
			if !seen[k] {
				seen[k] = true
				perms = append(perms, p)
			}
		}
		return perms
	}
	for len(perms) < count {
		perms = append(perms, permFrom1(rng, L))
	}
	return perms
}

func permFrom1(rng *rand.Rand, L int) []int {
	p := rng.Perm(L)
	for i := range p {
		p[i]++
	}
	return p
}

// stratifiedSplit shuffles gs and puts a fraction frac of every label class into the first
// part: class c with n_c examples gives round(frac·n_c) training examples, adjusted by one for
// the largest remainders so the training part has ⌊frac·len(gs)⌋ examples in all (sklearn's
// train_test_split rounding of the total).
func stratifiedSplit(rng *rand.Rand, gs []*Graph, frac float64) (train, test []*Graph) {
	byLabel := map[int32][]*Graph{}
	var labels []int32
	for _, g := range gs {
		if _, ok := byLabel[g.Label]; !ok {
			labels = append(labels, g.Label)
		}
		byLabel[g.Label] = append(byLabel[g.Label], g)
	}
	slices.Sort(labels)
	want := int(frac * float64(len(gs)))
	take := make([]int, len(labels))
	rem := make([]float64, len(labels))
	got := 0
	for i, l := range labels {
		x := frac * float64(len(byLabel[l]))
		take[i] = int(x)
		rem[i] = x - float64(take[i])
		got += take[i]
	}
	order := make([]int, len(labels))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case rem[a] > rem[b]:
			return -1
		case rem[a] < rem[b]:
			return 1
		}
		return 0
	})
	for _, i := range order {
		if got >= want {
			break
		}
		if take[i] < len(byLabel[labels[i]]) {
			take[i]++
			got++
		}
	}
	for i, l := range labels {
		cls := byLabel[l]
		rng.Shuffle(len(cls), func(a, b int) { cls[a], cls[b] = cls[b], cls[a] })
		train = append(train, cls[:take[i]]...)
		test = append(test, cls[take[i]:]...)
	}
	rng.Shuffle(len(train), func(a, b int) { train[a], train[b] = train[b], train[a] })
	rng.Shuffle(len(test), func(a, b int) { test[a], test[b] = test[b], test[a] })
	return train, test
}

// ErdosRenyiConfig describes the retrieval toy task of the paper's Erdős–Rényi figure
// (docs/protocol.md §"Erdos-Renyi task"): Graphs graphs G(N, P), graph i of class i, constant node
// features.
type ErdosRenyiConfig struct {
	Graphs int
	N      int
	P      float64
}

// DefaultErdosRenyi returns the paper's setting: 100 graphs G(20, 0.3).
func DefaultErdosRenyi() ErdosRenyiConfig { return ErdosRenyiConfig{Graphs: 100, N: 20, P: 0.3} }

// ErdosRenyi generates the graphs, deterministically for a seed. Each undirected edge is stored
// in both directions with edge feature 1.0; every node has categorical feature 0 (vocabulary
// 1); graph i has Label i. The task has a single split: the model is scored on training
// accuracy.
func ErdosRenyi(c ErdosRenyiConfig, seed uint64) ([]*Graph, error) {
	if c.Graphs < 1 || c.N < 1 || !prob(c.P) {
		return nil, fmt.Errorf("erdosrenyi: need at least one graph and one node and p in [0, 1], got %d graphs, n = %d, p = %g", c.Graphs, c.N, c.P)
	}
	gs := make([]*Graph, c.Graphs)
	for i := range gs {
		rng := streamRNG(seed, nameHash("erdosrenyi"), uint64(i))
		g := &Graph{N: c.N, Label: int32(i), Node: Features{CatDim: 1, Cat: make([]int32, c.N)}}
		adj := make([]bool, c.N*c.N)
		for u := 0; u < c.N; u++ {
			for v := u + 1; v < c.N; v++ {
				if rng.Float64() < c.P {
					adj[u*c.N+v], adj[v*c.N+u] = true, true
				}
			}
		}
		for u := 0; u < c.N; u++ {
			for v := 0; v < c.N; v++ {
				if adj[u*c.N+v] {
					g.Src = append(g.Src, int32(u))
					g.Dst = append(g.Dst, int32(v))
				}
			}
		}
		g.Edge = Features{FloatDim: 1, Float: make([]float32, len(g.Src))}
		for m := range g.Edge.Float {
			g.Edge.Float[m] = 1
		}
		gs[i] = g
	}
	return gs, nil
}
