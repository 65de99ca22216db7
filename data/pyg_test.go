package data

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// pygDir is a data folder holding the four public distributions in miniature, written by
// scripts/pyfixtures/make.py with the graphs they encode in expected.json.
const pygDir = "testdata/pyg"

type pygGraph struct {
	X        []int32   `json:"x"`
	Node     []float32 `json:"node"`
	Src      []int32   `json:"src"`
	Dst      []int32   `json:"dst"`
	EdgeAttr []float64 `json:"edge_attr"`
	Y        float32   `json:"y"`
	Label    int32     `json:"label"`
}

// checkFixtures reads every split of the named datasets of the fixture folder through
// LoadSplit, as a run does, checks their source is the public distribution and their graph
// counts those of want, and calls check on each graph with the graph the fixture script wrote.
func checkFixtures[G any](t *testing.T, want map[string]map[string][]G, names []string, check func(label string, i int, g *Graph, w G, spec *Spec)) {
	t.Helper()
	for _, name := range names {
		if got := SourceOf(pygDir, name); got != SourcePyG {
			t.Fatalf("%s: source %q, want pyg", name, got)
		}
		for _, split := range []string{"train", "val", "test"} {
			gs, spec, err := LoadSplit(pygDir, name, split)
			if err != nil {
				t.Fatalf("%s %s: %v", name, split, err)
			}
			w := want[name][split]
			if len(gs) != len(w) {
				t.Fatalf("%s %s: %d graphs, want %d", name, split, len(gs), len(w))
			}
			for i, g := range gs {
				check(name+" "+split, i, g, w[i], spec)
			}
		}
	}
}

// fixtureJSON reads the JSON file name of the fixture folder pygDir into a T: the graphs the
// fixture script wrote (scripts/pyfixtures).
func fixtureJSON[T any](t *testing.T, name string) T {
	t.Helper()
	var v T
	raw, err := os.ReadFile(filepath.Join(pygDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPyGDistributions reads every split of the four fixtures through LoadSplit, as a run
// does, and compares every field of every graph with the values the fixture script wrote.
func TestPyGDistributions(t *testing.T) {
	want := fixtureJSON[map[string]map[string][]pygGraph](t, "expected.json")
	checkFixtures(t, want, []string{"zinc", "aqsol", "mnist", "cifar10"}, func(label string, i int, g *Graph, w pygGraph, spec *Spec) {
		checkPyGGraph(t, label, i, g, w, spec)
	})
}

func checkPyGGraph(t *testing.T, what string, i int, g *Graph, w pygGraph, spec *Spec) {
	t.Helper()
	fail := func(field string, got, want any) {
		t.Errorf("%s graph %d: %s = %v, want %v", what, i, field, got, want)
	}
	if !slices.Equal(g.Src, w.Src) || !slices.Equal(g.Dst, w.Dst) {
		fail("edges", [][]int32{g.Src, g.Dst}, [][]int32{w.Src, w.Dst})
	}
	if spec.Task == GraphRegression {
		if !slices.Equal(g.Node.Cat, w.X) || g.N != len(w.X) || g.Node.CatDim != 1 {
			fail("x", g.Node.Cat, w.X)
		}
		attr := make([]int32, len(w.EdgeAttr))
		for k, a := range w.EdgeAttr {
			attr[k] = int32(a)
		}
		if !slices.Equal(g.Edge.Cat, attr) {
			fail("edge_attr", g.Edge.Cat, attr)
		}
		if len(g.Y) != 1 || g.Y[0] != w.Y {
			fail("y", g.Y, w.Y)
		}
		return
	}
	if g.Node.FloatDim != len(spec.CLSNode.Float) || len(g.Node.Float) != len(w.Node) {
		fail("node features", g.Node.Float, w.Node)
	}
	for k := range w.Node {
		if k < len(g.Node.Float) && g.Node.Float[k] != w.Node[k] {
			fail("node features", g.Node.Float, w.Node)
			break
		}
	}
	for k, a := range w.EdgeAttr {
		if k >= len(g.Edge.Float) || g.Edge.Float[k] != float32(a) {
			fail("edge_attr", g.Edge.Float, w.EdgeAttr)
			break
		}
	}
	if g.Label != w.Label {
		fail("label", g.Label, w.Label)
	}
}

// TestAQSOLDropsLikeTheBenchmark: the graph without bonds and the graph with a trailing
// unbonded atom are counted and left out.
func TestAQSOLDropsLikeTheBenchmark(t *testing.T) {
	path := filepath.Join(pygDir, "aqsol", "pyg", "asqol_graph_raw", "train.pickle")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	gs, dropped, err := ReadAQSOLPickle(path, raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 3 || dropped != (AQSOLDropped{NoBonds: 1, TrailingAtoms: 1}) {
		t.Errorf("kept %d, dropped %+v; want 3 kept, one of each dropped", len(gs), dropped)
	}
}

// TestPyGErrorsNameFileAndRecord: damaged files and indexes give errors naming the file and
// where in it.
func TestPyGErrorsNameFileAndRecord(t *testing.T) {
	path := filepath.Join(pygDir, "zinc", "pyg", "molecules", "val.pickle")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadZINCPickle(path, raw, []int{0, 7}); err == nil || !strings.Contains(err.Error(), "record 7") || !strings.Contains(err.Error(), path) {
		t.Errorf("index past the file: %v", err)
	}
	if _, err := ReadZINCPickle(path, raw[:len(raw)-9], nil); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("truncated pickle: %v", err)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "train.index")
	os.WriteFile(bad, []byte("3,x,4\r\n"), 0o644)
	if _, err := readIndex(bad); err == nil || !strings.Contains(err.Error(), "entry 2") {
		t.Errorf("bad index: %v", err)
	}
	os.WriteFile(bad, []byte("3,4,3\r\n"), 0o644)
	if _, err := readIndex(bad); err == nil || !strings.Contains(err.Error(), "repeats") {
		t.Errorf("repeated index: %v", err)
	}
	if _, err := readIndex(filepath.Join(dir, "none.index")); err == nil || !strings.Contains(err.Error(), "cmd/data get zinc") {
		t.Errorf("missing index: %v", err)
	}
	pt := filepath.Join(pygDir, "mnist", "pyg", "MNIST_v2.pt")
	raw, err = os.ReadFile(pt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSuperpixelsPT(pt, raw, "train", 5); err == nil || !strings.Contains(err.Error(), "graph 0") {
		t.Errorf("wrong channel count: %v", err)
	}
}

// FuzzPyGReaders: no file makes a reader panic.
func FuzzPyGReaders(f *testing.F) {
	for _, p := range []string{"zinc/pyg/molecules/test.pickle", "aqsol/pyg/asqol_graph_raw/test.pickle", "mnist/pyg/MNIST_v2.pt",
		"peptides-func/pyg/peptidesfunc/test.pt"} {
		raw, err := os.ReadFile(filepath.Join(pygDir, p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ReadZINCPickle("fuzz", b, nil)
		ReadAQSOLPickle("fuzz", b)
		ReadSuperpixelsPT("fuzz", b, "test", 3)
		ReadPeptidesPT("fuzz", b, 10, true)
	})
}

// TestPublicZINCIndexFiles: where the data folder holds benchmarking-gnns' subset index files,
// they parse to 10,000/1,000/1,000 distinct records inside the full pickles (220,011 / 24,445 /
// 5,000 molecules). Skipped where they are absent.
func TestPublicZINCIndexFiles(t *testing.T) {
	dir := os.Getenv(EnvDataDir)
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "data")
	}
	for _, c := range []struct {
		split      string
		n, records int
	}{{"train", 10000, 220011}, {"val", 1000, 24445}, {"test", 1000, 5000}} {
		path := filepath.Join(PyGDir(dir, "zinc"), c.split+".index")
		if _, err := os.Stat(path); err != nil {
			t.Skipf("%s absent: `go run ./cmd/data get zinc` fetches it", path)
		}
		idx, err := readIndex(path)
		if err != nil {
			t.Fatal(err)
		}
		hi := 0
		for _, i := range idx {
			hi = max(hi, i)
		}
		if len(idx) != c.n || hi >= c.records {
			t.Errorf("%s: %d records up to %d, want %d below %d", path, len(idx), hi, c.n, c.records)
		}
	}
}
