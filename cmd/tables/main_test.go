package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/runfiles"
	"github.com/rewiregnn/rewiregnn/sweep"
	"github.com/rewiregnn/rewiregnn/train"
)

// protocolHash stands for the config hash of a protocol run.
var protocolHash = strings.Repeat("c0", 32)

// writeRuns lays out a small finished sweep of protocol runs: ZINC gcn-adj-cls r = 1, 2 (4
// seeds; r = 2 has one seed capped) and CLUSTER gcn-lp r = 3 (2 seeds). Their config hash is
// hashes[run name], else protocolHash.
func writeRuns(t *testing.T, root string, hashes ...map[string]string) {
	t.Helper()
	put := func(ds, model, enc string, cls bool, r int, metric string, seed int64, test float64, stop string) {
		name := fmt.Sprintf("%s-%s-%s-r%d", ds, model, enc, r)
		if cls {
			name = fmt.Sprintf("%s-%s-%s-cls-r%d", ds, model, enc, r)
		}
		dir := filepath.Join(root, name, fmt.Sprintf("seed%d", seed))
		os.MkdirAll(dir, 0o755)
		res := runfiles.Result{Name: name, Dataset: ds, Model: model, Encoding: enc, CLS: cls, R: r, Seed: seed,
			Metric: metric, TestMetric: test, ValMetric: test, TrainMetric: test, Epochs: 5, SecondsPerEpoch: float64(r),
			TotalSeconds: 100, Params: 100000, Device: "cpu", StoppedBy: stop, ConfigHash: protocolHash}
		for _, h := range hashes {
			if x, ok := h[name]; ok {
				res.ConfigHash = x
			}
		}
		b, _ := json.Marshal(res)
		os.WriteFile(filepath.Join(dir, runfiles.ResultFile), b, 0o644)
		var m bytes.Buffer
		for ep := 0; ep < 5; ep++ {
			l, _ := json.Marshal(runfiles.Epoch{Epoch: ep, ValLoss: 1 / float64(ep+1), ValMetric: test + 1/float64(ep+1)})
			m.Write(append(l, '\n'))
		}
		os.WriteFile(filepath.Join(dir, runfiles.MetricsFile), m.Bytes(), 0o644)
	}
	for i, s := range []int64{41, 95, 12, 35} {
		put("zinc", "gatedgcn", "adj", true, 1, runfiles.MetricMAE, s, []float64{0.28, 0.29, 0.30, 0.27}[i], runfiles.StopMinLR)
		stop := runfiles.StopMinLR
		if s == 12 {
			stop = runfiles.StopMaxTime
		}
		put("zinc", "gatedgcn", "adj", true, 2, runfiles.MetricMAE, s, 0.2, stop)
	}
	put("cluster", "gatedgcn", "lp", false, 3, runfiles.MetricWeightedAcc, 41, 77.5, runfiles.StopMinLR)
	put("cluster", "gatedgcn", "lp", false, 3, runfiles.MetricWeightedAcc, 95, 77.7, runfiles.StopMinLR)
}

func TestTablesCommand(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	writeRuns(t, runs)
	stats := filepath.Join(dir, "stats.json")
	os.WriteFile(stats, []byte(`[{"dataset":"zinc","split":"all","r":1,"cls":false,"density":0.141},{"dataset":"zinc","r":2,"cls":false,"density":0.273}]`), 0o644)
	out := filepath.Join(dir, "docs")
	var so, se bytes.Buffer
	if code := run([]string{"-runs", runs, "-out", out, "-stats", stats}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	for _, f := range []string{"zinc.md", "zinc.tex", "zinc-metric.png", "zinc-time.png", "zinc-curves-gatedgcn-adj-cls.png",
		"cluster.md", "cluster.tex", "cluster-curves-gatedgcn-lp.png", "results.md", "tables.md", "summary.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	zinc, _ := os.ReadFile(filepath.Join(out, "zinc.md"))
	for _, want := range []string{
		"| 1 | .14 | 0.141 |",
		"**0.200 ± 0.000** ‡1 (0.198 ± 0.011)",
		"0.285 ± 0.011 (0.287 ± 0.010)",
	} {
		if !strings.Contains(string(zinc), want) {
			t.Errorf("zinc.md lacks %q:\n%s", want, zinc)
		}
	}
	cl, _ := os.ReadFile(filepath.Join(out, "cluster.md"))
	if !strings.Contains(string(cl), "77.600 ± 0.100 †2/4 (77.575 ± 0.149)") || !strings.Contains(string(cl), "| 2 | >.99 |") {
		t.Errorf("cluster.md:\n%s", cl)
	}
	res, _ := os.ReadFile(filepath.Join(out, "results.md"))
	if !strings.Contains(string(res), "77.600 ± 0.100 †2/4 (gcn-lp r=3)") {
		t.Errorf("results.md:\n%s", res)
	}
	// the r-trend figure needs a setting with runs at three r: none at r = 1, 2; one with r = 3
	rtrend := filepath.Join(out, "zinc-rtrend.png")
	if _, err := os.Stat(rtrend); !os.IsNotExist(err) {
		t.Errorf("%s with runs at two r: %v", rtrend, err)
	}
	for _, seed := range []string{"seed41", "seed95"} {
		r3, err := runfiles.ReadResult(filepath.Join(runs, "zinc-gatedgcn-adj-cls-r2", seed, runfiles.ResultFile))
		if err != nil {
			t.Fatal(err)
		}
		r3.Name, r3.R, r3.TestMetric = "zinc-gatedgcn-adj-cls-r3", 3, 0.16
		if err := runfiles.WriteResult(filepath.Join(runs, r3.Name, seed, runfiles.ResultFile), r3); err != nil {
			t.Fatal(err)
		}
	}
	if code := run([]string{"-runs", runs, "-out", out, "-stats", stats}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	if _, err := os.Stat(rtrend); err != nil || !strings.Contains(so.String(), "wrote "+rtrend) {
		t.Errorf("with runs at r = 1, 2, 3: %v; stdout:\n%s", err, so.String())
	}
	if _, err := os.Stat(filepath.Join(out, "cluster-rtrend.png")); !os.IsNotExist(err) {
		t.Errorf("cluster-rtrend.png with runs at one r: %v", err)
	}

	// one table to standard output
	so.Reset()
	if code := run([]string{"-runs", runs, "-table", "table:cluster"}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	if s := so.String(); !strings.HasPrefix(s, "## table:cluster") || strings.Contains(s, "table:zinc") {
		t.Errorf("stdout:\n%s", s)
	}
}

func TestTablesErrors(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	writeRuns(t, runs)
	bad := filepath.Join(runs, "zinc-gatedgcn-adj-cls-r1", "seed41", runfiles.ResultFile)
	os.WriteFile(bad, []byte(`{"name":"x","epochs":0}`), 0o644)
	var so, se bytes.Buffer
	// a bad result is listed, not fatal (TestTablesSkipDivergedAndBadResults)
	if code := run([]string{"-runs", runs}, &so, &se); code != 0 || !strings.Contains(se.String(), bad) {
		t.Errorf("bad result: exit %d, %s", code, se.String())
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-table", "zinc"}, `-table "zinc"`},
		{[]string{"-seeds", "0"}, "-seeds 0"},
		{[]string{"-set", "a=b"}, "-set needs -grid"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		se.Reset()
		if code := run(c.args, &so, &se); code != 2 || !strings.Contains(se.String(), c.want) {
			t.Errorf("%v: exit %d, %s", c.args, code, se.String())
		}
	}
	se.Reset()
	if code := run([]string{"-runs", filepath.Join(dir, "nothing")}, &so, &se); code != 1 || !strings.Contains(se.String(), "nothing") {
		t.Errorf("missing folder: exit %d %s", code, se.String())
	}
}

// With -grid only the grid's runs count, found under the grid's out folder, and the planned
// seeds come from the grid.
func TestTablesWithGrid(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	grid := filepath.Join(dir, "g.yaml")
	os.WriteFile(grid, []byte(`table: "table:zinc"
datasets: [zinc]
models: [gatedgcn]
encodings: [adj]
cls: [true]
r: 1-2
seeds: [41, 95, 12]
overrides:
  out: `+filepath.Join(runs, "small")+"\n"), 0o644)
	_, hashes := gridPlan(t, grid)
	writeRuns(t, runs)                                 // runs/zinc-gatedgcn-adj-cls-r1/… (4 seeds)
	writeRuns(t, filepath.Join(runs, "small"), hashes) // the same names in the grid's out folder
	os.RemoveAll(filepath.Join(runs, "small", "zinc-gatedgcn-adj-cls-r1", "seed12"))
	os.RemoveAll(filepath.Join(runs, "small", "zinc-gatedgcn-adj-cls-r1", "seed35"))
	var so, se bytes.Buffer
	if code := run([]string{"-grid", grid}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	md := so.String()
	// r=1: seeds 41 and 95 of the three planned; r=2: 41, 95, 12 (35 is not in the grid)
	for _, want := range []string{"0.285 ± 0.005 †2/3 (0.287 ± 0.010)", "**0.200 ± 0.000** ‡1 (0.198 ± 0.011)", "| gatedgcn-adj-cls | 2 | 3/3 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "table:cluster") || strings.Contains(md, "table:results") {
		t.Errorf("runs outside the grid shown:\n%s", md)
	}
}

// editResult rewrites one run's result.json.
func editResult(t *testing.T, dir string, edit func(*runfiles.Result)) {
	t.Helper()
	p := filepath.Join(dir, runfiles.ResultFile)
	res, err := runfiles.ReadResult(p)
	if err != nil {
		t.Fatal(err)
	}
	edit(res)
	if err := runfiles.WriteResult(p, res); err != nil {
		t.Fatal(err)
	}
}

// The case: a -subset run's MAE (1.461) must not reach the table or "best", a run
// stopped by SIGTERM is not averaged in; both are listed with the reason. -include-reduced takes
// the reduced-budget run (and one without config_hash) in, marked §, but never the interrupted one.
func TestTablesLeaveOutReducedAndUnfinishedRuns(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	writeRuns(t, runs)
	cls1 := func(seed int) string {
		return filepath.Join(runs, "zinc-gatedgcn-adj-cls-r1", fmt.Sprintf("seed%d", seed))
	}
	cls2 := func(seed int) string {
		return filepath.Join(runs, "zinc-gatedgcn-adj-cls-r2", fmt.Sprintf("seed%d", seed))
	}
	editResult(t, cls2(41), func(r *runfiles.Result) {
		r.TestMetric, r.StoppedBy = 1.461, runfiles.StopMaxEpochs
		r.Departures = []runfiles.Departure{{Key: "dataset.subset", Protocol: "0", Used: "1000"}, {Key: "train.max_epochs", Protocol: "1000", Used: "2"}}
	})
	editResult(t, cls1(95), func(r *runfiles.Result) { r.TestMetric, r.StoppedBy = 5, runfiles.StopSignal })
	editResult(t, cls1(12), func(r *runfiles.Result) { r.ConfigHash = "" })
	out := filepath.Join(t.TempDir(), "out")
	var so, se bytes.Buffer
	if code := run([]string{"-runs", runs, "-table", "table:zinc", "-out", out, "-plots=false"}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	md, _ := os.ReadFile(filepath.Join(out, "zinc.md"))
	for _, want := range []string{
		"0.275 ± 0.005 †2/4 (0.287 ± 0.010)", // r=1: seeds 41 (.28) and 35 (.27) only
		"**0.200 ± 0.000** †3/4 ‡1",          // r=2 without the subset run
		"| " + cls2(41) + " | 41 | reduced budget: dataset.subset 1000 (protocol 0); train.max_epochs 2 (protocol 1000) (include with -include-reduced) |",
		"| " + cls1(95) + " | 95 | stopped by a signal",
		"| " + cls1(12) + " | 12 | reduced budget: unknown provenance",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("zinc.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(string(md), "1.461") || strings.Contains(string(md), "5.000") {
		t.Errorf("a left-out run reached the table:\n%s", md)
	}
	if !strings.Contains(se.String(), "3 runs left out:") || !strings.Contains(se.String(), cls2(41)+" (seed 41): reduced budget") {
		t.Errorf("stderr:\n%s", se.String())
	}
	so.Reset()
	se.Reset()
	if code := run([]string{"-runs", runs, "-table", "table:zinc", "-include-reduced"}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	for _, want := range []string{
		"**0.283 ± 0.012** †3/4 §1 (0.287 ± 0.010)", // r=1: .28 .30 .27, the one without hash marked
		"0.515 ± 0.546 ‡1 §1",                       // r=2 with the subset run: pop std of 1.461 .2 .2 .2
		"- gatedgcn-adj-cls r=2, 1 of 4 seeds: dataset.subset 1000 (protocol 0); train.max_epochs 2 (protocol 1000)",
		"- gatedgcn-adj-cls r=1, 1 of 3 seeds: unknown provenance",
		"| " + cls1(95) + " | 95 | stopped by a signal",
	} {
		if !strings.Contains(so.String(), want) {
			t.Errorf("-include-reduced lacks %q:\n%s", want, so.String())
		}
	}
	if !strings.Contains(se.String(), "1 run left out:") {
		t.Errorf("stderr with -include-reduced:\n%s", se.String())
	}
}

// TestTablesSkipDivergedAndBadResults: a run that diverged in its first epoch (result.json with
// stopped_by nan, epochs 0 and no metrics, as the trainer writes it) and a result.json that does
// not parse are each listed with the reason, on stderr and under the table, and the other runs'
// tables are still written.
func TestTablesSkipDivergedAndBadResults(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	writeRuns(t, runs)
	diverged := filepath.Join(runs, "zinc-gatedgcn-adj-cls-r2", "seed41")
	if err := runfiles.WriteResult(filepath.Join(diverged, runfiles.ResultFile), &runfiles.Result{Name: "zinc-gatedgcn-adj-cls-r2",
		Dataset: "zinc", Model: "gatedgcn", Encoding: "adj", CLS: true, R: 2, Seed: 41, Metric: runfiles.MetricMAE,
		StoppedBy: runfiles.StopNaN, ConfigHash: protocolHash}); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(runs, "zinc-gatedgcn-adj-cls-r1", "seed95")
	os.WriteFile(filepath.Join(broken, runfiles.ResultFile), []byte(`{"name": "zinc-gatedgcn-adj-cls-r1",`), 0o644)
	out := filepath.Join(t.TempDir(), "out")
	var so, se bytes.Buffer
	if code := run([]string{"-runs", runs, "-out", out, "-plots=false"}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	for _, want := range []string{
		diverged + " (seed 41): diverged: stopped on a non-finite loss after 0 epochs",
		broken + " (seed ?): unreadable result: " + filepath.Join(broken, runfiles.ResultFile),
	} {
		if !strings.Contains(se.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, se.String())
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, "tables.md"))
	for _, want := range []string{
		"| " + diverged + " | 41 | diverged: stopped on a non-finite loss after 0 epochs (no final metrics) |",
		"| " + broken + " | ? | unreadable result: ",
		"0.283 ± 0.012 †3/4", // r = 1 without seed 95
		"77.600",             // CLUSTER still tabled
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("tables.md lacks %q:\n%s", want, md)
		}
	}
}

// TestTablesRefuseFewerRuns: tables written from a runs folder are not replaced by tables of
// fewer runs (a run gone, or an empty folder as in a fresh clone): exit 1, the reason and the
// counts named, the files untouched; tables of as many runs replace them.
func TestTablesRefuseFewerRuns(t *testing.T) {
	dir := t.TempDir()
	runs, out := filepath.Join(dir, "runs"), filepath.Join(dir, "out")
	writeRuns(t, runs)
	var so, se bytes.Buffer
	if code := run([]string{"-runs", runs, "-out", out, "-plots=false"}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	before, _ := os.ReadFile(filepath.Join(out, "zinc.md"))
	os.RemoveAll(filepath.Join(runs, "zinc-gatedgcn-adj-cls-r2", "seed41"))
	se.Reset()
	code := run([]string{"-runs", runs, "-out", out, "-plots=false"}, &so, &se)
	want := "holds tables of 10 runs (" + filepath.Join(out, "summary.json") + ") and these are of 9: refusing"
	if code != 1 || !strings.Contains(se.String(), want) {
		t.Errorf("fewer runs: exit %d, %s; want %q", code, se.String(), want)
	}
	if after, _ := os.ReadFile(filepath.Join(out, "zinc.md")); !bytes.Equal(before, after) {
		t.Errorf("zinc.md was replaced")
	}
	se.Reset()
	if code := run([]string{"-runs", runs, "-out", filepath.Join(dir, "elsewhere"), "-plots=false"}, &so, &se); code != 0 {
		t.Errorf("another folder: exit %d, %s", code, se.String())
	}
	writeRuns(t, runs)
	se.Reset()
	if code := run([]string{"-runs", runs, "-out", out, "-plots=false"}, &so, &se); code != 0 {
		t.Errorf("as many runs: exit %d, %s", code, se.String())
	}
	os.WriteFile(filepath.Join(out, "summary.json"), []byte("{"), 0o644)
	se.Reset()
	if code := run([]string{"-runs", runs, "-out", out, "-plots=false"}, &so, &se); code != 1 || !strings.Contains(se.String(), filepath.Join(out, "summary.json")) {
		t.Errorf("unreadable summary.json: exit %d, %s", code, se.String())
	}
}

// With -grid, a run in the grid's directory whose config hash is not the grid run's is left out.
func TestTablesGridLeavesOutOtherConfigs(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	grid := filepath.Join(dir, "g.yaml")
	os.WriteFile(grid, []byte("table: \"table:zinc\"\ndatasets: [zinc]\nmodels: [gatedgcn]\nencodings: [adj]\ncls: [true]\nr: 1-2\nseeds: [41, 95, 12, 35]\noverrides:\n  out: "+runs+"\n"), 0o644)
	plan, hashes := gridPlan(t, grid)
	writeRuns(t, runs, hashes)
	other := filepath.Join(runs, "zinc-gatedgcn-adj-cls-r2", "seed41")
	editResult(t, other, func(r *runfiles.Result) { r.ConfigHash, r.TestMetric = protocolHash, 9 })
	// older results (no config_hash): r=1 seed 41 has the grid run's config.yaml, seed 95 none
	legacy := func(seed int64) string {
		return filepath.Join(runs, "zinc-gatedgcn-adj-cls-r1", fmt.Sprintf("seed%d", seed))
	}
	for _, s := range []int64{41, 95} {
		editResult(t, legacy(s), func(r *runfiles.Result) { r.ConfigHash = "" })
	}
	if err := config.WriteFile(filepath.Join(legacy(41), runfiles.ConfigFile), plan.Jobs[0].Config); err != nil {
		t.Fatal(err)
	}
	var so, se bytes.Buffer
	if code := run([]string{"-grid", grid}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	for _, want := range []string{
		"| " + other + " | 41 | not the grid's run: the result's config hash differs",
		"| " + legacy(95) + " | 95 | reduced budget: unknown provenance",
		"**0.200 ± 0.000** †3/4 ‡1",
		"0.283 ± 0.012 †3/4 (0.287 ± 0.010)", // r=1: .28 (the older run with the grid's config.yaml), .30, .27
	} {
		if !strings.Contains(so.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, so.String())
		}
	}
}

// gridPlan loads a grid file's plan and maps every run name to its config hash.
func gridPlan(t *testing.T, grid string) (*sweep.Plan, map[string]string) {
	t.Helper()
	plan, err := sweep.LoadPlan(grid, nil, "", "")
	if err != nil {
		t.Fatal(err)
	}
	hashes := map[string]string{}
	for _, j := range plan.Jobs {
		hashes[j.Name] = j.Config.Hash()
	}
	return plan, hashes
}

// TestFigureCommand: -figure writes the figure's Markdown, JSON and plot from the runs under
// -runs; an unknown figure or a folder without its runs is an error that says so.
func TestFigureCommand(t *testing.T) {
	root := t.TempDir()
	for _, seed := range []int64{41, 95} {
		dir := filepath.Join(root, "erdosrenyi-gatedgcn-short-r5", fmt.Sprintf("seed%d", seed))
		eps := make([]runfiles.Epoch, 3)
		for e := range eps {
			eps[e] = runfiles.Epoch{Epoch: e, LR: 1e-3, TrainLoss: 1, TrainMetric: float64(10 * e)}
		}
		if err := runfiles.WriteMetrics(filepath.Join(dir, runfiles.MetricsFile), eps); err != nil {
			t.Fatal(err)
		}
		res := &runfiles.Result{Name: "erdosrenyi-gatedgcn-short-r5", Dataset: "erdosrenyi", Model: "gatedgcn", Encoding: "short", R: 5,
			Seed: seed, Metric: runfiles.MetricAccuracy, TrainMetric: 20, TestMetric: 20, Epochs: 3, SecondsPerEpoch: 0.1,
			TotalSeconds: 1, Params: 100000, Device: "cpu", StoppedBy: runfiles.StopMaxEpochs, ConfigHash: protocolHash}
		if err := runfiles.WriteResult(filepath.Join(dir, runfiles.ResultFile), res); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-figure", "fig:random_erdos", "-runs", root, "-out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	md, err := os.ReadFile(filepath.Join(out, "random-erdos.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| 0 | – / 0.01 | 0.00 ± 0.00 (2) / 0.01 |") || !strings.Contains(string(md), "| erdosrenyi-gatedgcn-short-r5 | 2 | 3 |") {
		t.Errorf("random-erdos.md:\n%s", md)
	}
	for _, f := range []string{"random-erdos.json", "random-erdos.png"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-figure", "fig:nope", "-runs", root}, 2, "known: fig:neighborplot, fig:random_erdos"},
		{[]string{"-figure", "fig:neighborplot", "-runs", root}, 1, "no finished neighborsmatch runs"},
		{[]string{"-figure", "fig:random_erdos", "-table", "table:zinc"}, 2, "drop -grid and -table"},
	} {
		stderr.Reset()
		if code := run(c.args, &stdout, &stderr); code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, stderr.String(), c.code, c.want)
		}
	}
}

// TestHomophilyCommand: -homophily predicts the test split with each CLUSTER run's checkpoint and
// writes the bucket table; a reduced run needs -include-reduced, a folder without such runs is an
// error.
func TestHomophilyCommand(t *testing.T) {
	root := t.TempDir()
	c, err := config.Load("", []string{"dataset.name=cluster", "dataset.encoding=adj", "dataset.r=1", "dataset.subset=30",
		"model.layers=1", "model.hidden=8", "train.batch_size=10", "train.max_epochs=1", "out=" + root, "dataset.cache=off"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := train.Train(context.Background(), train.Options{Run: c, Seed: 41, Dir: c.Dir(41), Workers: 1}); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-homophily", "-runs", root}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "no finished CLUSTER or PATTERN runs") {
		t.Errorf("without -include-reduced: exit %d, %s", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"-homophily", "-runs", root, "-include-reduced"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "train -predict "+c.Dir(41)) {
		t.Errorf("without predictions: exit %d, %s", code, stderr.String())
	}
	if _, err := train.WritePredictions(c.Dir(41), 1, nil); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"-homophily", "-runs", root, "-include-reduced", "-out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	md, err := os.ReadFile(filepath.Join(out, "homophily-cluster.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Homophily buckets of cluster (30 test graphs)", "| low (10 graphs) |", "| cluster-gatedgcn-adj-r1 | 1 |", " / 71.494±0.619 |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("homophily-cluster.md lacks %q:\n%s", want, md)
		}
	}
	if code := run([]string{"-homophily", "-figure", "fig:random_erdos"}, &stdout, &stderr); code != 2 {
		t.Errorf("-homophily with -figure: exit %d", code)
	}
}
