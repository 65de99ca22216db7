package data

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// peptideGraph is a graph of testdata/pyg/peptides.json, as scripts/pyfixtures/peptides.py wrote
// it: x and edge_attr as rows of ids, y with null for a missing label.
type peptideGraph struct {
	X        [][]int32  `json:"x"`
	Src      []int32    `json:"src"`
	Dst      []int32    `json:"dst"`
	EdgeAttr [][]int32  `json:"edge_attr"`
	Y        []*float64 `json:"y"`
}

// TestPeptidesDistributions reads every split of both fixtures through LoadSplit, as a run
// does, and compares every field of every graph with what the fixture script wrote: the atom
// and bond ids column by column, the edges (one graph's edge_index a strided view), and the
// labels, a missing one as NaN.
func TestPeptidesDistributions(t *testing.T) {
	want := fixtureJSON[map[string]map[string][]peptideGraph](t, "peptides.json")
	checkFixtures(t, want, []string{"peptides-func", "peptides-struct"}, func(label string, i int, g *Graph, w peptideGraph, _ *Spec) {
		checkPeptide(t, label, i, g, w)
	})
	gs, _, err := LoadSplit(pygDir, "peptides-func", "train")
	if err != nil {
		t.Fatal(err)
	}
	if y := gs[1].Y[5]; !math.IsNaN(float64(y)) {
		t.Errorf("the missing label reads %v, want NaN", y)
	}
	if gs[2].N != 1 || gs[2].NumEdges() != 0 {
		t.Errorf("the molecule without bonds: %d atoms, %d edges", gs[2].N, gs[2].NumEdges())
	}
}

func checkPeptide(t *testing.T, what string, i int, g *Graph, w peptideGraph) {
	t.Helper()
	fail := func(field string, got, want any) {
		t.Errorf("%s graph %d: %s = %v, want %v", what, i, field, got, want)
	}
	if g.N != len(w.X) || g.Node.CatDim != 9 || !slices.Equal(g.Node.Cat, slices.Concat(w.X...)) {
		fail("x", g.Node.Cat, w.X)
	}
	if g.Edge.CatDim != 3 || !slices.Equal(g.Edge.Cat, slices.Concat(w.EdgeAttr...)) {
		fail("edge_attr", g.Edge.Cat, w.EdgeAttr)
	}
	if !slices.Equal(g.Src, w.Src) || !slices.Equal(g.Dst, w.Dst) {
		fail("edges", [][]int32{g.Src, g.Dst}, [][]int32{w.Src, w.Dst})
	}
	if len(g.Y) != len(w.Y) {
		fail("y width", len(g.Y), len(w.Y))
		return
	}
	for k, y := range w.Y {
		got := g.Y[k]
		if (y == nil && !math.IsNaN(float64(got))) || (y != nil && got != float32(*y)) {
			fail("y", g.Y, w.Y)
			break
		}
	}
}

// TestPeptidesSpec: the vocabularies are OGB's per column, the CLS node and C_e take a fresh id
// in every column, and the tasks are func's 10 binary labels and struct's 11 targets.
func TestPeptidesSpec(t *testing.T) {
	atoms, bonds := []int{119, 5, 12, 12, 10, 6, 6, 2, 2}, []int{5, 6, 2}
	for _, c := range []struct {
		name             string
		task             Task
		classes, targets int
	}{{"peptides-func", GraphMultiLabel, 10, 0}, {"Peptides-Struct", GraphRegression, 0, 11}} {
		spec, err := OpenSpec("", c.name)
		if err != nil {
			t.Fatal(err)
		}
		if spec.Task != c.task || spec.Classes != c.classes || spec.Targets != c.targets || spec.Directed || spec.LapQ != 8 {
			t.Errorf("%s: %+v", c.name, spec)
		}
		if !slices.Equal(spec.NodeColumnVocabs(), atoms) || spec.NodeVocab != 0 || spec.EdgeVocab != 0 {
			t.Errorf("%s: node vocabularies %v (shared %d, edge %d), want %v", c.name, spec.NodeColumnVocabs(), spec.NodeVocab, spec.EdgeVocab, atoms)
		}
		for col, v := range atoms {
			if spec.CLSNode.Cat[col] != int32(v) {
				t.Errorf("%s: CLS id %d in column %d, want the fresh id %d", c.name, spec.CLSNode.Cat[col], col, v)
			}
		}
		for col, v := range bonds {
			if spec.EdgeConst.Cat[col] != int32(v) || spec.EdgeColumnVocabs()[col] != v+1 {
				t.Errorf("%s: C_e %v with vocabularies %v, want fresh ids %v", c.name, spec.EdgeConst.Cat, spec.EdgeColumnVocabs(), bonds)
			}
		}
		if !NeedsFiles(c.name) || !slices.Contains(Names(), strings.ToLower(c.name)) {
			t.Errorf("%s: not a file-backed dataset of the registry", c.name)
		}
	}
	// a spec's slices are its own
	a, _ := OpenSpec("", "peptides-func")
	a.NodeVocabs[0] = 0
	if b, _ := OpenSpec("", "peptides-func"); b.NodeVocabs[0] != 119 {
		t.Error("specs share their vocabulary slices")
	}
}

// TestColumnVocabsOfOneVocabDatasets: a dataset with one shared vocabulary gives it for each of
// its columns (NeighborsMatch: key and value), and none with float features.
func TestColumnVocabsOfOneVocabDatasets(t *testing.T) {
	for _, c := range []struct {
		name        string
		node, edges []int
	}{{"neighborsmatch-2", []int{5, 5}, nil}, {"cluster", []int{7}, nil}, {"mnist", nil, nil}} {
		spec, err := OpenSpec("", c.name)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(spec.NodeColumnVocabs(), c.node) || !slices.Equal(spec.EdgeColumnVocabs(), c.edges) {
			t.Errorf("%s: %v %v, want %v %v", c.name, spec.NodeColumnVocabs(), spec.EdgeColumnVocabs(), c.node, c.edges)
		}
	}
	zinc := &Spec{NodeVocab: 28, EdgeVocab: 4, CLSNode: Row{Cat: []int32{28}}}
	if !slices.Equal(zinc.NodeColumnVocabs(), []int{28}) || !slices.Equal(zinc.EdgeColumnVocabs(), []int{4}) {
		t.Errorf("zinc: %v %v", zinc.NodeColumnVocabs(), zinc.EdgeColumnVocabs())
	}
}

// TestPeptidesErrors: each damaged file (one defect in graph 1) gives an error naming the file,
// the graph and the field; a truncated file and a missing split name the file.
func TestPeptidesErrors(t *testing.T) {
	for _, c := range []struct {
		file   string
		labels bool
		want   []string
	}{
		{"x-shape", true, []string{"x: want a N×9 integer tensor", "[3 10]"}},
		{"atom-id", true, []string{"x[1][3] = 12", "formal_charge takes ids 0..11"}},
		{"bond-id", true, []string{"edge_attr[2][1] = 6", "bond_stereo takes ids 0..5"}},
		{"endpoint", true, []string{"edge_index: edge 3 (2→3) outside the 3 atoms"}},
		{"y-width", true, []string{"y: want a 1×10 tensor", "[1 9]"}},
		{"label", true, []string{"y[0] = 2: want a label 0 or 1"}},
		{"not-tuple", true, []string{"want a tuple (x, edge_attr, edge_index, y), got tuple of 3"}},
	} {
		path := filepath.Join("testdata", "lrgb-bad", c.file+".pt")
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ReadPeptidesPT(path, raw, 10, c.labels)
		if err == nil {
			t.Errorf("%s: no error", c.file)
			continue
		}
		for _, w := range append([]string{path + ": graph 1: "}, c.want...) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.file, err, w)
			}
		}
	}

	path := filepath.Join(pygDir, "peptides-struct", "pyg", "peptidesstruct", "train.pt")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPeptidesPT(path, raw[:len(raw)-100], 11, false); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("truncated file: %v", err)
	}
	if _, err := ReadPeptidesPT(path, raw, 10, true); err == nil || !strings.Contains(err.Error(), "graph 0: y: want a 1×10 tensor") {
		t.Errorf("struct's targets read as func's labels: %v", err)
	}
	dir := t.TempDir()
	_, _, err = LoadSplit(dir, "peptides-func", "val")
	wantIn(t, err, filepath.Join(dir, "peptides-func", "pyg", "peptidesfunc", "val.pt"), "not found", "go run ./cmd/data get -data "+dir+" peptides-func")
}

func wantIn(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q lacks %q", err, p)
		}
	}
}

// TestPeptidesSubset: LoadFirst keeps the first graphs of a split, as -subset asks.
func TestPeptidesSubset(t *testing.T) {
	all, _, err := LoadSplit(pygDir, "peptides-struct", "train")
	if err != nil {
		t.Fatal(err)
	}
	gs, _, err := LoadFirst(pygDir, "peptides-struct", "train", 2)
	if err != nil || len(gs) != 2 || gs[1].N != all[1].N || !slices.Equal(gs[1].Y, all[1].Y) {
		t.Fatalf("LoadFirst 2: %d graphs, %v", len(gs), err)
	}
}

// TestPublicPeptides: where the data folder holds the public distributions, every split reads
// and has LRGB's size (10,873 / 2,331 / 2,331 graphs; 2,344,859 atoms and 4,773,974 directed
// edges in all). Skipped where they are absent.
func TestPublicPeptides(t *testing.T) {
	dir := os.Getenv(EnvDataDir)
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "data")
	}
	for _, name := range []string{"peptides-func", "peptides-struct"} {
		if _, err := os.Stat(filepath.Join(PyGDir(dir, name), peptidesFile(name)("train"))); err != nil {
			t.Skipf("%s absent: `go run ./cmd/data get %s` fetches it", PyGDir(dir, name), name)
		}
		nodes, edges := 0, 0
		for _, c := range []struct {
			split string
			n     int
		}{{"train", 10873}, {"val", 2331}, {"test", 2331}} {
			gs, _, err := LoadPublicSplit(dir, name, c.split) // not Peptides-func's JSON Lines files, which LoadSplit prefers
			if err != nil {
				t.Fatal(err)
			}
			if len(gs) != c.n {
				t.Errorf("%s %s: %d graphs, want %d", name, c.split, len(gs), c.n)
			}
			for _, g := range gs {
				nodes += g.N
				edges += g.NumEdges()
			}
		}
		if nodes != 2344859 || edges != 4773974 {
			t.Errorf("%s: %d atoms, %d edges; want 2,344,859 and 4,773,974", name, nodes, edges)
		}
	}
}
