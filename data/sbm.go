package data

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
)

// SBMConfig describes a stochastic-block-model node-classification dataset in the manner of the
// benchmarking-gnns generation notebooks (data/SBMs/generate_SBM_{CLUSTER,PATTERN}.ipynb).
// Block sizes are drawn uniformly from SizeMin..SizeMax (both inclusive; numpy's
// randint(5, 35) gives 5..34). Every unordered pair inside a block is joined with probability P,
// every pair across blocks with probability Q; each undirected edge is stored in both directions
// with edge feature 1.0.
//
// For PATTERN (PatternSize > 0) the notebook plants one of Patterns fixed random graphs of
// PatternSize nodes (internal edge probability PatternP, node features fixed per pattern), joins
// every pattern node to every block node with probability PatternQ, draws block-node features
// uniformly from 0..Vocab-1, and labels pattern nodes 1, the others 0. For CLUSTER every node has
// feature 0 except one random node per block carrying block id + 1; labels are block ids.
type SBMConfig struct {
	Name             string
	Blocks           int
	SizeMin, SizeMax int
	P, Q             float64

	// PATTERN only. Each pattern instance has PatternSize nodes, or, when PatternSizeMax >
	// PatternSize, a size drawn uniformly from PatternSize..PatternSizeMax per instance.
	PatternSize    int
	PatternSizeMax int
	PatternP       float64
	PatternQ       float64
	Vocab          int
	Patterns       int

	Train, Val, Test int
}

// ClusterConfig returns the CLUSTER recipe with the benchmark's split sizes (10000/1000/1000):
// 6 blocks of 5..34 nodes, p = 0.55, q = 0.25.
func ClusterConfig() SBMConfig {
	return SBMConfig{Name: "cluster", Blocks: 6, SizeMin: 5, SizeMax: 34, P: 0.55, Q: 0.25,
		Train: 10000, Val: 1000, Test: 1000}
}

// PatternConfig returns the PATTERN recipe of docs/protocol.md §"PATTERN", with the benchmark's
// split sizes (10000/2000/2000): 5 blocks of 5..34 nodes, p = 0.5, q = 0.35, 100 pattern instances
// of 5..34 nodes with internal probability 0.5, pattern↔block probability 0.5, vocabulary 3. It is
// the later version of the benchmark's notebook (marked "v4" there, commit c57794a). It gives about
// 117 nodes and 5870 directed edges per graph and an r = 1 density of about .43, the density the
// rewiring paper reports for PATTERN, which is why it is the default.
func PatternConfig() SBMConfig {
	return SBMConfig{Name: "pattern", Blocks: 5, SizeMin: 5, SizeMax: 34, P: 0.5, Q: 0.35,
		PatternSize: 5, PatternSizeMax: 34, PatternP: 0.5, PatternQ: 0.5, Vocab: 3, Patterns: 100,
		Train: 10000, Val: 2000, Test: 2000}
}

// PatternV1Config returns the first version of the notebook's PATTERN recipe: q = 0.2 and
// pattern instances of 20 nodes. It reproduces the statistics published with the benchmark
// (117.47 nodes and 4749.15 directed edges per graph) but gives an r = 1 density of about .35,
// not the paper's .43.
func PatternV1Config() SBMConfig {
	c := PatternConfig()
	c.Name = "pattern-v1"
	c.Q = 0.2
	c.PatternSize, c.PatternSizeMax = 20, 0
	return c
}

// Validate reports a configuration that cannot be generated.
func (c *SBMConfig) Validate() error {
	bad := func(f string, a ...any) error { return fmt.Errorf("%s config: %s", c.Name, fmt.Sprintf(f, a...)) }
	switch {
	case c.Blocks < 1:
		return bad("blocks = %d, need at least 1", c.Blocks)
	case c.SizeMin < 1 || c.SizeMax < c.SizeMin:
		return bad("block sizes %d..%d are not a valid range", c.SizeMin, c.SizeMax)
	case !prob(c.P) || !prob(c.Q):
		return bad("p = %g, q = %g must lie in [0, 1]", c.P, c.Q)
	case c.Train < 0 || c.Val < 0 || c.Test < 0:
		return bad("negative split size (%d/%d/%d)", c.Train, c.Val, c.Test)
	}
	if c.PatternSize > 0 {
		switch {
		case !prob(c.PatternP) || !prob(c.PatternQ):
			return bad("pattern probabilities %g, %g must lie in [0, 1]", c.PatternP, c.PatternQ)
		case c.Vocab < 1:
			return bad("vocabulary %d, need at least 1", c.Vocab)
		case c.Patterns < 1:
			return bad("%d pattern instances, need at least 1", c.Patterns)
		case c.PatternSizeMax != 0 && c.PatternSizeMax < c.PatternSize:
			return bad("pattern sizes %d..%d are not a valid range", c.PatternSize, c.PatternSizeMax)
		}
	}
	return nil
}

func prob(p float64) bool { return p >= 0 && p <= 1 }

// SplitSize returns the number of graphs of a split.
func (c *SBMConfig) SplitSize(split string) (int, error) {
	switch split {
	case "train":
		return c.Train, nil
	case "val":
		return c.Val, nil
	case "test":
		return c.Test, nil
	}
	return 0, fmt.Errorf("%s: unknown split %q (have train, val, test)", c.Name, split)
}

// splitIndex numbers the splits for seeding.
func splitIndex(split string) uint64 {
	switch split {
	case "train":
		return 1
	case "val":
		return 2
	case "test":
		return 3
	}
	return 99
}

// mix64 is the splitmix64 finaliser, used to derive independent PCG streams.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// streamRNG returns a PCG generator determined by seed and the parts (dataset, split, index…),
// so every graph can be generated independently, in any order and in parallel.
func streamRNG(seed uint64, parts ...uint64) *rand.Rand {
	h := mix64(seed)
	for _, p := range parts {
		h = mix64(h ^ p)
	}
	return rand.New(rand.NewPCG(h, mix64(h^0x5851f42d4c957f2d)))
}

// nameHash turns a dataset name into a seed part.
func nameHash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// GenerateSBM generates one split ("train", "val" or "test") of the dataset c describes,
// deterministically for a seed: graph i depends only on (seed, name, split, i), so the result does
// not depend on the number of goroutines.
func GenerateSBM(c SBMConfig, split string, seed uint64) ([]*Graph, error) {
	return generateSBM(c, split, seed, 0)
}

// generateSBM is GenerateSBM returning only the split's first limit graphs (all when limit ≤ 0),
// the same graphs as the whole split's first ones, without generating the rest.
func generateSBM(c SBMConfig, split string, seed uint64, limit int) ([]*Graph, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	n, err := c.SplitSize(split)
	if err != nil {
		return nil, err
	}
	keep := n
	if limit > 0 {
		keep = min(n, limit)
	}
	var patterns []sbmPattern
	if c.PatternSize > 0 {
		patterns = make([]sbmPattern, c.Patterns)
		for k := range patterns {
			patterns[k] = newPattern(streamRNG(seed, nameHash(c.Name), 0, uint64(k)), c)
		}
	}
	gs := make([]*Graph, keep)
	parallelFor(keep, func(i int) {
		rng := streamRNG(seed, nameHash(c.Name), splitIndex(split), uint64(i))
		if patterns != nil {
			// The notebook generates the graphs of each pattern instance consecutively.
			gs[i] = patternGraph(rng, c, &patterns[i*c.Patterns/max(n, 1)])
		} else {
			gs[i] = clusterGraph(rng, c)
		}
	})
	return gs, nil
}

// parallelFor runs f(0..n-1) on all cores.
func parallelFor(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), max(n, 1))
	var wg sync.WaitGroup
	next := make(chan int, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// blockModel draws the block sizes and the symmetric adjacency of the plain SBM. It returns the
// block of every node and the adjacency as a dense boolean matrix of side total.
func blockModel(rng *rand.Rand, c SBMConfig, extra int) (block []int32, adj []bool, total int) {
	for b := 0; b < c.Blocks; b++ {
		size := c.SizeMin + rng.IntN(c.SizeMax-c.SizeMin+1)
		for j := 0; j < size; j++ {
			block = append(block, int32(b))
		}
	}
	n := len(block)
	total = n + extra
	adj = make([]bool, total*total)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			p := c.Q
			if block[i] == block[j] {
				p = c.P
			}
			if rng.Float64() < p {
				adj[i*total+j], adj[j*total+i] = true, true
			}
		}
	}
	return block, adj, total
}

// sbmGraph builds the graph from a dense adjacency after relabelling node v as perm-inverse:
// new node i is old node perm[i] (numpy's W[idx][:, idx]).
func sbmGraph(adj []bool, total int, perm []int, feat, label []int32) *Graph {
	g := &Graph{N: total, Node: Features{CatDim: 1, Cat: make([]int32, total)}, NodeLabel: make([]int32, total)}
	for i := 0; i < total; i++ {
		g.Node.Cat[i] = feat[perm[i]]
		g.NodeLabel[i] = label[perm[i]]
		row := perm[i] * total
		for j := 0; j < total; j++ {
			if adj[row+perm[j]] {
				g.Src = append(g.Src, int32(i))
				g.Dst = append(g.Dst, int32(j))
			}
		}
	}
	g.Edge = Features{FloatDim: 1, Float: make([]float32, len(g.Src))}
	for m := range g.Edge.Float {
		g.Edge.Float[m] = 1
	}
	return g
}

func clusterGraph(rng *rand.Rand, c SBMConfig) *Graph {
	block, adj, n := blockModel(rng, c, 0)
	perm := rng.Perm(n)
	// In shuffled order, one random node of each block carries block id + 1.
	feat := make([]int32, n)
	members := make([][]int, c.Blocks)
	for i := 0; i < n; i++ {
		b := block[perm[i]]
		members[b] = append(members[b], perm[i])
	}
	for b, ms := range members {
		feat[ms[rng.IntN(len(ms))]] = int32(b + 1)
	}
	return sbmGraph(adj, n, perm, feat, block)
}

// sbmPattern is one planted pattern instance: its adjacency and node features.
type sbmPattern struct {
	adj  []bool
	feat []int32
}

func newPattern(rng *rand.Rand, c SBMConfig) sbmPattern {
	k := c.PatternSize
	if c.PatternSizeMax > k {
		k += rng.IntN(c.PatternSizeMax - k + 1)
	}
	p := sbmPattern{adj: make([]bool, k*k), feat: make([]int32, k)}
	for i := 0; i < k; i++ {
		for j := i + 1; j < k; j++ {
			if rng.Float64() < c.PatternP {
				p.adj[i*k+j], p.adj[j*k+i] = true, true
			}
		}
	}
	for i := range p.feat {
		p.feat[i] = int32(rng.IntN(c.Vocab))
	}
	return p
}

func patternGraph(rng *rand.Rand, c SBMConfig, pat *sbmPattern) *Graph {
	k := len(pat.feat)
	_, adj, total := blockModel(rng, c, k)
	n := total - k
	feat := make([]int32, total)
	label := make([]int32, total)
	for i := 0; i < n; i++ {
		feat[i] = int32(rng.IntN(c.Vocab))
	}
	for i := 0; i < k; i++ {
		for j := 0; j < n; j++ {
			if rng.Float64() < c.PatternQ {
				adj[(n+i)*total+j], adj[j*total+n+i] = true, true
			}
		}
		for j := 0; j < k; j++ {
			adj[(n+i)*total+n+j] = pat.adj[i*k+j]
		}
		feat[n+i] = pat.feat[i]
		label[n+i] = 1
	}
	return sbmGraph(adj, total, rng.Perm(total), feat, label)
}
