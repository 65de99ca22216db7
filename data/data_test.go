package data_test

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
)

// Row counts and totals published in the shared data README.
func TestMoleculeFilesMatchPublishedTotals(t *testing.T) {
	cases := []struct {
		dataset, split       string
		graphs, nodes, edges int
		vocab                int
	}{
		{"zinc", "train", 8807, 204332, 439544, 28},
		{"zinc", "val", 1000, 23083, 49692, 28},
		{"zinc", "test", 1000, 23117, 49720, 28},
		{"aqsol", "train", 7831, 120771, 240178, 65},
		{"aqsol", "val", 996, 23389, 50542, 65},
		{"aqsol", "test", 996, 28396, 60590, 65},
	}
	for _, c := range cases {
		gs, spec := testdata.Load(t, c.dataset, c.split)
		nodes, edges := 0, 0
		for _, g := range gs {
			nodes += g.N
			edges += g.NumEdges()
			if err := g.CheckSimple(); err != nil {
				t.Fatalf("%s %s: %v", c.dataset, c.split, err)
			}
		}
		if len(gs) != c.graphs || nodes != c.nodes || edges != c.edges || spec.NodeVocab != c.vocab {
			t.Errorf("%s %s: %d graphs, %d nodes, %d edges, vocab %d; want %d, %d, %d, %d",
				c.dataset, c.split, len(gs), nodes, edges, spec.NodeVocab, c.graphs, c.nodes, c.edges, c.vocab)
		}
	}
	val, _ := testdata.Load(t, "zinc", "val")
	if y := val[0].Y[0]; y != float32(0.6299157738685608) {
		t.Errorf("first ZINC val target %v", y)
	}
	test, _ := testdata.Load(t, "aqsol", "test")
	if y := test[0].Y[0]; y != float32(-1.66) {
		t.Errorf("first AQSOL test target %v", y)
	}
}

func writeGz(t *testing.T, text string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(text))
	zw.Close()
	path := filepath.Join(t.TempDir(), "split.jsonl.gz")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const goodLine = `{"dst":[1,0],"edge_attr":[1,1],"smiles":"CC","src":[0,1],"x":[0,0],"y":0.5}`

func TestReadMoleculesErrorsNameFileAndLine(t *testing.T) {
	cases := []struct {
		name, line, want string
	}{
		{"malformed", `{"dst":[1,0],`, "line 2: malformed JSON"},
		{"unknown key", `{"dst":[1,0],"edge_attr":[1,1],"smiles":"CC","src":[0,1],"x":[0,0],"y":0.5,"z":1}`, `line 2: malformed JSON: json: unknown field "z"`},
		{"missing key", `{"dst":[1,0],"edge_attr":[1,1],"src":[0,1],"x":[0,0]}`, "line 2: missing key(s) y"},
		{"edge past N", `{"dst":[1,2],"edge_attr":[1,1],"smiles":"CC","src":[0,1],"x":[0,0],"y":0.5}`, "line 2: invalid graph: edge 1 (1→2) points outside the 2 nodes"},
		{"lengths", `{"dst":[1],"edge_attr":[1,1],"smiles":"CC","src":[0,1],"x":[0,0],"y":0.5}`, "line 2: src, dst and edge_attr have lengths 2, 1, 2"},
		{"atom type", `{"dst":[1,0],"edge_attr":[1,1],"smiles":"CC","src":[0,1],"x":[0,99],"y":0.5}`, "line 2: x[1] = 99 outside the 28 node types"},
		{"bond type", `{"dst":[1,0],"edge_attr":[1,7],"smiles":"CC","src":[0,1],"x":[0,0],"y":0.5}`, "line 2: edge_attr[1] = 7 outside the 4 edge types"},
	}
	for _, c := range cases {
		path := writeGz(t, goodLine+"\n"+c.line+"\n")
		_, err := data.ReadMolecules(path, 28, 4)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to name %s and %q", c.name, err, path, c.want)
		}
	}
}

func TestReadMoleculesTruncatedGzip(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for i := 0; i < 200; i++ {
		zw.Write([]byte(goodLine + "\n"))
	}
	zw.Close()
	path := filepath.Join(t.TempDir(), "cut.jsonl.gz")
	os.WriteFile(path, buf.Bytes()[:buf.Len()-12], 0o644)
	_, err := data.ReadMolecules(path, 28, 4)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "truncated or corrupt gzip") {
		t.Fatalf("error %v", err)
	}
	plain := filepath.Join(t.TempDir(), "plain.jsonl.gz")
	os.WriteFile(plain, []byte(goodLine), 0o644)
	if _, err := data.ReadMolecules(plain, 28, 4); err == nil || !strings.Contains(err.Error(), "not a gzip file") {
		t.Fatalf("plain text: error %v", err)
	}
}

func TestDataDirAndDatasetErrors(t *testing.T) {
	dir := testdata.Dir(t)
	missing := filepath.Join(t.TempDir(), "nowhere")
	_, err := data.ResolveDataDir(missing)
	if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "-data") || !strings.Contains(err.Error(), data.EnvDataDir) {
		t.Fatalf("missing folder: %v", err)
	}
	t.Setenv(data.EnvDataDir, missing)
	if _, err := data.ResolveDataDir(""); err == nil || !strings.Contains(err.Error(), "$"+data.EnvDataDir) {
		t.Fatalf("missing folder from env: %v", err)
	}
	if _, _, err := data.LoadSplit(dir, "zinc12k", "test"); err == nil || !strings.Contains(err.Error(), `unknown dataset "zinc12k"`) {
		t.Fatalf("unknown dataset: %v", err)
	}
	if _, _, err := data.LoadSplit(dir, "zinc", "dev"); err == nil || !strings.Contains(err.Error(), `unknown split "dev"`) {
		t.Fatalf("unknown split: %v", err)
	}
	if _, _, err := data.LoadSplit(t.TempDir(), "zinc", "test"); err == nil || !strings.Contains(err.Error(), "atom_types.json not found") {
		t.Fatalf("empty folder: %v", err)
	}
}

func TestBatchIsDisjointUnion(t *testing.T) {
	gs, _ := testdata.Load(t, "zinc", "test")
	gs = gs[:5]
	b, err := data.NewBatch(gs)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Union.Validate(); err != nil {
		t.Fatal(err)
	}
	nodes, edges := 0, 0
	for i, g := range gs {
		if int(b.NodeOff[i]) != nodes || int(b.EdgeOff[i]) != edges {
			t.Fatalf("graph %d offsets %d/%d, want %d/%d", i, b.NodeOff[i], b.EdgeOff[i], nodes, edges)
		}
		for m := range g.Src {
			e := edges + m
			if b.Union.Src[e] != g.Src[m]+int32(nodes) || b.Union.Dst[e] != g.Dst[m]+int32(nodes) || b.Union.Edge.Cat[e] != g.Edge.Cat[m] {
				t.Fatalf("graph %d edge %d not shifted", i, m)
			}
		}
		for v := 0; v < g.N; v++ {
			if b.NodeGraph[nodes+v] != int32(i) || b.Union.Node.Cat[nodes+v] != g.Node.Cat[v] {
				t.Fatalf("graph %d node %d", i, v)
			}
		}
		if b.Y[i] != g.Y[0] || b.CLS[i] != -1 {
			t.Fatalf("graph %d target/CLS", i)
		}
		nodes += g.N
		edges += g.NumEdges()
	}
	if b.Union.N != nodes || int(b.NodeOff[5]) != nodes || int(b.EdgeOff[5]) != edges {
		t.Fatal("totals")
	}
	mixed := []*data.Graph{gs[0], {N: 1, Node: data.Features{FloatDim: 1, Float: []float32{1}}}}
	if _, err := data.NewBatch(mixed); err == nil {
		t.Fatal("mixed feature widths accepted")
	}
	if _, err := data.NewBatch(nil); err == nil {
		t.Fatal("empty batch accepted")
	}
}

// TestApplySigns flips each column of a row-major encoding by its own sign, the same for every
// row (3 nodes × 2 columns, hand-computed).
func TestApplySigns(t *testing.T) {
	lap := []float32{1, 2, 3, 4, 5, 6}
	data.ApplySigns(lap, []float32{-1, 1})
	want := []float32{-1, 2, -3, 4, -5, 6}
	for i := range want {
		if lap[i] != want[i] {
			t.Fatalf("got %v, want %v", lap, want)
		}
	}
}
