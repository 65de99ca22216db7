package results

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func result(name string, seed int64, test float64) *runfiles.Result {
	return &runfiles.Result{Name: name, Dataset: "zinc", Model: "gatedgcn", Encoding: "adj", CLS: true, R: 4,
		Seed: seed, Metric: runfiles.MetricMAE, TestMetric: test, ValMetric: test + 0.01, TrainMetric: test / 2,
		Epochs: 100 + int(seed), SecondsPerEpoch: float64(seed), TotalSeconds: 3600, Params: 100000,
		Device: "cpu", StoppedBy: runfiles.StopMinLR}
}

func TestMeanStdPopulation(t *testing.T) {
	cases := []struct {
		xs        []float64
		mean, std float64
	}{
		{[]float64{0.1, 0.2, 0.3, 0.4}, 0.25, math.Sqrt(0.0125)}, // deviations ±.15, ±.05: (2·.0225+2·.0025)/4
		{[]float64{2, 4, 4, 4, 5, 5, 7, 9}, 5, 2},                // the textbook population example
		{[]float64{1.5}, 1.5, 0},
		{[]float64{70, 80}, 75, 5},
	}
	for _, c := range cases {
		s := MeanStd(c.xs)
		if math.Abs(s.Mean-c.mean) > 1e-12 || math.Abs(s.Std-c.std) > 1e-12 || s.N != len(c.xs) {
			t.Errorf("MeanStd(%v) = %+v, want mean %v std %v", c.xs, s, c.mean, c.std)
		}
	}
	if s := MeanStd(nil); !math.IsNaN(s.Mean) || s.N != 0 {
		t.Errorf("empty: %+v", s)
	}
}

func TestScanAndAggregate(t *testing.T) {
	root := t.TempDir()
	name := "zinc-gatedgcn-adj-cls-r4"
	for i, seed := range []int64{41, 95, 12, 35} {
		r := result(name, seed, []float64{0.1, 0.2, 0.3, 0.4}[i])
		if seed == 12 {
			r.StoppedBy = runfiles.StopMaxTime
		}
		writeJSON(t, filepath.Join(root, name, "seed"+itoa(seed), runfiles.ResultFile), r)
	}
	// a second setting with two of four seeds
	for _, seed := range []int64{41, 95} {
		r := result("zinc-gatedgcn-adj-r1", seed, 0.3)
		r.CLS, r.R = false, 1
		writeJSON(t, filepath.Join(root, "zinc-gatedgcn-adj-r1", "seed"+itoa(seed), runfiles.ResultFile), r)
	}
	// an unfinished run (no result.json) is not a run
	os.MkdirAll(filepath.Join(root, "zinc-gatedgcn-adj-r2", "seed41"), 0o755)
	runs, bad, err := Scan(root)
	if err != nil || len(bad) != 0 {
		t.Fatal(err, bad)
	}
	if len(runs) != 6 {
		t.Fatalf("%d runs, want 6", len(runs))
	}
	groups, err := Aggregate(runs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 {
		t.Fatalf("%d groups", len(groups))
	}
	g := groups[1] // gcn-adj-cls sorts after gcn-adj
	if g.Setting() != "gcn-adj-cls" || g.R != 4 || g.Table != "table:zinc" {
		t.Fatalf("group %+v", g.Key)
	}
	if math.Abs(g.Test.Mean-0.25) > 1e-12 || math.Abs(g.Test.Std-math.Sqrt(0.0125)) > 1e-12 {
		t.Errorf("test %+v", g.Test)
	}
	if math.Abs(g.Val.Mean-0.26) > 1e-12 {
		t.Errorf("val %+v", g.Val)
	}
	// seconds per epoch = seed: 41, 95, 12, 35 → mean 45.75
	if math.Abs(g.SecondsPerEpoch.Mean-45.75) > 1e-12 {
		t.Errorf("s/epoch %+v", g.SecondsPerEpoch)
	}
	if g.Capped() != 1 || g.Short() || g.Planned != 4 {
		t.Errorf("capped %d short %v planned %d", g.Capped(), g.Short(), g.Planned)
	}
	if want := []int64{12, 35, 41, 95}; !equal(g.Seeds, want) {
		t.Errorf("seeds %v", g.Seeds)
	}
	if h := groups[0]; !h.Short() || len(h.Seeds) != 2 || h.Test.Std != 0 {
		t.Errorf("short group %+v", h)
	}
}

func TestAggregateDuplicateSeed(t *testing.T) {
	a := &Run{Dir: "a/seed41", Result: result("x", 41, 1)}
	b := &Run{Dir: "b/seed41", Result: result("x", 41, 2)}
	_, err := Aggregate([]*Run{a, b}, Options{})
	if err == nil || !strings.Contains(err.Error(), "a/seed41") || !strings.Contains(err.Error(), "b/seed41") {
		t.Errorf("got %v", err)
	}
}

// TestAggregateRefusesMixedSources: seeds of one setting read from the public distribution and
// from substitute files are not averaged together.
func TestAggregateRefusesMixedSources(t *testing.T) {
	a := &Run{Dir: "a/seed41", Result: result("x", 41, 1)}
	b := &Run{Dir: "b/seed95", Result: result("x", 95, 2)}
	b.Result.DataSource = "pyg"
	_, err := Aggregate([]*Run{a, b}, Options{})
	if err == nil || !strings.Contains(err.Error(), "b/seed95 read the public distribution (pyg)") || !strings.Contains(err.Error(), "a/seed41") {
		t.Errorf("got %v", err)
	}
	a.Result.DataSource = "pyg"
	if gs, err := Aggregate([]*Run{a, b}, Options{}); err != nil || gs[0].DataSource != "pyg" {
		t.Errorf("same source: %v", err)
	}
}

// TestScanReportsBadResult: a result.json that cannot be read or does not verify comes back in
// bad, its folder and error named, while the runs beside it are still read (the reader's own
// errors are tested in package runfiles); a diverged run that stopped in its first epoch is a
// valid result, not a bad one.
func TestScanReportsBadResult(t *testing.T) {
	root := t.TempDir()
	write := func(name, body string) string {
		dir := filepath.Join(root, name, "seed41")
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, runfiles.ResultFile), []byte(body), 0o644)
		return dir
	}
	tired := write("a", `{"name":"x","dataset":"zinc","model":"gatedgcn","r":1,"epochs":3,"metric":"mae","stopped_by":"tired"}`)
	cut := write("b", `{"name":"x",`)
	write("c", `{"name":"c","dataset":"zinc","model":"gatedgcn","r":1,"epochs":3,"metric":"mae","stopped_by":"min_lr"}`)
	write("d", `{"name":"d","dataset":"zinc","model":"gatedgcn","r":1,"epochs":0,"metric":"mae","stopped_by":"nan"}`)
	runs, bad, err := Scan(root)
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	if len(runs) != 2 || runs[0].Result.Name != "c" || !runs[1].Result.Diverged() {
		t.Errorf("runs beside the bad files: %+v", runs)
	}
	if len(bad) != 2 || bad[0].Dir != tired || bad[1].Dir != cut ||
		!strings.Contains(bad[0].Reason, `"stopped_by" is "tired"`) || !strings.Contains(bad[1].Reason, "unexpected EOF") {
		t.Errorf("bad results: %+v", bad)
	}
}

func TestSetting(t *testing.T) {
	for _, c := range []struct {
		m, e string
		cls  bool
		want string
	}{{"gatedgcn", "adj", false, "gcn-adj"}, {"monet", "lp", true, "mon-lp-cls"}, {"transformer", "short", false, "trans-short"}} {
		if got := Setting(c.m, c.e, c.cls); got != c.want {
			t.Errorf("%v: %s", c, got)
		}
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDeviceLabel(t *testing.T) {
	run := "GPU 0: NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.2 GiB; driver CUDA 13.0); 63 kernels for compute_90 by NVRTC 13.0 (/usr/local/cuda/lib64/libnvrtc.so.13); 12 files from cache, 0 compiled"
	want := "GPU 0: NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.2 GiB; driver CUDA 13.0); 63 kernels for compute_90 by NVRTC 13.0"
	if got := DeviceLabel(run); got != want {
		t.Errorf("DeviceLabel = %q, want %q", got, want)
	}
	if got := DeviceLabel("cpu (2 threads)"); got != "cpu (2 threads)" {
		t.Errorf("a CPU label changed: %q", got)
	}
}
