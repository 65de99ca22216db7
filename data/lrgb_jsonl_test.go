package data

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/jsonl/peptides-func from testdata/pyg/peptides.json")

// jsonlDir is a data folder holding Peptides-func as JSON Lines: the graphs of the PyG fixture
// (testdata/pyg/peptides-func), written from the values the fixture script recorded in
// testdata/pyg/peptides.json, not from what ReadPeptidesPT reads.
const jsonlDir = "testdata/jsonl"

// peptideJSONLine is one line of the JSON Lines files, its fields in the files' (sorted) key
// order; a nil label is a missing one (null).
type peptideJSONLine struct {
	Dst      []int32   `json:"dst"`
	EdgeAttr [][]int32 `json:"edge_attr"`
	Smiles   string    `json:"smiles"`
	Src      []int32   `json:"src"`
	X        [][]int32 `json:"x"`
	Y        []*int    `json:"y"`
}

// gzipLines compresses text as the shared folder's files are: no name, modification time 0.
func gzipLines(t *testing.T, text string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// fixtureJSONL is the text of the JSON Lines file of one split of the PyG fixture's
// Peptides-func graphs, as peptides.json gives them.
func fixtureJSONL(t *testing.T, graphs []peptideGraph, split string) string {
	t.Helper()
	var b strings.Builder
	for i, g := range graphs {
		line := peptideJSONLine{Dst: g.Dst, EdgeAttr: g.EdgeAttr, Src: g.Src, X: g.X,
			Smiles: fmt.Sprintf("fixture %s %d", split, i)}
		for _, y := range g.Y {
			if y == nil {
				line.Y = append(line.Y, nil)
				continue
			}
			v := int(*y)
			line.Y = append(line.Y, &v)
		}
		if line.Dst == nil { // the molecule without bonds: empty lists, not null
			line.Dst, line.Src, line.EdgeAttr = []int32{}, []int32{}, [][]int32{}
		}
		raw, err := json.Marshal(line)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(raw)
		b.WriteByte('\n')
	}
	return b.String()
}

// TestPeptidesJSONLFixture: the committed JSON Lines fixture holds what fixtureJSONL writes from
// peptides.json (go test ./data -run TestPeptidesJSONLFixture -update rewrites it).
func TestPeptidesJSONLFixture(t *testing.T) {
	want := fixtureJSON[map[string]map[string][]peptideGraph](t, "peptides.json")["peptides-func"]
	for _, split := range []string{"train", "val", "test"} {
		path := filepath.Join(jsonlDir, "peptides-func", split+".jsonl.gz")
		text := fixtureJSONL(t, want[split], split)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, gzipLines(t, text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := readGzip(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != text {
			t.Errorf("%s differs from what peptides.json gives (rerun with -update):\n%s\nwant\n%s", path, got, text)
		}
	}
}

// sameTargets compares the targets of graphs (or batches) read from the two formats bit for
// bit: a missing label (NaN) equals itself.
func sameTargets(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// TestPeptidesJSONLMatchesPT: every split of the JSON Lines fixture reads, through LoadSplit as a
// run does, to graphs deep-equal to those of the torch.save fixture (node and edge ids, edge
// order, labels, the missing label as the same NaN), and one batch of each split built from
// either is the same batch.
func TestPeptidesJSONLMatchesPT(t *testing.T) {
	if got := SourceOf(jsonlDir, "peptides-func"); got != SourceJSONL {
		t.Fatalf("source %q, want %q", got, SourceJSONL)
	}
	for _, split := range []string{"train", "val", "test"} {
		js, jspec, err := LoadSplit(jsonlDir, "peptides-func", split)
		if err != nil {
			t.Fatal(err)
		}
		pt, pspec, err := LoadSplit(pygDir, "peptides-func", split)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(jspec, pspec) {
			t.Errorf("%s: specs differ: %+v, %+v", split, jspec, pspec)
		}
		if len(js) != len(pt) {
			t.Fatalf("%s: %d graphs from JSON Lines, %d from the .pt file", split, len(js), len(pt))
		}
		for i := range js {
			a, b := *js[i], *pt[i]
			if !sameTargets(a.Y, b.Y) {
				t.Errorf("%s graph %d: y %v, want %v", split, i, a.Y, b.Y)
			}
			a.Y, b.Y = nil, nil
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s graph %d: %+v\nwant %+v", split, i, a, b)
			}
		}
		jb, err := NewBatch(js)
		if err != nil {
			t.Fatal(err)
		}
		pb, err := NewBatch(pt)
		if err != nil {
			t.Fatal(err)
		}
		if !sameTargets(jb.Y, pb.Y) {
			t.Errorf("%s batch: y %v, want %v", split, jb.Y, pb.Y)
		}
		jb.Y, pb.Y = nil, nil
		if !reflect.DeepEqual(jb, pb) {
			t.Errorf("%s batch: %+v\nwant %+v", split, jb, pb)
		}
	}
	gs, _, err := LoadSplit(jsonlDir, "peptides-func", "train")
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(float64(gs[1].Y[5])) || gs[2].N != 1 || gs[2].NumEdges() != 0 || gs[2].Src == nil {
		t.Errorf("the missing label reads %v; the molecule without bonds %d atoms, %d edges", gs[1].Y[5], gs[2].N, gs[2].NumEdges())
	}
}

// TestPeptidesJSONLFirst: a subset reads the first lines only, and stops before a damaged line
// further on.
func TestPeptidesJSONLFirst(t *testing.T) {
	gs, _, err := LoadFirst(jsonlDir, "peptides-func", "train", 2)
	if err != nil || len(gs) != 2 || gs[1].N != 4 {
		t.Fatalf("LoadFirst 2: %d graphs, %v", len(gs), err)
	}
	text := goodPeptideLine + "\n" + goodPeptideLine + "\n{not json\n"
	if gs, err := readPeptidesJSONL("f.jsonl.gz", bytes.NewReader(gzipLines(t, text)), 10, true, 2); err != nil || len(gs) != 2 {
		t.Errorf("limit 2: %d graphs, %v", len(gs), err)
	}
	if _, err := ReadPeptidesJSONL("f.jsonl.gz", bytes.NewReader(gzipLines(t, text)), 10, true); err == nil || !strings.Contains(err.Error(), "f.jsonl.gz:3: graph 2: malformed JSON") {
		t.Errorf("all lines: %v", err)
	}
}

// copyTree copies the files under src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPeptidesJSONLPrecedence: with both formats in the folder Peptides-func is read from the
// JSON Lines files (here one graph per split, unlike the .pt files); without its training file
// from the public distribution; with neither the error names both places. Peptides-struct
// stays with its public distribution whatever JSON Lines files lie beside it.
func TestPeptidesJSONLPrecedence(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, pygDir, dir)
	for _, split := range []string{"train", "val", "test"} {
		for _, name := range []string{"peptides-func", "peptides-struct"} {
			if err := os.WriteFile(peptidesJSONLPath(dir, name, split), gzipLines(t, goodPeptideLine+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := SourceOf(dir, "Peptides-Func"); got != SourceJSONL {
		t.Errorf("both formats: source %q, want jsonl", got)
	}
	if d := DescribeSource(dir, "peptides-func"); !strings.Contains(d, "JSON Lines files in "+filepath.Join(dir, "peptides-func")) || !strings.Contains(d, "smiles2graph") {
		t.Errorf("described as %q", d)
	}
	for _, split := range []string{"train", "val", "test"} {
		gs, _, err := LoadSplit(dir, "peptides-func", split)
		if err != nil || len(gs) != 1 || gs[0].N != 3 {
			t.Errorf("both formats, %s: %d graphs (%v), want the one JSON Lines graph", split, len(gs), err)
		}
	}
	if got := SourceOf(dir, "peptides-struct"); got != SourcePyG {
		t.Errorf("peptides-struct: source %q, want pyg", got)
	}
	if gs, _, err := LoadSplit(dir, "peptides-struct", "train"); err != nil || len(gs) != 3 {
		t.Errorf("peptides-struct: %d graphs (%v), want the 3 of the .pt file", len(gs), err)
	}

	// the training split missing in one format or the other
	os.Remove(peptidesJSONLPath(dir, "peptides-func", "val"))
	_, _, err := LoadSplit(dir, "peptides-func", "val")
	wantIn(t, err, peptidesJSONLPath(dir, "peptides-func", "val")+" not found", peptidesJSONLPath(dir, "peptides-func", "train"))
	os.Remove(peptidesJSONLPath(dir, "peptides-func", "train"))
	if got := SourceOf(dir, "peptides-func"); got != SourcePyG {
		t.Errorf("without train.jsonl.gz: source %q, want pyg", got)
	}
	if gs, _, err := LoadSplit(dir, "peptides-func", "train"); err != nil || len(gs) != 3 {
		t.Errorf("without train.jsonl.gz: %d graphs (%v), want the 3 of the .pt file", len(gs), err)
	}
	empty := t.TempDir()
	_, _, err = LoadSplit(empty, "peptides-func", "test")
	wantIn(t, err, filepath.Join(empty, "peptides-func", "pyg", "peptidesfunc", "test.pt"), filepath.Join(empty, "peptides-func", "test.jsonl.gz"),
		"not found", "go run ./cmd/data get -data "+empty+" peptides-func")
}

// goodPeptideLine is a valid three-atom graph: atoms 0-1-2 in a chain.
const goodPeptideLine = `{"dst":[1,0,2,1],"edge_attr":[[0,0,0],[0,0,0],[1,0,1],[1,0,1]],"smiles":"CCO","src":[0,1,1,2],` +
	`"x":[[5,0,4,5,3,0,2,0,0],[5,0,3,5,2,0,2,0,0],[7,0,2,5,0,0,2,0,0]],"y":[0,1,0,0,0,0,0,0,0,0]}`

// TestPeptidesJSONLErrors: each damaged line (graph 1 on line 2, after a good one) gives an
// error naming the file, the line, the graph and the field or column.
func TestPeptidesJSONLErrors(t *testing.T) {
	edit := func(old, new string) string {
		if !strings.Contains(goodPeptideLine, old) {
			t.Fatalf("%q not in the good line", old)
		}
		return strings.Replace(goodPeptideLine, old, new, 1)
	}
	for _, c := range []struct {
		name, line string
		want       []string
	}{
		{"atom id past its vocabulary", edit(`[7,0,2,5,0,0,2,0,0]`, `[119,0,2,5,0,0,2,0,0]`), []string{"x[2][0] = 119: atomic_num takes ids 0..118 (OGB)"}},
		{"atom id in a later column", edit(`[5,0,3,5,2,0,2,0,0]`, `[5,0,3,12,2,0,2,0,0]`), []string{"x[1][3] = 12: formal_charge takes ids 0..11 (OGB)"}},
		{"negative atom id", edit(`[5,0,3,5,2,0,2,0,0]`, `[5,0,3,5,2,0,2,0,-1]`), []string{"x[1][8] = -1: is_in_ring takes ids 0..1 (OGB)"}},
		{"id beyond int32", edit(`[7,0,2,5,0,0,2,0,0]`, `[7,0,2,5,0,0,2,0,4294967296]`), []string{"x[2][8] = 4294967296: is_in_ring"}},
		{"bond id past its vocabulary", edit(`[1,0,1],[1,0,1]`, `[1,0,1],[1,6,1]`), []string{"edge_attr[3][1] = 6: bond_stereo takes ids 0..5 (OGB)"}},
		{"label width", edit(`"y":[0,1,0,0,0,0,0,0,0,0]`, `"y":[0,1,0,0,0,0,0,0,0]`), []string{"y: want 10 labels, got 9"}},
		{"label value", edit(`"y":[0,1,0,0,0`, `"y":[0,1,0,0,2`), []string{"y[4] = 2: want a label 0 or 1"}},
		{"dangling edge", edit(`"dst":[1,0,2,1]`, `"dst":[1,0,2,3]`), []string{"src/dst: edge 3 (2→3) outside the 3 atoms"}},
		{"negative endpoint", edit(`"src":[0,1,1,2]`, `"src":[0,-1,1,2]`), []string{"src/dst: edge 1 (-1→0) outside the 3 atoms"}},
		{"edge list lengths", edit(`"src":[0,1,1,2]`, `"src":[0,1,1]`), []string{"src, dst and edge_attr: lengths 3, 4 and 4"}},
		{"short atom row", edit(`[5,0,3,5,2,0,2,0,0]`, `[5,0,3,5,2,0,2,0]`), []string{"x[1]: want the 9 OGB atom columns, got 8 values"}},
		{"long bond row", edit(`"edge_attr":[[0,0,0]`, `"edge_attr":[[0,0,0,0]`), []string{"edge_attr[0]: want the 3 OGB bond columns, got 4 values"}},
		{"no atoms", `{"dst":[],"edge_attr":[],"smiles":"","src":[],"x":[],"y":[0,0,0,0,0,0,0,0,0,0]}`, []string{"x: no atoms"}},
		{"malformed JSON", goodPeptideLine[:70], []string{"malformed JSON"}},
		{"not an integer id", edit(`[5,0,4,5,3,0,2,0,0]`, `[5.5,0,4,5,3,0,2,0,0]`), []string{"x[0][0]: want an integer id, got 5.5"}},
		{"exponent", edit(`[7,0,2,5,0,0,2,0,0]`, `[7,0,2,5,0,0,2,1e0,0]`), []string{"x[2][7]: want an integer id, got 1e0"}},
		{"string id", edit(`[1,0,1],[1,0,1]`, `[1,0,1],[1,"0",1]`), []string{`edge_attr[3][1]: want an integer id, got "0"`}},
		{"id of 20 digits", edit(`"src":[0,1,1,2]`, `"src":[0,1,1,20000000000000000000]`), []string{"src[3]: want an integer, got 20000000000000000000"}},
		{"rows not a list", edit(`"edge_attr":[[0,0,0],[0,0,0],[1,0,1],[1,0,1]]`, `"edge_attr":{}`), []string{"edge_attr: want a list of rows, got {"}},
		{"row not a list", edit(`"x":[[5,0,4,5,3,0,2,0,0],`, `"x":[5,`), []string{"x[0]: want a row of the 9 OGB atom columns, got 5"}},
		{"dst not a list", edit(`"dst":[1,0,2,1]`, `"dst":"1,0,2,1"`), []string{`dst: want a list of integers, got "1`}},
		{"smiles not a string", edit(`"smiles":"CCO"`, `"smiles":7`), []string{"smiles: want a string, got 7"}},
		{"label not a number", edit(`"y":[0,1`, `"y":["0",1`), []string{"y: want a list of 10 labels"}},
		{"unknown key", edit(`"smiles":"CCO"`, `"smiles":"CCO","pos":[0]`), []string{`unknown key "pos": want exactly x, edge_attr, src, dst, y and smiles`}},
		{"missing keys", edit(`"smiles":"CCO",`, ``), []string{"missing (or null) key(s) smiles"}},
		{"null key", edit(`"smiles":"CCO"`, `"smiles":null`), []string{"missing (or null) key(s) smiles"}},
		{"extra data", goodPeptideLine + " {}", []string{"malformed JSON: extra data after the object"}},
		{"empty line", "", []string{"empty line"}},
	} {
		path := filepath.Join("data", "peptides-func", "train.jsonl.gz")
		raw := gzipLines(t, goodPeptideLine+"\n"+c.line+"\n"+goodPeptideLine+"\n")
		_, err := ReadPeptidesJSONL(path, bytes.NewReader(raw), 10, true)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		t.Logf("%s: %v", c.name, err)
		for _, w := range append([]string{path + ":2: graph 1: "}, c.want...) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.name, err, w)
			}
		}
	}

	// the file as a whole
	good := gzipLines(t, goodPeptideLine+"\n"+goodPeptideLine+"\n")
	for _, c := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"truncated gzip", good[:len(good)-12], "f.jsonl.gz: truncated or corrupt gzip data after line"},
		{"not gzip", []byte(goodPeptideLine), "f.jsonl.gz: not a gzip file"},
		{"no gzip header", good[:4], "f.jsonl.gz: truncated gzip file"},
		{"no graphs", gzipLines(t, ""), "f.jsonl.gz: no graphs in file"},
		{"a missing label is null", gzipLines(t, strings.Replace(goodPeptideLine, `"y":[0,1`, `"y":[null,1`, 1)), ""},
	} {
		gs, err := ReadPeptidesJSONL("f.jsonl.gz", bytes.NewReader(c.raw), 10, true)
		if c.want == "" {
			if err != nil || !math.IsNaN(float64(gs[0].Y[0])) {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	// struct-like targets: finite numbers, a null one refused
	line := strings.Replace(goodPeptideLine, `"y":[0,1,0,0,0,0,0,0,0,0]`, `"y":[0.5,-1.25,null]`, 1)
	if _, err := ReadPeptidesJSONL("f.jsonl.gz", bytes.NewReader(gzipLines(t, line)), 3, false); err == nil || !strings.Contains(err.Error(), "f.jsonl.gz:1: graph 0: y[2] = NaN: want a finite target") {
		t.Errorf("targets: %v", err)
	}
}

// sharedPeptides is the shared data folder's Peptides-func folder ($REWIREGNN_DATA's when set);
// the test is skipped without its JSON Lines files.
func sharedPeptides(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(EnvDataDir)
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "data")
	}
	if _, err := os.Stat(peptidesJSONLPath(dir, "peptides-func", "train")); err != nil {
		t.Skipf("no Peptides-func JSON Lines files in %s (%v): set %s to the data folder that holds peptides-func/{train,val,test}.jsonl.gz", dir, err, EnvDataDir)
	}
	return dir
}

// TestPeptidesFuncJSONLFiles reads the real Peptides-func files as a run does and checks the
// numbers the data folder's README gives: graphs, atoms and directed edges per split, the first
// graph of each split, the largest id per atom and bond column, and the training positives per
// class. It logs the time to read the training split and the heap it holds.
func TestPeptidesFuncJSONLFiles(t *testing.T) {
	dir := sharedPeptides(t)
	if testing.Short() {
		t.Skip("-short: reads 15,535 graphs (about 120 MB decompressed)")
	}
	if got := SourceOf(dir, "peptides-func"); got != SourceJSONL {
		t.Fatalf("source %q, want jsonl", got)
	}
	maxAtom, maxBond := make([]int32, 9), make([]int32, 3)
	for _, c := range []struct {
		split              string
		graphs             int
		nodes, edges       int
		firstN, firstEdges int
	}{
		{"train", 10873, 1647684, 3354790, 338, 682},
		{"val", 2331, 348441, 709242, 228, 456},
		{"test", 2331, 348734, 709942, 119, 244},
	} {
		runtime.GC()
		start := time.Now()
		gs, spec, err := LoadSplit(dir, "peptides-func", c.split)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if c.split == "train" {
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			t.Logf("train: %d graphs read in %.2f s; heap in use after reading (GC'd, graphs live): %.1f MiB (heap obtained from the OS %.1f MiB)",
				len(gs), took.Seconds(), float64(ms.HeapAlloc)/(1<<20), float64(ms.HeapSys)/(1<<20))
		} else {
			t.Logf("%s: %d graphs read in %.2f s", c.split, len(gs), took.Seconds())
		}
		if spec.Task != GraphMultiLabel || spec.Classes != 10 {
			t.Errorf("spec %+v", spec)
		}
		nodes, edges := 0, 0
		pos := make([]int, 10)
		for _, g := range gs {
			nodes += g.N
			edges += g.NumEdges()
			for i, id := range g.Node.Cat {
				maxAtom[i%9] = max(maxAtom[i%9], id)
			}
			for i, id := range g.Edge.Cat {
				maxBond[i%3] = max(maxBond[i%3], id)
			}
			for k, y := range g.Y {
				if y == 1 {
					pos[k]++
				} else if y != 0 {
					t.Fatalf("%s: label %v", c.split, y)
				}
			}
		}
		if len(gs) != c.graphs || nodes != c.nodes || edges != c.edges {
			t.Errorf("%s: %d graphs, %d atoms, %d directed edges; want %d, %d, %d", c.split, len(gs), nodes, edges, c.graphs, c.nodes, c.edges)
		}
		first := gs[0]
		if first.N != c.firstN || first.NumEdges() != c.firstEdges || !slices.Equal(first.Node.Cat[:9], []int32{5, 0, 4, 5, 3, 0, 2, 0, 0}) {
			t.Errorf("%s graph 0: %d atoms, %d edges, first atom %v; want %d, %d, [5 0 4 5 3 0 2 0 0]",
				c.split, first.N, first.NumEdges(), first.Node.Cat[:9], c.firstN, c.firstEdges)
		}
		if c.split == "train" {
			if !slices.Equal(first.Y, []float32{0, 1, 0, 0, 0, 0, 0, 0, 0, 0}) {
				t.Errorf("train graph 0: y %v", first.Y)
			}
			if want := []int{966, 385, 698, 677, 6820, 2148, 1162, 2002, 217, 2825}; !slices.Equal(pos, want) {
				t.Errorf("train positives per class %v, want %v", pos, want)
			}
		}
	}
	if !slices.Equal(maxAtom, []int32{16, 2, 6, 6, 4, 0, 5, 1, 1}) || !slices.Equal(maxBond, []int32{3, 0, 1}) {
		t.Errorf("largest ids per atom column %v, per bond column %v; want [16 2 6 6 4 0 5 1 1], [3 0 1]", maxAtom, maxBond)
	}
}

// FuzzPeptideLine feeds arbitrary lines to the JSON Lines parser: it must return a graph that
// validates, with ids within OGB's vocabularies and 10 labels, or an error, never panic.
func FuzzPeptideLine(f *testing.F) {
	f.Add([]byte(goodPeptideLine))
	f.Add([]byte(`{"dst":[],"edge_attr":[],"smiles":"C","src":[],"x":[[5,0,0,0,0,0,0,0,0]],"y":[0,0,0,0,0,0,0,0,0,null]}`))
	f.Add([]byte(`{"dst":[ 1 , 0 ],"edge_attr":[ [0,0,0] , [0,0,0] ],"smiles":"CC","src":[0,1],"x":[[5,0,0,0,0,0,0,0,0],[5,0,0,0,0,0,0,0,0]],"y":[1,1,1,1,1,1,1,1,1,1]}`))
	f.Add([]byte(`{"x":[[-0,1e2]],"y":[0.5]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		g, err := parsePeptideLine(line, 10, true)
		if err != nil {
			return
		}
		if err := g.Validate(); err != nil || g.N < 1 || len(g.Y) != 10 || g.Node.CatDim != 9 || g.Edge.CatDim != 3 {
			t.Fatalf("accepted %q as %+v (%v)", line, g, err)
		}
		for i, id := range g.Node.Cat {
			if id < 0 || int(id) >= ogbAtomVocabs[i%9] {
				t.Fatalf("accepted atom id %d in column %d", id, i%9)
			}
		}
		for i, id := range g.Edge.Cat {
			if id < 0 || int(id) >= ogbBondVocabs[i%3] {
				t.Fatalf("accepted bond id %d in column %d", id, i%3)
			}
		}
	})
}

// TestPublicPeptidesMatchJSONL: where the data folder holds both Peptides-func's public
// distribution and its JSON Lines files, they hold the same molecules in the same order: atoms,
// edges and labels equal graph for graph. The atom and bond ids come from different RDKit
// releases (LRGB's and 2022.09), so graphs whose ids differ are counted and logged, not failed.
// Skipped where either is absent.
func TestPublicPeptidesMatchJSONL(t *testing.T) {
	dir := sharedPeptides(t)
	if _, err := os.Stat(filepath.Join(PyGDir(dir, "peptides-func"), peptidesFile("peptides-func")("train"))); err != nil {
		t.Skipf("no public Peptides-func distribution in %s: `go run ./cmd/data get -data %s peptides-func` enables this check", PyGDir(dir, "peptides-func"), dir)
	}
	for _, split := range []string{"train", "val", "test"} {
		js, _, err := LoadSplit(dir, "peptides-func", split)
		if err != nil {
			t.Fatal(err)
		}
		pt, _, err := LoadPublicSplit(dir, "peptides-func", split)
		if err != nil {
			t.Fatal(err)
		}
		if len(js) != len(pt) {
			t.Fatalf("%s: %d graphs as JSON Lines, %d in the public distribution", split, len(js), len(pt))
		}
		var differ []int
		for i := range js {
			a, b := js[i], pt[i]
			if a.N != b.N || !slices.Equal(a.Src, b.Src) || !slices.Equal(a.Dst, b.Dst) || !sameTargets(a.Y, b.Y) {
				t.Errorf("%s graph %d: atoms, edges or labels differ (%d atoms, %d edges; public %d, %d)", split, i, a.N, a.NumEdges(), b.N, b.NumEdges())
				continue
			}
			if !slices.Equal(a.Node.Cat, b.Node.Cat) || !slices.Equal(a.Edge.Cat, b.Edge.Cat) {
				differ = append(differ, i)
			}
		}
		t.Logf("%s: %d of %d graphs equal; atom or bond ids differ in %d (first: %v)", split, len(js)-len(differ), len(js), len(differ), differ[:min(len(differ), 10)])
	}
}
