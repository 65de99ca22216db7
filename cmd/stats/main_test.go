package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/internal/testdata"
)

func runJSON(t *testing.T, args ...string) []Row {
	t.Helper()
	var out bytes.Buffer
	if err := run(append(args, "-json", "-repeat", "1"), &out); err != nil {
		t.Fatal(err)
	}
	var rows []Row
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.String())
	}
	return rows
}

// The density column of the paper's ZINC table (docs/protocol.md §"Density"), r = 1..10.
func TestZINCDensityMatchesPaper(t *testing.T) {
	paper := []float64{.14, .27, .40, .52, .62, .71, .79, .85, .90, .94}
	rows := runJSON(t, "-data", testdata.Dir(t), "-dataset", "zinc", "-split", "test", "-r", "1-10")
	if len(rows) != 10 {
		t.Fatalf("%d rows", len(rows))
	}
	for i, row := range rows {
		if row.R != i+1 || row.Graphs != 1000 || !row.Lossless {
			t.Errorf("row %d: %+v", i, row)
		}
		if got := fmt.Sprintf("%.2f", row.Density); got != fmt.Sprintf("%.2f", paper[i]) {
			t.Errorf("r=%d: density %.4f rounds to %s, paper %.2f", row.R, row.Density, got, paper[i])
		}
		if math.Abs(row.NodesMean-23.117) > 1e-9 || row.RewireUsPerGraph <= 0 || row.LapPEUsPerGraph <= 0 {
			t.Errorf("r=%d: nodes %.3f, times %.2f/%.2f", row.R, row.NodesMean, row.RewireUsPerGraph, row.LapPEUsPerGraph)
		}
	}
}

// AQSOL validation + test densities with the diagonal, computed independently of this code
// when the protocol was set (1 992 graphs, several with isolated nodes and several components;
// counting convention: docs/protocol.md §"Density").
func TestAQSOLValTestDensity(t *testing.T) {
	ref := []float64{.161, .313, .460, .580, .674, .749, .805, .848, .878, .900}
	dir := testdata.Dir(t)
	val := runJSON(t, "-data", dir, "-dataset", "aqsol", "-split", "val", "-r", "1-10")
	test := runJSON(t, "-data", dir, "-dataset", "aqsol", "-split", "test", "-r", "1-10")
	for i := range ref {
		d := (val[i].Density*float64(val[i].Graphs) + test[i].Density*float64(test[i].Graphs)) / float64(val[i].Graphs+test[i].Graphs)
		if math.Abs(d-ref[i]) > 0.0005 || !val[i].Lossless || !test[i].Lossless {
			t.Errorf("r=%d: density %.4f, reference %.3f (lossless %v/%v)", i+1, d, ref[i], val[i].Lossless, test[i].Lossless)
		}
	}
}

func TestCLSAddsNodeAndEdges(t *testing.T) {
	dir := testdata.Dir(t)
	plain := runJSON(t, "-data", dir, "-dataset", "zinc", "-split", "val", "-r", "2")
	cls := runJSON(t, "-data", dir, "-dataset", "zinc", "-split", "val", "-r", "2", "-cls")
	p, c := plain[0], cls[0]
	// One CLS node; 2n + 1 edges per graph (n = original nodes).
	if math.Abs(c.NodesMean-p.NodesMean-1) > 1e-9 || math.Abs(c.EdgesMean-p.EdgesMean-(2*p.NodesMean+1)) > 1e-9 {
		t.Errorf("cls: nodes %.3f→%.3f, edges %.3f→%.3f", p.NodesMean, c.NodesMean, p.EdgesMean, c.EdgesMean)
	}
	if c.Density != p.Density || !c.Lossless {
		t.Errorf("cls changed density %.4f→%.4f or lost recovery", p.Density, c.Density)
	}
}

// TestRWSEColumns: the random-walk encoding's time per graph is measured, and its size per graph
// is 4 bytes × k per node of the preprocessed graph (the CLS node's row included), k from
// -rw-steps (default 16).
func TestRWSEColumns(t *testing.T) {
	dir := testdata.Dir(t)
	for _, c := range []struct {
		args []string
		k    int
	}{
		{nil, 16},
		{[]string{"-rw-steps", "8"}, 8},
		{[]string{"-rw-steps", "5", "-cls"}, 5},
	} {
		rows := runJSON(t, append([]string{"-data", dir, "-dataset", "zinc", "-split", "val", "-r", "1,2"}, c.args...)...)
		for _, row := range rows {
			if row.RWSteps != c.k || row.RWSEUsPerGraph <= 0 || row.RWSEUsPerGraph != rows[0].RWSEUsPerGraph {
				t.Errorf("%v r=%d: k %d (want %d), %.3f µs per graph (r=1: %.3f)", c.args, row.R, row.RWSteps, c.k, row.RWSEUsPerGraph, rows[0].RWSEUsPerGraph)
			}
			want := 4 * float64(c.k) * row.NodesMean
			if math.Abs(row.RWSEBytesPerGraph-want) > 1e-9*want || want == 0 {
				t.Errorf("%v r=%d: %.3f bytes per graph, want 4·%d·%.3f = %.3f", c.args, row.R, row.RWSEBytesPerGraph, c.k, row.NodesMean, want)
			}
		}
	}
}

func TestTableOutput(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-data", testdata.Dir(t), "-dataset", "zinc", "-split", "val", "-r", "1,3", "-repeat", "1"}, &out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"density", "lossless", "RWSE µs/graph", "RWSE B/graph", "zinc val, q=8, k=16"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	if lines := strings.Count(text, "\n"); lines != 8 { // source, original graphs, blank, header, 2 rows, blank, footer
		t.Errorf("%d lines:\n%s", lines, text)
	}
}

func TestBadArguments(t *testing.T) {
	dir := testdata.Dir(t)
	missing := filepath.Join(t.TempDir(), "none")
	cases := map[string][]string{
		"-r: radii \"0\": r = 0":                               {"-data", dir, "-r", "0"},
		"-r: radii \"-2\"":                                     {"-data", dir, "-r", "-2"},
		"-q -1: needs at least one":                            {"-data", dir, "-r", "1", "-q", "-1"},
		"-rw-steps 0: needs at least one step and at most 256": {"-data", dir, "-r", "1", "-rw-steps", "0"},
		"-rw-steps 300: needs at least one step":               {"-data", dir, "-r", "1", "-rw-steps", "300"},
		`unknown dataset "zync"`:                               {"-data", dir, "-dataset", "zync"},
		`data folder "` + missing + `"`:                        {"-data", missing},
		`unknown split "dev"`:                                  {"-data", dir, "-split", "dev"},
		"flag provided but not defined":                        {"-radius", "3"},
	}
	for want, args := range cases {
		var out bytes.Buffer
		err := run(args, &out)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: error %v, want %q", args, err, want)
		}
	}
}

// TestSuggest: -suggest applies the paper's rule to the training split (ZINC: r = 4, as the
// paper's density column has it: .14 .27 .40 .52); -json gives the densities and the choice;
// a dataset that never gets dense gets no suggestion and says why.
func TestSuggest(t *testing.T) {
	cache := t.TempDir()
	var out bytes.Buffer
	if err := run([]string{"-data", testdata.Dir(t), "-dataset", "zinc", "-suggest", "-json", "-cache", cache}, &out); err != nil {
		t.Fatal(err)
	}
	var sg Suggestion
	if err := json.Unmarshal(out.Bytes(), &sg); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.String())
	}
	if sg.R != 4 || len(sg.Density) != 4 || sg.Split != "train" || sg.Graphs < 1000 || sg.Density[2] > 0.5 || sg.Density[3] <= 0.5 {
		t.Errorf("zinc: %+v; want r = 4 with densities r = 1..4", sg)
	}
	out.Reset()
	if err := run([]string{"-dataset", "neighborsmatch-2", "-suggest", "-cache", "off"}, &out); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "no suggestion") || !strings.Contains(s, "every graph reaches all it can") {
		t.Errorf("neighborsmatch-2 -suggest:\n%s", s)
	}
}

// TestPaperColumnAndSource: rows carry the paper's printed density for their r and the source
// of the files read (the public distribution in the fixture folder; the shared folder's JSON
// Lines otherwise), and the table prints the original graphs beside the paper's sizes.
func TestPaperColumnAndSource(t *testing.T) {
	rows := runJSON(t, "-data", filepath.Join("..", "..", "data", "testdata", "pyg"), "-dataset", "mnist", "-split", "all", "-r", "1-3")
	for i, want := range []string{".13", ".34", ".58"} {
		if rows[i].PaperDensity != want || rows[i].Source != "pyg" || rows[i].Graphs != 6 {
			t.Errorf("r=%d: paper %q source %q graphs %d", i+1, rows[i].PaperDensity, rows[i].Source, rows[i].Graphs)
		}
	}
	rows = runJSON(t, "-data", testdata.Dir(t), "-dataset", "zinc", "-r", "4")
	if rows[0].PaperDensity != ".52" || rows[0].Source != "jsonl" {
		t.Errorf("zinc r=4: paper %q source %q", rows[0].PaperDensity, rows[0].Source)
	}
	var out bytes.Buffer
	if err := run([]string{"-data", testdata.Dir(t), "-dataset", "zinc", "-r", "1", "-repeat", "1"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"source: zinc from the JSON Lines files", "original graphs (test): 1000, mean nodes 23.12", "23.16, 49.83", ".14"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// TestPeptidesFixture: the LRGB peptide fixtures (tiny chains, a ring and a molecule without
// bonds) rewire losslessly at every r; on the train split (3, 4 and 1 atoms; 2, 4 and 0 bonds)
// the density with the diagonal at r = 1 is the mean of (3+4)/9, (4+8)/16 and 1/1, and at r ≥ 2
// every graph is complete.
func TestPeptidesFixture(t *testing.T) {
	dir := filepath.Join("..", "..", "data", "testdata", "pyg")
	rows := runJSON(t, "-data", dir, "-dataset", "peptides-func", "-split", "train", "-r", "1-3")
	want := []float64{(7.0/9 + 12.0/16 + 1) / 3, 1, 1}
	for i, row := range rows {
		if row.Graphs != 3 || !row.Lossless || math.Abs(row.Density-want[i]) > 1e-12 || row.Source != "pyg" {
			t.Errorf("r=%d: %+v, want density %.4f", row.R, row, want[i])
		}
	}
	var out bytes.Buffer
	if err := run([]string{"-data", dir, "-dataset", "peptides-struct", "-split", "all", "-r", "2", "-cls", "-repeat", "1"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "LRGB's table, all splits: 150.94, 307.30") {
		t.Errorf("no LRGB sizes:\n%s", out.String())
	}
}
