package report

import (
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/report/results"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

func TestPlots(t *testing.T) {
	dir := t.TempDir()
	runs := zincRuns()
	// learning curves for gcn-adj-cls: metrics.jsonl per run
	for _, r := range runs {
		res := r.Result
		r.Dir = filepath.Join(dir, "runs", fmt.Sprintf("%s-%v-r%d", res.Encoding, res.CLS, res.R), fmt.Sprintf("seed%d", res.Seed))
		os.MkdirAll(r.Dir, 0o755)
		f, err := os.Create(filepath.Join(r.Dir, runfiles.MetricsFile))
		if err != nil {
			t.Fatal(err)
		}
		enc := json.NewEncoder(f)
		for ep := 0; ep < 20+int(res.Seed%7); ep++ {
			enc.Encode(runfiles.Epoch{Epoch: ep, ValLoss: 1 / float64(ep+1) * float64(res.R), ValMetric: res.TestMetric + 1/float64(ep+1)})
		}
		f.Close()
	}
	groups, err := results.Aggregate(runs, results.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := Build("table:zinc", groups, smallZinc(t), map[int]float64{1: 0.141, 2: 0.273})
	if err != nil {
		t.Fatal(err)
	}
	metric := filepath.Join(dir, "zinc-metric.png")
	timep := filepath.Join(dir, "zinc-time.png")
	curves := filepath.Join(dir, "zinc-curves-gcn-adj-cls.png")
	if err := PlotMetric(tb, metric); err != nil {
		t.Fatal(err)
	}
	if err := PlotTime(tb, timep); err != nil {
		t.Fatal(err)
	}
	var cls []*results.Group
	for _, g := range groups {
		if g.Setting() == "gcn-adj-cls" {
			cls = append(cls, g)
		}
	}
	if err := PlotCurves("zinc", runfiles.MetricMAE, "gcn-adj-cls", cls, curves); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{metric, timep, curves} {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil || cfg.Width < 300 || cfg.Height < 200 {
			t.Errorf("%s: %v %dx%d", p, err, cfg.Width, cfg.Height)
		}
	}
	if os.Getenv("REPORT_KEEP_PLOTS") != "" {
		for _, p := range []string{metric, timep, curves} {
			b, _ := os.ReadFile(p)
			os.WriteFile(filepath.Join(os.Getenv("REPORT_KEEP_PLOTS"), filepath.Base(p)), b, 0o644)
		}
	}
}

// TestValueTicks: the value axis writes each labelled tick exactly (gonum's default writes 1.05
// as "1.1" on an axis of MAEs), every label of an axis with the same decimals.
func TestValueTicks(t *testing.T) {
	for _, c := range []struct {
		vals []float64
		want int
	}{
		{[]float64{0.9500000000000001, 1.05, 1.1500000000000001}, 2},
		{[]float64{1, 1.1, 1.2000000000000002}, 1},
		{[]float64{1.12, 1.2400000000000002, 1.36}, 2},
		{[]float64{70, 75, 80}, 0},
		{[]float64{0.25}, 2},
	} {
		if got := tickDecimals(c.vals); got != c.want {
			t.Errorf("tickDecimals(%v) = %d, want %d", c.vals, got, c.want)
		}
	}
	for _, r := range [][2]float64{{0.918, 1.2}, {1.1, 1.4}, {0.8, 1.2}, {0.93, 1.22}, {70, 80}, {0.91, 0.99}} {
		dec := -1
		for _, tk := range (valueTicks{}).Ticks(r[0], r[1]) {
			if tk.Label == "" {
				continue
			}
			v, err := strconv.ParseFloat(tk.Label, 64)
			if err != nil || math.Abs(v-tk.Value) > 1e-9 {
				t.Errorf("%v: tick %g labelled %q", r, tk.Value, tk.Label)
			}
			d := 0
			if _, frac, ok := strings.Cut(tk.Label, "."); ok {
				d = len(frac)
			}
			if dec >= 0 && d != dec {
				t.Errorf("%v: label %q has %d decimals, another %d", r, tk.Label, d, dec)
			}
			dec = d
		}
	}
}
