package hops

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
)

// bfsDensity is the test's own density of a graph at radius r: the pairs (u, v) with a directed
// path u → v of at most r edges (u = v counted only with self-loops) over n², by breadth-first
// search from every node.
func bfsDensity(g *data.Graph, r int, selfLoops bool) float64 {
	out := make([][]int32, g.N)
	for i := range g.Src {
		out[g.Src[i]] = append(out[g.Src[i]], g.Dst[i])
	}
	pairs := 0
	for u := 0; u < g.N; u++ {
		dist := make([]int, g.N)
		for i := range dist {
			dist[i] = -1
		}
		dist[u] = 0
		queue := []int{u}
		for len(queue) > 0 {
			x := queue[0]
			queue = queue[1:]
			if dist[x] == r {
				continue
			}
			for _, y := range out[x] {
				if dist[y] < 0 {
					dist[y] = dist[x] + 1
					queue = append(queue, int(y))
				}
			}
		}
		for v, d := range dist {
			if d > 0 || (v == u && selfLoops) {
				pairs++
			}
		}
	}
	return float64(pairs) / float64(g.N*g.N)
}

// TestMeasureMatchesBFS: the densities of an undirected (Erdős–Rényi) and a directed
// (NeighborsMatch child→parent) dataset, with and without self-loops, against breadth-first
// search over the same graphs.
func TestMeasureMatchesBFS(t *testing.T) {
	for _, ds := range []string{"erdosrenyi", "neighborsmatch-3"} {
		for _, loops := range []bool{true, false} {
			src := Source{Dataset: ds, Split: "train", SelfLoops: loops, Seed: data.DefaultGenSeed, Subset: 40}
			d, err := Measure(src, 4, nil)
			if err != nil {
				t.Fatal(err)
			}
			gs, _, err := data.LoadFirst("", ds, "train", 40)
			if err != nil {
				t.Fatal(err)
			}
			gs = gs[:min(40, len(gs))]
			for r := 1; r <= len(d.Mean); r++ {
				want := 0.0
				for _, g := range gs {
					want += bfsDensity(g, r, loops)
				}
				want /= float64(len(gs))
				if got := d.At(r); math.Abs(got-want) > 1e-12 {
					t.Errorf("%s self-loops %t r = %d: density %.15f, breadth-first search %.15f", ds, loops, r, got, want)
				}
			}
			if d.Graphs != len(gs) {
				t.Errorf("%s: %d graphs counted, %d loaded", ds, d.Graphs, len(gs))
			}
		}
	}
}

// TestRule: the first radius strictly above one half.
func TestRule(t *testing.T) {
	for _, c := range []struct {
		mean []float64
		r    int
		ok   bool
	}{
		{[]float64{0.14, 0.27, 0.40, 0.52, 0.6}, 4, true},
		{[]float64{0.31, 1}, 2, true},
		{[]float64{0.5, 0.5}, 0, false}, // exceeds, not reaches
		{[]float64{0.7}, 1, true},
		{nil, 0, false},
	} {
		d := &Densities{Mean: c.mean}
		if r, ok := d.Rule(); r != c.r || ok != c.ok {
			t.Errorf("%v: rule gives %d, %t; want %d, %t", c.mean, r, ok, c.r, c.ok)
		}
	}
}

// TestSuggestStopsWhenSaturated: a NeighborsMatch tree (edges toward the root) never gets dense;
// once a radius adds no edge the rule gives up with the densities instead of looping to MaxR.
// Erdős–Rényi G(20, 0.3) graphs pass one half at r = 2.
func TestSuggestStopsWhenSaturated(t *testing.T) {
	src := Source{Dataset: "neighborsmatch-2", Split: "train", SelfLoops: true, Seed: data.DefaultGenSeed}
	r, d, err := Suggest(src, nil)
	if err == nil || r != 0 {
		t.Fatalf("suggested r = %d, err %v; want no suggestion", r, err)
	}
	// depth 2: 7 nodes, 6 tree edges + 7 self-loops at r = 1; + 4 grandchild→root at r = 2; nothing more
	if !d.Saturated || len(d.Mean) != 3 || math.Abs(d.Mean[0]-13.0/49) > 1e-12 || math.Abs(d.Mean[1]-17.0/49) > 1e-12 || d.Mean[2] != d.Mean[1] {
		t.Errorf("densities %v, saturated %t; want 13/49, 17/49, 17/49, saturated", d.Mean, d.Saturated)
	}
	for _, s := range []string{"no r has a mean density above 0.5", "r=2 0.347", "every graph reaches all it can", "dataset.r"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
	er := Source{Dataset: "erdosrenyi", Split: "train", SelfLoops: true, Seed: data.DefaultGenSeed}
	if r, d, err := Suggest(er, nil); err != nil || r != 2 || !(d.At(1) <= 0.5 && d.At(2) > 0.5) {
		t.Errorf("erdosrenyi: r = %d (%v), err %v; want 2", r, d.Mean, err)
	}
}

// TestWorkersDoNotChangeDensities: the means are summed in graph order, bit for bit the same for
// any number of rewiring goroutines.
func TestWorkersDoNotChangeDensities(t *testing.T) {
	var first []float64
	for _, w := range []int{1, 3, 8} {
		d, err := Measure(Source{Dataset: "erdosrenyi", Split: "train", SelfLoops: true, Seed: 7, Workers: w}, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = d.Mean
			continue
		}
		for i := range first {
			if d.Mean[i] != first[i] {
				t.Errorf("workers %d: r = %d density %v, with 1 worker %v", w, i+1, d.Mean[i], first[i])
			}
		}
	}
}

// TestCache: densities are written once, read back, extended to larger radii, and measured again
// when the file is damaged or belongs to another source.
func TestCache(t *testing.T) {
	dir := t.TempDir()
	src := Source{Dataset: "erdosrenyi", Split: "train", SelfLoops: true, Seed: data.DefaultGenSeed, CacheDir: dir}
	var log strings.Builder
	first, err := Measure(src, 2, &log)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, src.fileName())
	if !strings.Contains(log.String(), "wrote "+path) {
		t.Fatalf("first measurement: log %q does not say it wrote %s", log.String(), path)
	}
	log.Reset()
	again, err := Measure(src, 2, &log)
	if err != nil || !strings.Contains(log.String(), "read "+path) || !slices.Equal(again.Mean, first.Mean) {
		t.Fatalf("second measurement: %v, log %q, %v vs %v", err, log.String(), again.Mean, first.Mean)
	}
	log.Reset()
	longer, err := Measure(src, 4, &log)
	if err != nil || len(longer.Mean) != 4 || !slices.Equal(longer.Mean[:2], first.Mean) || !strings.Contains(log.String(), "wrote") {
		t.Fatalf("extended to r = 4: %v, %v, log %q", err, longer.Mean, log.String())
	}

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)-3], 0o600); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	fixed, err := Measure(src, 4, &log)
	if err != nil || !slices.Equal(fixed.Mean, longer.Mean) || !strings.Contains(log.String(), "measuring again") {
		t.Errorf("truncated file: %v, %v, log %q", err, fixed.Mean, log.String())
	}

	// a file of another source under this source's name is not used
	other := src
	other.Seed = 99
	otherDir := t.TempDir()
	other.CacheDir = otherDir
	if _, err := Measure(other, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(otherDir, other.fileName()), path); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	if _, err := Measure(src, 1, &log); err != nil || !strings.Contains(log.String(), "written for another source") {
		t.Errorf("another source's file: %v, log %q", err, log.String())
	}
}
