package report

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/report/paper"
	"github.com/rewiregnn/rewiregnn/report/results"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// protocolHash stands for the config hash of a protocol run.
var protocolHash = strings.Repeat("5a", 32)

// zincRuns is a small synthetic result set of table:zinc.
func zincRuns() []*results.Run {
	var runs []*results.Run
	add := func(model, enc string, cls bool, r int, stop string, seedsTests map[int64]float64) {
		for seed, v := range seedsTests {
			res := &runfiles.Result{Name: "zinc-" + model + "-" + enc, Dataset: "zinc", Model: model, Encoding: enc,
				CLS: cls, R: r, Seed: seed, Metric: runfiles.MetricMAE, TestMetric: v, ValMetric: v + 0.02,
				TrainMetric: v / 2, Epochs: 200, SecondsPerEpoch: 1.5 * float64(r), TotalSeconds: 7200,
				Params: 101000, Device: "cuda", StoppedBy: runfiles.StopMinLR, ConfigHash: protocolHash}
			if stop != "" && seed == 41 {
				res.StoppedBy = stop
			}
			runs = append(runs, &results.Run{Dir: filepath.Join("runs", res.Name, "r", string(rune('0'+r)), "seed"), Result: res})
		}
	}
	four := func(a, b, c, d float64) map[int64]float64 { return map[int64]float64{41: a, 95: b, 12: c, 35: d} }
	add("gatedgcn", "adj", true, 1, "", four(0.28, 0.29, 0.30, 0.27)) // mean .285, std .01118
	add("gatedgcn", "adj", true, 2, "", four(0.20, 0.20, 0.19, 0.21)) // .200, .00707
	add("gatedgcn", "adj", false, 1, runfiles.StopMaxTime, four(0.33, 0.33, 0.33, 0.33))
	add("transformer", "adj", false, 2, "", map[int64]float64{41: 0.30, 95: 0.28}) // 2 of 4 seeds
	add("gatedgcn", "none", false, 1, "", four(0.6, 0.6, 0.6, 0.6))                // a setting the paper lacks
	add("gatedgcn", "adj", false, 2, "", four(0.5, 0.5, 0.5, 0.5))                 // far from the paper's cell
	return runs
}

// smallZinc is the paper's table:zinc cut to three columns and r = 1..3.
func smallZinc(t *testing.T) *paper.Table {
	f, err := paper.Load()
	if err != nil {
		t.Fatal(err)
	}
	full, _ := f.Table("table:zinc")
	pt := *full
	pt.Columns = []string{"trans-adj", "gcn-adj", "gcn-adj-cls"}
	pt.Rows = nil
	for _, r := range full.Rows[:3] {
		row := paper.Row{Label: r.Label, R: r.R, Density: r.Density, Cells: map[string]paper.Cell{}}
		for _, c := range pt.Columns {
			row.Cells[c] = r.Cells[c]
		}
		pt.Rows = append(pt.Rows, row)
	}
	return &pt
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (go test ./report -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test ./report -update rewrites it); got:\n%s", p, got)
	}
}

func TestZincMarkdownGolden(t *testing.T) {
	groups, err := results.Aggregate(zincRuns(), results.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := Build("table:zinc", groups, smallZinc(t), map[int]float64{1: 0.141, 2: 0.273})
	if err != nil {
		t.Fatal(err)
	}
	md := tb.Markdown()
	golden(t, "zinc.md", md)
	// the hand-computed cells, independent of the golden file
	for _, want := range []string{
		"**0.200 ± 0.007** (0.198 ± 0.011)",    // gcn-adj-cls r=2: pop std of .20 .20 .19 .21 = .00707
		"0.285 ± 0.011 (0.287 ± 0.010)",        // gcn-adj-cls r=1: pop std .01118
		"**0.330 ± 0.000** ‡1 (0.329 ± 0.023)", // gcn-adj r=1, one seed capped; better than its r=2
		"0.290 ± 0.010 †2/4 (0.297 ± 0.019)",   // alone in its column: not bold
		"| 3 | .40 | – | – (0.233 ± 0.010) |",
		"| gcn-none |",
		// vs paper: |Δ| against twice the paper's std
		"| min_lr 4 | within 2σ (Δ +0.002, 2σ 0.022) |", // gcn-adj-cls r=2: .200 - .198, 2 × .011
		"| max_time 1, min_lr 3 | within 2σ (Δ +0.001, 2σ 0.046) |",
		"| min_lr 4 | – |", // gcn-none: no paper cell
		"0.500 ± 0.000 (0.265 ± 0.021)",
		"| min_lr 4 | outside 2σ (Δ +0.235, 2σ 0.042) |", // gcn-adj r=2: .500 - .265, 2 × .021
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	tex := tb.LaTeX()
	golden(t, "zinc.tex", tex)
	if !strings.Contains(tex, `\textbf{0.200$\pm$0.007} {\scriptsize(0.198$\pm$0.011)}`) ||
		!strings.Contains(tex, `0.290$\pm$0.010$^{\dagger 2/4}$`) {
		t.Errorf("latex cells wrong:\n%s", tex)
	}
}

func TestBuildRejectsMixedMetrics(t *testing.T) {
	runs := zincRuns()
	runs[0].Result.Metric = runfiles.MetricAccuracy
	runs[0].Result.Encoding = "lp"
	groups, err := results.Aggregate(runs, results.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build("table:zinc", groups, nil, nil); err == nil || !strings.Contains(err.Error(), "metric") {
		t.Errorf("got %v", err)
	}
}

func TestSummaryFindsPaperSetting(t *testing.T) {
	f, err := paper.Load()
	if err != nil {
		t.Fatal(err)
	}
	res, _ := f.Table("table:results")
	for ds, want := range map[string]string{"pattern": "gcn-short 2", "cluster": "gcn-lp 3", "mnist": "gcn-adj-cls 2",
		"cifar10": "gcn-lp-cls 1", "zinc": "gcn-adj-cls 4", "aqsol": "gcn-adj-cls 1"} {
		ours := res.Rows[len(res.Rows)-1].Cells[ds]
		s, r, ok := paperChoice(f, ds, ours)
		if !ok || s+" "+string(rune('0'+r)) != want {
			t.Errorf("%s: %s %d %v, want %s (docs/protocol.md §\"Experiment grid\")", ds, s, r, ok, want)
		}
	}
	groups, _ := results.Aggregate(zincRuns(), results.Options{})
	md := (&Summary{Paper: res, Tables: f, Groups: groups}).Markdown()
	if !strings.Contains(md, "| here, best |") || !strings.Contains(md, "0.200 ± 0.007 (gcn-adj-cls r=2)") ||
		!strings.Contains(md, "– (gcn-adj-cls r=4)") {
		t.Errorf("summary:\n%s", md)
	}
}

// Reduced-budget runs that were included are marked § with their budgets listed; runs left out
// are listed with the reason.
func TestReducedAndLeftOutRuns(t *testing.T) {
	runs := zincRuns()
	for _, r := range runs {
		if r.Result.CLS && r.Result.R == 2 && r.Result.Seed != 12 {
			r.Result.Departures = []runfiles.Departure{{Key: "dataset.subset", Protocol: "0", Used: "1000"}}
		}
	}
	runs[0].Result.StoppedBy = runfiles.StopSignal
	kept, left := results.Select(runs, true)
	groups, err := results.Aggregate(kept, results.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := Build("table:zinc", groups, smallZinc(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	tb.LeftOut = left
	md := tb.Markdown()
	for _, want := range []string{
		"**0.200 ± 0.007** §3 (0.198 ± 0.011)",
		"- gatedgcn-adj-cls r=2, 3 of 4 seeds: dataset.subset 1000 (protocol 0)",
		"| " + runs[0].Dir + " | " + fmt.Sprint(runs[0].Result.Seed) + " | stopped by a signal",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if tex := tb.LaTeX(); !strings.Contains(tex, `$^{\S 3}$`) {
		t.Errorf("latex lacks the § mark:\n%s", tex)
	}
	// without the flag the reduced runs leave the cell, so the best r of the column changes
	kept, _ = results.Select(runs, false)
	groups, _ = results.Aggregate(kept, results.Options{})
	tb, _ = Build("table:zinc", groups, smallZinc(t), nil)
	if md := tb.Markdown(); strings.Contains(md, "§3") || !strings.Contains(md, "**0.190** †1/4") {
		t.Errorf("without -include-reduced:\n%s", md)
	}
}

// TestCellNotes checks a grid's footnotes: the cell of the noted run gets ¶k, numbered row by row,
// the note is listed under the table with its column and r, in Markdown and LaTeX, and a note of
// a run without a finished cell marks nothing.
func TestCellNotes(t *testing.T) {
	runs := zincRuns()
	for _, r := range runs { // names as the trainer gives them: one per cell
		res := r.Result
		res.Name = fmt.Sprintf("zinc-%s-%s%s-r%d", res.Model, res.Encoding, map[bool]string{true: "-cls"}[res.CLS], res.R)
	}
	groups, err := results.Aggregate(runs, results.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := Build("table:zinc", groups, smallZinc(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	r2, r1 := tb.Group("gcn-adj-cls", 2), tb.Group("gcn-adj", 1)
	if r2 == nil || r1 == nil {
		t.Fatal("the test runs lack gcn-adj-cls r=2 or gcn-adj r=1")
	}
	tb.Notes = map[string]string{r2.Name: "second note", r1.Name: "first note", "zinc-nothing-r9": "no cell"}
	md := tb.Markdown()
	for _, want := range []string{
		"**0.330 ± 0.000** ‡1 ¶1 (0.329 ± 0.023)",
		"**0.200 ± 0.007** ¶2 (0.198 ± 0.011)",
		"¶1 gcn-adj, r = 1: first note\n\n¶2 gcn-adj-cls, r = 2: second note\n\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "no cell") || strings.Count(md, "¶") != 5 { // 2 cells, 2 notes, the intro
		t.Errorf("markdown marks %d ¶ (want 5) or lists the note without a cell:\n%s", strings.Count(md, "¶"), md)
	}
	tex := tb.LaTeX()
	for _, want := range []string{`\textbf{0.200$\pm$0.007}$^{\P 2}$`, `$^{\P 1}$ gcn-adj, $r=1$: first note`} {
		if !strings.Contains(tex, want) {
			t.Errorf("latex lacks %q:\n%s", want, tex)
		}
	}
}
