package docfacts

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

// write makes a file under root with its folders.
func write(t *testing.T, root, rel, text string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// finished writes a finished run's result.json.
func finished(t *testing.T, root, dir string, epochs int, test, seconds float64) {
	t.Helper()
	r := &runfiles.Result{Name: "x", Dataset: "zinc", Model: "gatedgcn", R: 1, Metric: "mae", Epochs: epochs, TestMetric: test, TotalSeconds: seconds, StoppedBy: "min_lr"}
	p := filepath.Join(root, filepath.FromSlash(dir), "result.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := runfiles.WriteResult(p, r); err != nil {
		t.Fatal(err)
	}
}

// parked writes a parked run: a checkpoint (any bytes: only its presence counts), n epochs of
// metrics and a result stopped by max_time.
func parked(t *testing.T, root, dir string, n int) {
	t.Helper()
	eps := make([]runfiles.Epoch, n)
	for i := range eps {
		eps[i].Epoch = i
		eps[i].LR = 1e-3
		eps[i].TestMetric = 0.4 + float64(n)/1000
	}
	p := filepath.Join(root, filepath.FromSlash(dir))
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := runfiles.WriteMetrics(filepath.Join(p, "metrics.jsonl"), eps); err != nil {
		t.Fatal(err)
	}
	write(t, root, dir+"/checkpoint.bin", "x")
	finished(t, root, dir, n, 0.5, 60)
}

// fixture is a small repository: 3 setting configs (and defaults and grids that do not count),
// three finished runs (one in a hidden, superseded folder) and two parked ones.
func fixture(t *testing.T) string {
	root := t.TempDir()
	for _, f := range []string{"configs/zinc/a.yaml", "configs/zinc/b.yaml", "configs/aqsol/c.yaml", "configs/defaults/base.yaml", "configs/grids/g.yaml", "configs/campaign/queue.txt"} {
		write(t, root, f, "x: 1\n")
	}
	finished(t, root, "docs/results/g/runs/zinc-a/seed41", 197, 0.3804, 16*60+29)
	finished(t, root, "docs/results/g/runs/zinc-a/seed95", 249, 0.3756, 53*60)
	finished(t, root, "docs/results/g/runs/zinc-a/.superseded/seed95-1", 5, 9.9, 60)
	parked(t, root, "docs/results/g/unfinished/zinc-b/seed41", 20)
	parked(t, root, "docs/results/h/unfinished/zinc-c/seed41", 29)
	return root
}

// Each kind against the fixture's hand-counted values.
func TestValues(t *testing.T) {
	root := fixture(t)
	for _, c := range []struct{ kind, arg, want string }{
		{"configs", "", "3"},
		{"runs", "docs/results/g/runs", "2"},
		{"epochs", "docs/results/g/runs", "197–249"},
		{"test", "docs/results/g/runs", "0.376–0.380"},
		{"minutes", "docs/results/g/runs", "16–53"},
		{"cell", "docs/results/g/runs", "0.378 ± 0.002"}, // (0.3804+0.3756)/2, |d|/2 = 0.0024
		{"cell", "docs/results/g/runs/zinc-a/seed41", "0.380"},
		{"parked", "docs/results/*/unfinished", "20–29"},
		{"parked", "docs/results/g/unfinished", "20"},
		{"unfinished", "docs/results/g/unfinished docs/results/h/unfinished", "2"},
		{"runs", "docs/results/g", "2"}, // parked runs are not finished ones
		{"parked-test", "docs/results/*/unfinished", "0.420–0.429"},
	} {
		got, err := Value(root, c.kind, c.arg)
		if err != nil || got != c.want {
			t.Errorf("%s %s: %q, %v; want %q", c.kind, c.arg, got, err, c.want)
		}
	}
	for _, c := range []struct{ kind, arg, want string }{
		{"config", "", `unknown fact "config"`},
		{"configs", "docs", "takes no folder"},
		{"epochs", "", "needs a folder"},
		{"epochs", "docs/results/nothere", "no folder docs/results/nothere"},
		{"test", "configs", "no runs"},
	} {
		if _, err := Value(root, c.kind, c.arg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: error %v, want %q", c.kind, c.arg, err, c.want)
		}
	}
}

// result writes a finished run's result.json of a setting.
func result(t *testing.T, root, dir string, r runfiles.Result) {
	t.Helper()
	r.Name, r.Metric, r.Epochs, r.StoppedBy = "x", "mae", 100, "min_lr"
	p := filepath.Join(root, filepath.FromSlash(dir), "result.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := runfiles.WriteResult(p, &r); err != nil {
		t.Fatal(err)
	}
}

// vs against hand-computed comparisons with the paper's table:zinc (gcn-adj r = 1: 0.329 ±
// 0.023, 2σ 0.046; gcn-adj-cls r = 4: 0.143 ± 0.006), and its errors.
func TestVersusPaper(t *testing.T) {
	root := t.TempDir()
	adj := runfiles.Result{Dataset: "zinc", Model: "gatedgcn", Encoding: "adj", R: 1}
	for seed, test := range map[string]float64{"41": 0.3804, "95": 0.3756} {
		adj.TestMetric = test
		result(t, root, "v/a/seed"+seed, adj)
	}
	adj.TestMetric = 0.350
	result(t, root, "v/one/seed41", adj)
	cls := runfiles.Result{Dataset: "zinc", Model: "gatedgcn", Encoding: "adj", CLS: true, R: 4, TestMetric: 0.1318}
	result(t, root, "v/cls/seed41", cls)
	result(t, root, "v/nopaper/seed41", runfiles.Result{Dataset: "zinc", Model: "gatedgcn", Encoding: "adj", R: 11, TestMetric: 0.1})
	result(t, root, "v/notable/seed41", runfiles.Result{Dataset: "neighborsmatch-2", Model: "gatedgcn", Encoding: "adj", R: 2, TestMetric: 75})
	for _, c := range []struct{ arg, want string }{
		{"v/a", "outside 2σ (Δ +0.049, 2σ 0.046)"}, // (0.3804 + 0.3756)/2 − 0.329 = 0.0490
		{"v/one", "within 2σ (Δ +0.021, 2σ 0.046)"},
		{"v/cls", "within 2σ (Δ −0.011, 2σ 0.012)"}, // 0.1318 − 0.143 = −0.0112
	} {
		got, err := Value(root, "vs", c.arg)
		if err != nil || got != strings.ReplaceAll(c.want, "−", "-") {
			t.Errorf("vs %s: %q, %v; want %q", c.arg, got, err, c.want)
		}
	}
	for _, c := range []struct{ arg, want string }{
		{"v", "runs of two settings"},
		{"v/nopaper", "table:zinc has no cell gcn-adj at r = 11"},
		{"v/notable", "the paper has no table:neighborsmatch-2"},
	} {
		if _, err := Value(root, "vs", c.arg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("vs %s: error %v, want %q", c.arg, err, c.want)
		}
	}
}

// cells counts the distinct paper cells the runs fill: two seeds of one cell count once; a run
// at an r the paper's table lacks, of a dataset without a table, or on a reduced budget counts
// for none, one older than config hashes (as the cell fact) for its cell; a folder filling none is an error.
func TestPaperCells(t *testing.T) {
	root, hash := t.TempDir(), strings.Repeat("ab", 32)
	adj := runfiles.Result{Dataset: "zinc", Model: "gatedgcn", Encoding: "adj", R: 1, TestMetric: 0.38, ConfigHash: hash}
	result(t, root, "c/a/seed41", adj)
	result(t, root, "c/a/seed95", adj)
	result(t, root, "c/cls/seed41", runfiles.Result{Dataset: "zinc", Model: "gatedgcn", Encoding: "adj", CLS: true, R: 4, TestMetric: 0.13, ConfigHash: hash})
	result(t, root, "c/aq/seed41", runfiles.Result{Dataset: "aqsol", Model: "monet", Encoding: "adj", R: 2, TestMetric: 1.3, ConfigHash: hash})
	result(t, root, "c/nopaper/seed41", runfiles.Result{Dataset: "zinc", Model: "gatedgcn", Encoding: "adj", R: 11, TestMetric: 0.1, ConfigHash: hash})
	result(t, root, "c/notable/seed41", runfiles.Result{Dataset: "neighborsmatch-2", Model: "gatedgcn", Encoding: "adj", R: 2, TestMetric: 75, ConfigHash: hash})
	result(t, root, "c/reduced/seed41", runfiles.Result{Dataset: "zinc", Model: "gatedgcn", Encoding: "short", R: 2, TestMetric: 0.3,
		ConfigHash: hash, Departures: []runfiles.Departure{{Key: "dataset.subset", Protocol: "0", Used: "100"}}})
	result(t, root, "c/unknown/seed41", runfiles.Result{Dataset: "zinc", Model: "gatedgcn", Encoding: "short", R: 3, TestMetric: 0.3})
	if got, err := Value(root, "cells", "c"); err != nil || got != "4" {
		t.Errorf("cells c: %q, %v; want 4 (zinc gcn-adj r=1, gcn-adj-cls r=4, gcn-short r=3, aqsol mon-adj r=2)", got, err)
	}
	if got, err := Value(root, "cells", "c/a c/cls"); err != nil || got != "2" {
		t.Errorf("cells c/a c/cls: %q, %v; want 2", got, err)
	}
	if _, err := Value(root, "cells", "c/nopaper c/notable c/reduced"); err == nil || !strings.Contains(err.Error(), "no run fills") {
		t.Errorf("cells of runs outside the paper's tables: error %v, want \"no run fills\"", err)
	}
}

// Check finds the stale values with their file and line; Update rewrites exactly those, keeps
// the rest of the file byte for byte, and a second Check finds nothing.
func TestCheckAndUpdate(t *testing.T) {
	root := fixture(t)
	readme := "# x\n\n<!--fact:configs-->379<!--/fact--> configs; runs of <!--fact:epochs docs/results/g/runs-->214–249<!--/fact--> epochs\n"
	doc := "parked <!--fact:parked docs/results/*/unfinished-->20–29<!--/fact--> epochs in, " +
		"<!--fact:test docs/results/g/runs-->0.421–0.427<!--/fact-->"
	write(t, root, "README.md", readme)
	write(t, root, "docs/results/g/README.md", doc)
	ms, err := Check(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []Mismatch{
		{File: "README.md", Line: 3, Fact: "configs", Have: "379", Want: "3"},
		{File: "README.md", Line: 3, Fact: "epochs docs/results/g/runs", Have: "214–249", Want: "197–249"},
		{File: "docs/results/g/README.md", Line: 1, Fact: "test docs/results/g/runs", Have: "0.421–0.427", Want: "0.376–0.380"},
	}
	if !reflect.DeepEqual(ms, want) {
		t.Errorf("Check:\n%v\nwant\n%v", ms, want)
	}
	if _, err := Update(root); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(root, "README.md"))
	if got := string(b); got != strings.NewReplacer("379", "3", "214–249", "197–249").Replace(readme) {
		t.Errorf("README after Update:\n%s", got)
	}
	b, _ = os.ReadFile(filepath.Join(root, "docs/results/g/README.md"))
	if got := string(b); got != strings.Replace(doc, "0.421–0.427", "0.376–0.380", 1) {
		t.Errorf("doc after Update (no final newline kept):\n%q", got)
	}
	if ms, err := Check(root); err != nil || len(ms) > 0 {
		t.Errorf("after Update: %v, %v", ms, err)
	}
	write(t, root, "docs/bad.md", "a\n<!--fact:epochs docs/none-->1<!--/fact-->\n")
	if _, err := Check(root); err == nil || !strings.Contains(err.Error(), "docs/bad.md:2") {
		t.Errorf("a fact of no folder: %v, want the file and line", err)
	}
}

// Broken links are found with their file and line: a missing file, a missing heading; links
// in code, URLs and good anchors (GitHub's slugs, a repeated heading numbered) pass.
func TestBrokenLinks(t *testing.T) {
	root := t.TempDir()
	write(t, root, "docs/a.md", "# Title\n\n## The `train` flags (and more)\n\n## Same\n\n## Same\n")
	write(t, root, "README.md", strings.Join([]string{
		"[ok](docs/a.md) [ok](docs/a.md#title) [ok](docs/a.md#the-train-flags-and-more) [ok](docs/a.md#same-1)",
		"[url](https://example.com/x.md) `[code](nothere.md)` [self](#readme)",
		"```",
		"[fenced](nothere.md)",
		"```",
		"[bad](docs/nothere.md) [bad anchor](docs/a.md#nope)",
		"# README",
	}, "\n"))
	bad, err := BrokenLinks(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README.md:6: link docs/nothere.md: no file docs/nothere.md",
		"README.md:6: link docs/a.md#nope: docs/a.md has no heading #nope",
	}
	if fmt.Sprint(bad) != fmt.Sprint(want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(bad, "\n"), strings.Join(want, "\n"))
	}
}
