package data_test

import (
	"reflect"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
)

func TestNeighborsMatchTree(t *testing.T) {
	// depth 2: 0 → (1 → 2, 3), (4 → 5, 6)
	n, src, dst, leaves := data.NeighborsMatchTree(2)
	if n != 7 {
		t.Fatalf("n = %d", n)
	}
	wantSrc := []int32{1, 4, 2, 3, 5, 6}
	wantDst := []int32{0, 0, 1, 1, 4, 4}
	if !reflect.DeepEqual(src, wantSrc) || !reflect.DeepEqual(dst, wantDst) {
		t.Errorf("edges %v→%v, want %v→%v", src, dst, wantSrc, wantDst)
	}
	if !reflect.DeepEqual(leaves, []int32{2, 3, 5, 6}) {
		t.Errorf("leaves %v", leaves)
	}
	for d := 1; d <= data.NeighborsMatchMaxDepth; d++ {
		n, src, _, leaves := data.NeighborsMatchTree(d)
		if n != 1<<(d+1)-1 || len(src) != n-1 || len(leaves) != 1<<d {
			t.Errorf("depth %d: %d nodes, %d edges, %d leaves", d, n, len(src), len(leaves))
		}
	}
}

func TestNeighborsMatchDataset(t *testing.T) {
	for _, tc := range []struct{ depth, total int }{{1, 4}, {2, 96}, {3, 8000}, {4, 16 * 1000}, {5, 32 * 1000}, {6, 64 * 500}} {
		if testing.Short() && tc.depth > 3 {
			continue
		}
		train, test, err := data.NeighborsMatch(tc.depth, 41)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(train) + len(test); got != tc.total {
			t.Fatalf("depth %d: %d examples, want %d", tc.depth, got, tc.total)
		}
		if len(train) != tc.total*8/10 {
			t.Errorf("depth %d: %d training examples of %d", tc.depth, len(train), tc.total)
		}
		L := 1 << tc.depth
		trainCount := make([]int, L+1)
		allCount := make([]int, L+1)
		for _, g := range train {
			trainCount[g.Label]++
		}
		for _, g := range append(append([]*data.Graph{}, train...), test...) {
			allCount[g.Label]++
			key := g.Node.Cat[0]
			// the leaf with that key holds the label as its value
			found := false
			for v := 1; v < g.N; v++ {
				if g.Node.Cat[2*v] == key {
					found = g.Node.Cat[2*v+1] == g.Label
				}
			}
			if !found || g.Label < 1 || int(g.Label) > L {
				t.Fatalf("depth %d: label %d does not match key %d", tc.depth, g.Label, key)
			}
		}
		for c := 1; c <= L; c++ {
			if d := float64(trainCount[c]) - 0.8*float64(allCount[c]); d > 1 || d < -1 {
				t.Errorf("depth %d class %d: %d of %d in train", tc.depth, c, trainCount[c], allCount[c])
			}
		}
	}
	a, b, _ := data.NeighborsMatch(2, 5)
	c, d, _ := data.NeighborsMatch(2, 5)
	if !reflect.DeepEqual(a, c) || !reflect.DeepEqual(b, d) {
		t.Error("same seed, different datasets")
	}
	if _, _, err := data.NeighborsMatch(10, 1); err == nil {
		t.Error("depth 10 accepted")
	}
}

func TestErdosRenyi(t *testing.T) {
	gs, err := data.ErdosRenyi(data.DefaultErdosRenyi(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 100 {
		t.Fatalf("%d graphs", len(gs))
	}
	edges := 0
	for i, g := range gs {
		checkSymmetricSimple(t, g)
		if g.Label != int32(i) || g.N != 20 {
			t.Fatalf("graph %d: label %d, %d nodes", i, g.Label, g.N)
		}
		edges += g.NumEdges()
	}
	// expected 2·190·0.3 = 114 directed edges per graph
	if mean := float64(edges) / 100; mean < 104 || mean > 124 {
		t.Errorf("mean %.1f directed edges, want about 114", mean)
	}
	again, _ := data.ErdosRenyi(data.DefaultErdosRenyi(), 3)
	if !reflect.DeepEqual(gs, again) {
		t.Error("not deterministic")
	}
	if _, err := data.ErdosRenyi(data.ErdosRenyiConfig{Graphs: 1, N: 3, P: 2}, 1); err == nil {
		t.Error("p = 2 accepted")
	}
}
