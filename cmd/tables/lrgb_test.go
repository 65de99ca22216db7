package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

// The grids of table:peptides-func, from this package's folder.
var (
	pepGrid      = filepath.Join("..", "..", "configs", "grids", "lrgb-peptides-func.yaml")
	pepBaselines = filepath.Join("..", "..", "configs", "grids", "lrgb-peptides-func-baselines.yaml")
)

// writePeptidesRun writes one finished Peptides-func run under root: its result.json (final test
// AP final) and a metrics.jsonl of three epochs whose validation AP is best at epoch 1, where the
// test AP is best. hash is its config hash ("" for protocolHash).
func writePeptidesRun(t *testing.T, root, enc string, cls bool, r int, seed int64, final, best float64, hash string) {
	t.Helper()
	name := fmt.Sprintf("peptides-func-gatedgcn-%s-r%d", enc, r)
	if cls {
		name = fmt.Sprintf("peptides-func-gatedgcn-%s-cls-r%d", enc, r)
	}
	if hash == "" {
		hash = protocolHash
	}
	dir := filepath.Join(root, name, fmt.Sprintf("seed%d", seed))
	eps := []runfiles.Epoch{
		{Epoch: 0, LR: 1e-3, ValLoss: 0.5, ValMetric: 0.3, TestMetric: 0.3},
		{Epoch: 1, LR: 1e-3, ValLoss: 0.4, ValMetric: 0.7, TestMetric: best},
		{Epoch: 2, LR: 1e-3, ValLoss: 0.45, ValMetric: 0.6, TestMetric: final},
	}
	if err := runfiles.WriteMetrics(filepath.Join(dir, runfiles.MetricsFile), eps); err != nil {
		t.Fatal(err)
	}
	res := &runfiles.Result{Name: name, Dataset: "peptides-func", Model: "gatedgcn", Encoding: enc, CLS: cls, R: r, Seed: seed,
		Metric: runfiles.MetricAP, TestMetric: final, ValMetric: 0.6, TrainMetric: 0.8, Epochs: 3, SecondsPerEpoch: 20,
		TotalSeconds: 90, Params: 499046, Device: "cuda", StoppedBy: runfiles.StopMinLR, ConfigHash: hash}
	if err := runfiles.WriteResult(filepath.Join(dir, runfiles.ResultFile), res); err != nil {
		t.Fatal(err)
	}
}

// Peptides-func runs under -runs make the LRGB table: the rewired settings by r (final epoch and,
// in brackets, the best validation epoch), our baselines against LRGB's published rows with their
// sources, and the differences between the frameworks; its files are written as any table's.
func TestTablesPeptidesFunc(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	for i, seed := range []int64{41, 95, 12, 35} {
		d := float64(i) * 0.01
		writePeptidesRun(t, runs, "adj", false, 1, seed, 0.60+d, 0.62+d, "")   // 0.615 ± 0.011 [0.635 ± 0.011]
		writePeptidesRun(t, runs, "adj", true, 8, seed, 0.64, 0.66, "")        // 0.640 ± 0.000 [0.660 ± 0.000]
		writePeptidesRun(t, runs, "none", false, 1, seed, 0.57+d, 0.585+d, "") // 0.585 ± 0.011 [0.600 ± 0.011]
	}
	writePeptidesRun(t, runs, "rwse", false, 1, 41, 0.60, 0.61, "")
	writeRuns(t, runs) // ZINC and CLUSTER runs keep their own tables
	out := filepath.Join(t.TempDir(), "docs")
	var so, se bytes.Buffer
	if code := run([]string{"-runs", runs, "-out", out}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	for _, f := range []string{"peptides-func.md", "peptides-func.tex", "peptides-func-metric.png", "peptides-func-curves-gatedgcn-adj.png", "zinc.md"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, "peptides-func.md"))
	for _, want := range []string{
		"## table:peptides-func: peptides-func, test AP (higher is better)",
		"| r | gatedgcn-adj | gatedgcn-adj-cls |",
		"| 1 | 0.615 ± 0.011 [0.635 ± 0.011] | – |",
		"| 8 | – | 0.640 ± 0.000 [0.660 ± 0.000] |",
		"| GatedGCN, this framework (gatedgcn-none, r = 1) | 0.585 ± 0.011 | 0.600 ± 0.011 | 499,046 | this framework, peptides-func-gatedgcn-none-r1 | within 2σ of GatedGCN [1] (Δ +0.0136, 2σ 0.0154) |",
		"| GatedGCN+RWSE, this framework (gatedgcn-rwse, r = 1) | 0.600 †1/4 | 0.610 |",
		"| GatedGCN | – | 0.5864 ± 0.0077 | 509,368 | [1] | |",
		"| GatedGCN+RWSE | – | 0.6069 ± 0.0035 | 506,280 | [1] | |",
		"| Transformer+LapPE | – | 0.6326 ± 0.0126 | 488,426 | [1] | |",
		"[1] V. P. Dwivedi",
		"Long Range Graph Benchmark",
		"github.com/vijaydwivedi75/lrgb at commit d48dd4462019bd26c367a1ab303a1c07349e40d8",
		"Differences between this framework and LRGB",
		"2. End of training",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("peptides-func.md lacks %q:\n%s", want, md)
		}
	}
	tex, _ := os.ReadFile(filepath.Join(out, "peptides-func.tex"))
	if !strings.Contains(string(tex), "GatedGCN+RWSE [1] & \\multicolumn{2}{l}{-- [0.6069$\\pm$0.0035], 506,280 parameters}") {
		t.Errorf("peptides-func.tex:\n%s", tex)
	}
	// the other tables are as before, and the paper's summary has no peptides column
	zinc, _ := os.ReadFile(filepath.Join(out, "zinc.md"))
	res, _ := os.ReadFile(filepath.Join(out, "results.md"))
	if !strings.Contains(string(zinc), "0.285 ± 0.011 (0.287 ± 0.010)") || strings.Contains(string(res), "peptides") {
		t.Errorf("zinc.md:\n%s\nresults.md:\n%s", zinc, res)
	}

	// -external replaces the published rows; one that fails its checks is an error
	ext := filepath.Join(t.TempDir(), "external.json")
	os.WriteFile(ext, []byte(`{"note":"n","sources":[{"id":"x","citation":"A. Author, \"A Paper\"","where":"its Table 9","selection":"best validation epoch","checked":"against its text"}],`+
		`"rows":[{"table":"table:peptides-func","method":"Other","mean":"0.7000","std":"0.0100","source":"x","checked":"Table 9, row Other"}]}`), 0o644)
	so.Reset()
	if code := run([]string{"-runs", runs, "-table", "table:peptides-func", "-external", ext}, &so, &se); code != 0 {
		t.Fatalf("-external: exit %d: %s", code, se.String())
	}
	if s := so.String(); !strings.Contains(s, "| Other | – | 0.7000 ± 0.0100 | – | [1] | |") || !strings.Contains(s, "[1] A. Author, \"A Paper\": its Table 9.") ||
		strings.Contains(s, "0.5864") || !strings.Contains(s, "| GatedGCN, this framework (gatedgcn-none, r = 1) | 0.585 ± 0.011 | 0.600 ± 0.011 | 499,046 | this framework, peptides-func-gatedgcn-none-r1 | – |") {
		t.Errorf("-external:\n%s", s)
	}
	os.WriteFile(ext, []byte(`{"note":"n","sources":[],"rows":[{"table":"table:peptides-func","method":"Other","mean":"0.7","std":"0.01","source":"x","checked":"k"}]}`), 0o644)
	se.Reset()
	if code := run([]string{"-runs", runs, "-external", ext}, &so, &se); code != 1 || !strings.Contains(se.String(), `unknown source "x"`) {
		t.Errorf("an unsourced row: exit %d, %s", code, se.String())
	}
}

// Two grids of one table: table:peptides-func from the rewiring grid and the baselines grid
// (each run with its grid's config hash, the planned seeds from the grids); a run of another
// config in a grid's folder is left out, and grids of two tables, or of one run, are refused.
func TestTablesPeptidesFuncTwoGrids(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	_, hashes := gridPlan(t, pepGrid)
	_, base := gridPlan(t, pepBaselines)
	for k, v := range base {
		hashes[k] = v
	}
	for _, seed := range []int64{41, 95} {
		writePeptidesRun(t, runs, "adj", true, 4, seed, 0.65, 0.67, hashes["peptides-func-gatedgcn-adj-cls-r4"])
		writePeptidesRun(t, runs, "none", false, 1, seed, 0.58, 0.59, hashes["peptides-func-gatedgcn-none-r1"])
	}
	for _, seed := range []int64{41, 95, 12, 35} {
		writePeptidesRun(t, runs, "rwse", false, 1, seed, 0.60, 0.605, hashes["peptides-func-gatedgcn-rwse-r1"])
	}
	// a none run with self-loops (the default) is another config than the baseline's
	writePeptidesRun(t, runs, "none", false, 1, 12, 0.1, 0.1, "")
	var so, se bytes.Buffer
	if code := run([]string{"-grid", pepGrid, "-grid", pepBaselines, "-runs", runs}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	md := so.String()
	for _, want := range []string{
		"| 4 | – | 0.650 ± 0.000 †2/4 [0.670 ± 0.000] |",
		"| GatedGCN, this framework (gatedgcn-none, r = 1) | 0.580 ± 0.000 †2/4 | 0.590 ± 0.000 |",
		"| GatedGCN+RWSE, this framework (gatedgcn-rwse, r = 1) | 0.600 ± 0.000 | 0.605 ± 0.000 | 499,046 | this framework, peptides-func-gatedgcn-rwse-r1 | within 2σ of GatedGCN+RWSE [1] (Δ -0.0019, 2σ 0.0070) |",
		"| GatedGCN | – | 0.5864 ± 0.0077 | 509,368 | [1] | |",
		"| " + filepath.Join(runs, "peptides-func-gatedgcn-none-r1", "seed12") + " | 12 | not the grid's run",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-grid", pepGrid, "-grid", filepath.Join("..", "..", "configs", "grids", "lrgb-peptides-struct.yaml")}, "give grids of one table"},
		{[]string{"-grid", pepGrid, "-grid", pepGrid}, "both run peptides-func-gatedgcn-adj-r1 seed 41"},
		{[]string{"-grid", pepBaselines, "-table", "table:zinc"}, "-table table:zinc, but grid lrgb-peptides-func-baselines fills table:peptides-func"},
	} {
		se.Reset()
		if code := run(append(c.args, "-runs", runs), &so, &se); code != 2 || !strings.Contains(se.String(), c.want) {
			t.Errorf("%v: exit %d, %s; want 2 and %q", c.args, code, se.String(), c.want)
		}
	}
}
