package data_test

import (
	"math"
	"reflect"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
)

// checkSymmetricSimple fails unless every edge has its reverse, there are no self-loops or
// repeated edges, and edge features are all 1.0.
func checkSymmetricSimple(t *testing.T, g *data.Graph) {
	t.Helper()
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := g.CheckSimple(); err != nil {
		t.Fatal(err)
	}
	set := map[[2]int32]bool{}
	for m := range g.Src {
		if g.Src[m] == g.Dst[m] {
			t.Fatalf("self-loop at %d", g.Src[m])
		}
		set[[2]int32{g.Src[m], g.Dst[m]}] = true
		if g.Edge.Float[m] != 1 {
			t.Fatalf("edge feature %g, want 1", g.Edge.Float[m])
		}
	}
	for m := range g.Src {
		if !set[[2]int32{g.Dst[m], g.Src[m]}] {
			t.Fatalf("edge %d→%d has no reverse", g.Src[m], g.Dst[m])
		}
	}
}

func meanNodesEdges(gs []*data.Graph) (float64, float64) {
	var n, m float64
	for _, g := range gs {
		n += float64(g.N)
		m += float64(g.NumEdges())
	}
	return n / float64(len(gs)), m / float64(len(gs))
}

func TestClusterStatistics(t *testing.T) {
	c := data.ClusterConfig()
	c.Train = 200
	gs, err := data.GenerateSBM(c, "train", 41)
	if err != nil {
		t.Fatal(err)
	}
	nodes, edges := meanNodesEdges(gs)
	t.Logf("CLUSTER 200 graphs: %.2f nodes, %.2f directed edges (published 117.20 / 4301.72)", nodes, edges)
	if math.Abs(nodes-117.20)/117.20 > 0.03 || math.Abs(edges-4301.72)/4301.72 > 0.05 {
		t.Errorf("averages %.2f / %.2f too far from 117.20 / 4301.72", nodes, edges)
	}
	for _, g := range gs {
		checkSymmetricSimple(t, g)
		var perBlock [6]int
		var marked [7]int
		for v := 0; v < g.N; v++ {
			perBlock[g.NodeLabel[v]]++
			f := g.Node.Cat[v]
			marked[f]++
			if f > 0 && f != g.NodeLabel[v]+1 {
				t.Fatalf("node feature %d on a node of block %d", f, g.NodeLabel[v])
			}
		}
		for b, s := range perBlock {
			if s < 5 || s > 34 {
				t.Fatalf("block %d has %d nodes", b, s)
			}
			if marked[b+1] != 1 {
				t.Fatalf("block %d has %d marked nodes", b, marked[b+1])
			}
		}
	}
}

func TestPatternV1Statistics(t *testing.T) {
	c := data.PatternV1Config()
	c.Train, c.Patterns = 200, 10
	gs, err := data.GenerateSBM(c, "train", 41)
	if err != nil {
		t.Fatal(err)
	}
	nodes, edges := meanNodesEdges(gs)
	t.Logf("PATTERN 200 graphs: %.2f nodes, %.2f directed edges (published 117.47 / 4749.15)", nodes, edges)
	if math.Abs(nodes-117.47)/117.47 > 0.03 || math.Abs(edges-4749.15)/4749.15 > 0.05 {
		t.Errorf("averages %.2f / %.2f too far from 117.47 / 4749.15", nodes, edges)
	}
	for _, g := range gs {
		checkSymmetricSimple(t, g)
		ones := 0
		for v := 0; v < g.N; v++ {
			if f := g.Node.Cat[v]; f < 0 || f > 2 {
				t.Fatalf("feature %d outside 0..2", f)
			}
			ones += int(g.NodeLabel[v])
		}
		if ones != 20 {
			t.Fatalf("%d pattern nodes, want 20", ones)
		}
	}
	// Graphs of the same pattern instance share the pattern's features (multiset).
	count := func(g *data.Graph) [3]int {
		var c [3]int
		for v := 0; v < g.N; v++ {
			if g.NodeLabel[v] == 1 {
				c[g.Node.Cat[v]]++
			}
		}
		return c
	}
	if count(gs[0]) != count(gs[1]) {
		t.Errorf("graphs 0 and 1 should share a pattern: %v vs %v", count(gs[0]), count(gs[1]))
	}
}

func TestPatternStatistics(t *testing.T) {
	c := data.PatternConfig()
	c.Train, c.Patterns = 200, 20
	gs, err := data.GenerateSBM(c, "train", 41)
	if err != nil {
		t.Fatal(err)
	}
	nodes, edges := meanNodesEdges(gs)
	density := 0.0
	sizes := map[int]bool{}
	for _, g := range gs {
		checkSymmetricSimple(t, g)
		density += float64(g.NumEdges()+g.N) / float64(g.N*g.N)
		k := 0
		for _, l := range g.NodeLabel {
			k += int(l)
		}
		if k < 5 || k > 34 {
			t.Fatalf("%d pattern nodes", k)
		}
		sizes[k] = true
	}
	density /= float64(len(gs))
	t.Logf("PATTERN 200 graphs: %.2f nodes, %.2f directed edges, r=1 density %.3f (paper .43)", nodes, edges, density)
	if math.Abs(density-0.43) > 0.02 || math.Abs(nodes-117)/117 > 0.05 {
		t.Errorf("density %.3f, nodes %.2f: want about .43 and 117", density, nodes)
	}
	if len(sizes) < 5 {
		t.Errorf("only %d distinct pattern sizes", len(sizes))
	}
}

func TestSBMDeterministic(t *testing.T) {
	for _, c := range []data.SBMConfig{data.ClusterConfig(), data.PatternConfig(), data.PatternV1Config()} {
		c.Val, c.Test = 8, 8
		a, err := data.GenerateSBM(c, "val", 7)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := data.GenerateSBM(c, "val", 7)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: same seed gave different graphs", c.Name)
		}
		d, _ := data.GenerateSBM(c, "val", 8)
		if reflect.DeepEqual(a, d) {
			t.Errorf("%s: different seeds gave the same graphs", c.Name)
		}
		e, _ := data.GenerateSBM(c, "test", 7)
		if reflect.DeepEqual(a[0], e[0]) {
			t.Errorf("%s: val and test share graph 0", c.Name)
		}
	}
}

func TestSBMBadConfig(t *testing.T) {
	c := data.ClusterConfig()
	c.P = 1.5
	if _, err := data.GenerateSBM(c, "train", 1); err == nil {
		t.Error("p = 1.5 accepted")
	}
	c = data.ClusterConfig()
	if _, err := data.GenerateSBM(c, "dev", 1); err == nil {
		t.Error("unknown split accepted")
	}
}

// TestLoadFirstIsPrefix: the first n graphs of a generated split, made without the rest, are the
// whole split's first n (PATTERN's pattern assignment depends on the split's size, not on n).
func TestLoadFirstIsPrefix(t *testing.T) {
	for _, name := range []string{"cluster", "pattern"} {
		whole, _, err := data.LoadSplit("", name, "val")
		if err != nil {
			t.Fatal(err)
		}
		first, _, err := data.LoadFirst("", name, "val", 37)
		if err != nil {
			t.Fatal(err)
		}
		if len(first) != 37 || !reflect.DeepEqual(first, whole[:37]) {
			t.Errorf("%s: the first 37 graphs (%d) differ from the whole split's", name, len(first))
		}
		all, _, err := data.LoadFirst("", name, "val", 0)
		if err != nil || len(all) != len(whole) {
			t.Errorf("%s: LoadFirst with n 0 gave %d graphs (%v), want %d", name, len(all), err, len(whole))
		}
	}
}
