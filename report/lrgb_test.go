package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/report/paper"
	"github.com/rewiregnn/rewiregnn/report/results"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// peptidesRuns writes finished Peptides-func runs under root: per seed a result.json with the
// final test AP and a metrics.jsonl of three epochs whose validation AP peaks at epoch 1, where
// the test AP is best[i] (none when best is nil).
func peptidesRuns(t *testing.T, root string) []*results.Run {
	t.Helper()
	var runs []*results.Run
	put := func(enc string, cls bool, r int, params int, final, best []float64) {
		name := fmt.Sprintf("peptides-func-gatedgcn-%s-r%d", enc, r)
		if cls {
			name = fmt.Sprintf("peptides-func-gatedgcn-%s-cls-r%d", enc, r)
		}
		for i, seed := range []int64{41, 95, 12, 35}[:len(final)] {
			dir := filepath.Join(root, name, fmt.Sprintf("seed%d", seed))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			res := &runfiles.Result{Name: name, Dataset: "peptides-func", Model: "gatedgcn", Encoding: enc, CLS: cls, R: r, Seed: seed,
				Metric: runfiles.MetricAP, TestMetric: final[i], ValMetric: 0.5, TrainMetric: 0.8, Epochs: 3, SecondsPerEpoch: 10,
				TotalSeconds: 3600, Params: params, Device: "cuda", StoppedBy: runfiles.StopMinLR, ConfigHash: protocolHash}
			if err := runfiles.WriteResult(filepath.Join(dir, runfiles.ResultFile), res); err != nil {
				t.Fatal(err)
			}
			if i < len(best) {
				var lines []byte
				for ep, e := range []runfiles.Epoch{
					{Epoch: 0, ValMetric: 0.40, TestMetric: 0.30},
					{Epoch: 1, ValMetric: 0.70, TestMetric: best[i]}, // the best validation epoch
					{Epoch: 2, ValMetric: 0.70, TestMetric: 0.10},    // a tie: the first epoch counts
				} {
					e.Epoch = ep
					l, _ := json.Marshal(e)
					lines = append(append(lines, l...), '\n')
				}
				if err := os.WriteFile(filepath.Join(dir, runfiles.MetricsFile), lines, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			runs = append(runs, &results.Run{Dir: dir, Result: res})
		}
	}
	four := func(a, b, c, d float64) []float64 { return []float64{a, b, c, d} }
	put("adj", false, 1, 499316, four(0.60, 0.62, 0.61, 0.63), four(0.62, 0.64, 0.63, 0.65))  // 0.615 ± 0.011 [0.635 ± 0.011]
	put("adj", false, 4, 499721, four(0.64, 0.64, 0.64, 0.64), four(0.66, 0.66, 0.66, 0.66))  // bold: best of the column
	put("adj", true, 4, 500936, []float64{0.65, 0.66}, []float64{0.67, 0.68})                 // 2 of 4 seeds
	put("none", false, 1, 499046, four(0.58, 0.58, 0.58, 0.58), four(0.59, 0.59, 0.59, 0.59)) // LRGB's GatedGCN: 0.5864 ± 0.0077
	put("rwse", false, 1, 501341, four(0.60, 0.61, 0.60, 0.61), []float64{0.62, 0.63, 0.62})  // one seed without metrics.jsonl
	return runs
}

func peptidesTable(t *testing.T) *LRGBTable {
	t.Helper()
	groups, err := results.Aggregate(peptidesRuns(t, t.TempDir()), results.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tab, err := Build("table:peptides-func", groups, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ext, err := paper.LoadExternal()
	if err != nil {
		t.Fatal(err)
	}
	lt, err := BuildLRGB(tab, ext)
	if err != nil {
		t.Fatal(err)
	}
	return lt
}

func TestLRGBTableLayout(t *testing.T) {
	lt := peptidesTable(t)
	if fmt.Sprint(lt.Rows) != "[1 2 3 4 5 6 7 8]" || fmt.Sprint(lt.Columns) != "[gcn-adj gcn-adj-cls]" || fmt.Sprint(lt.Baselines) != "[gcn-none gcn-rwse]" {
		t.Errorf("rows %v, columns %v, baselines %v", lt.Rows, lt.Columns, lt.Baselines)
	}
	g := lt.T.Group("gcn-adj", 1)
	if bv := lt.BestVal(g); bv.N != 4 || fmt.Sprintf("%.4f %.4f", bv.Mean, bv.Std) != "0.6350 0.0112" {
		t.Errorf("best-validation statistic of gcn-adj r=1: %+v", bv)
	}
	if bv := lt.BestVal(lt.T.Group("gcn-rwse", 1)); bv.N != 3 {
		t.Errorf("gcn-rwse: %d seeds with epochs, want 3", bv.N)
	}
	if len(lt.External) != 7 || len(lt.Sources) != 4 || lt.Sources[0].ID != "lrgb" || lt.Sources[3].ID != "drew" {
		t.Errorf("external rows %d, sources %+v", len(lt.External), lt.Sources)
	}
}

func TestLRGBTableMarkdown(t *testing.T) {
	md := peptidesTable(t).Markdown()
	for _, want := range []string{
		"## table:peptides-func: peptides-func, test AP (higher is better)",
		"| r | gatedgcn-adj | gatedgcn-adj-cls |",
		"| 1 | 0.615 ± 0.011 [0.635 ± 0.011] | – |",
		"| 4 | **0.640 ± 0.000** [0.660 ± 0.000] | 0.655 ± 0.005 †2/4 [0.675 ± 0.005] |",
		"| 8 | – | – |",
		// our baselines, against LRGB's published rows
		"| GatedGCN, this framework (gatedgcn-none, r = 1) | 0.580 ± 0.000 | 0.590 ± 0.000 | 499,046 | this framework, peptides-func-gatedgcn-none-r1 | within 2σ of GatedGCN [1] (Δ +0.0036, 2σ 0.0154) |",
		"| GatedGCN+RWSE, this framework (gatedgcn-rwse, r = 1) | 0.605 ± 0.005 | 0.623 ± 0.005, 3 of 4 seeds | 501,341 | this framework, peptides-func-gatedgcn-rwse-r1 | outside 2σ of GatedGCN+RWSE [1] (Δ +0.0164, 2σ 0.0070) |",
		"| GatedGCN | – | 0.5864 ± 0.0077 | 509,368 | [1] | |",
		"| GatedGCN+RWSE | – | 0.6069 ± 0.0035 | 506,280 | [1] | |",
		"| Transformer+LapPE | – | 0.6326 ± 0.0126 | 488,426 | [1] | |",
		"| SAN+RWSE | – | 0.6439 ± 0.0075 | 499,822 | [1] | |",
		"| GraphGPS | – | 0.6535 ± 0.0041 | – | [2] | |",
		"| GatedGCN+RWSE+virtual node | – | 0.6685 ± 0.0062 | – | [3] | |",
		"| DRew-GCN+LapPE | – | 0.7150 ± 0.0044 | – | [4] | |",
		"[4] B. Gutteridge et al., \"DRew: Dynamically Rewired Message Passing with Delay\", ICML 2023",
		// the source and the differences
		"[1] V. P. Dwivedi, L. Rampášek, M. Galkin, A. Parviz, G. Wolf, A. T. Luu, D. Beaini, \"Long Range Graph Benchmark\"",
		"d48dd4462019bd26c367a1ab303a1c07349e40d8, aggr_results/results-peptides-func.json",
		"Selection: per seed the test AP at the epoch of best validation AP",
		"1. Epoch reported: ours is the model after the last epoch",
		"LRGB's min_lr 1e-5 is a floor",
		"Alike: the splits",
		// the run statistics
		"| gatedgcn-adj | 1 | 4/4 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
	if n := strings.Count(md, "\n| GatedGCN"); n != 5 {
		t.Errorf("%d GatedGCN reference rows, want 5 (ours and LRGB's, plain and +RWSE; Cai et al.'s with a virtual node)", n)
	}
}

func TestLRGBTableLaTeX(t *testing.T) {
	tex := peptidesTable(t).LaTeX()
	for _, want := range []string{
		"\\begin{tabular}{l l l}",
		"r & gatedgcn-adj & gatedgcn-adj-cls \\\\",
		"r=1 & 0.615$\\pm$0.011 [0.635$\\pm$0.011] & -- \\\\",
		"r=4 & \\textbf{0.640$\\pm$0.000} [0.660$\\pm$0.000] & 0.655$\\pm$0.005$^{\\dagger 2/4}$ [0.675$\\pm$0.005] \\\\",
		"GatedGCN, this framework (gatedgcn-none, r = 1) & \\multicolumn{2}{l}{0.580$\\pm$0.000 [0.590$\\pm$0.000], 499,046 parameters} \\\\",
		"GatedGCN [1] & \\multicolumn{2}{l}{-- [0.5864$\\pm$0.0077], 509,368 parameters} \\\\",
		"SAN+RWSE [1] & \\multicolumn{2}{l}{-- [0.6439$\\pm$0.0075], 499,822 parameters} \\\\",
		"aggr\\_results/results-peptides-func.json",
		"metric\\_best: ap",
		"$\\sim$500K",
		"(1) Epoch reported",
		"\\label{ours:table:peptides-func}",
	} {
		if !strings.Contains(tex, want) {
			t.Errorf("lacks %q:\n%s", want, tex)
		}
	}
	for _, bad := range []string{"±", "→", "–", "agg_runs", "min_lr"} {
		if strings.Contains(tex, bad) {
			t.Errorf("unescaped %q in:\n%s", bad, tex)
		}
	}
}

// Without external results the table still has our rows; a setting beyond the grids becomes a
// column (rewired) or a reference row (r = 1, no CLS, no edge encoding).
func TestLRGBTableWithoutExternal(t *testing.T) {
	runs := peptidesRuns(t, t.TempDir())
	extra := *runs[0].Result
	extra.Encoding, extra.R, extra.Name = "short", 2, "peptides-func-gatedgcn-short-r2"
	runs = append(runs, &results.Run{Dir: filepath.Join(t.TempDir(), "x"), Result: &extra})
	groups, err := results.Aggregate(runs, results.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tab, err := Build("table:peptides-func", groups, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	lt, err := BuildLRGB(tab, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(lt.Columns) != "[gcn-adj gcn-adj-cls gcn-short]" || len(lt.External) != 0 || len(lt.Sources) != 0 {
		t.Errorf("columns %v, external %d, sources %d", lt.Columns, len(lt.External), len(lt.Sources))
	}
	md := lt.Markdown()
	if !strings.Contains(md, "| 2 | – | – | 0.600 †1/4 |") || strings.Contains(md, "[1]") {
		t.Errorf("markdown:\n%s", md)
	}
}

// A table without runs yet (a fresh clone, or a grid not run) lists its rows and the published
// ones, with the dataset's metric.
func TestLRGBTableWithoutRuns(t *testing.T) {
	tab, err := Build("table:peptides-func", nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	tab.Dataset = "peptides-func"
	ext, err := paper.LoadExternal()
	if err != nil {
		t.Fatal(err)
	}
	lt, err := BuildLRGB(tab, ext)
	if err != nil {
		t.Fatal(err)
	}
	md := lt.Markdown()
	for _, want := range []string{"test AP (higher is better)", "| 8 | – | – |", "| GatedGCN, this framework (gatedgcn-none, r = 1) | – | – | – | this framework | – |",
		"| GatedGCN | – | 0.5864 ± 0.0077 | 509,368 | [1] | |", "No runs of this table have finished."} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
}
