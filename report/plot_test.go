package report

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

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
		if got, _ := tickDecimals(c.vals); got != c.want {
			t.Errorf("tickDecimals(%v) = %d, want %d", c.vals, got, c.want)
		}
	}
	for _, r := range [][2]float64{{0.918, 1.2}, {1.1, 1.4}, {0.8, 1.2}, {0.93, 1.22}, {70, 80}, {0.91, 0.99},
		{0.92, 1.28}, {0, 1}, {0, 1.05}, {0.0001, 0.0003}, {100, 1000}, {0, 250}, {12345, 12399}, {2e7, 9e7}, {1e-8, 3e-8},
		{-1.28, -0.92}, {-0.3, 0.7}, {-1, 1}, {-1000, -100}, {-0.0003, -0.0001}} {
		dec := -1
		for _, tk := range (valueTicks{}).Ticks(r[0], r[1]) {
			if tk.Label == "" {
				continue
			}
			v, err := strconv.ParseFloat(tk.Label, 64)
			if err != nil || math.Abs(v-tk.Value) > 1e-6*(r[1]-r[0]) || strings.HasPrefix(tk.Label, "-0") && v == 0 {
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

// trendRun is one finished ZINC run of a setting at r with its test MAE.
func trendRun(model, enc string, cls bool, r int, seed int64, test float64) *results.Run {
	res := &runfiles.Result{Name: fmt.Sprintf("zinc-%s-%s-%v-r%d", model, enc, cls, r), Dataset: "zinc", Model: model, Encoding: enc,
		CLS: cls, R: r, Seed: seed, Metric: runfiles.MetricMAE, TestMetric: test, ValMetric: test, TrainMetric: test,
		Epochs: 100, SecondsPerEpoch: 1, TotalSeconds: 100, Params: 100000, Device: "cpu", StoppedBy: runfiles.StopMinLR, ConfigHash: protocolHash}
	return &results.Run{Dir: filepath.Join("runs", res.Name, fmt.Sprintf("seed%d", seed)), Result: res}
}

// pngSize decodes a PNG's dimensions.
func pngSize(t *testing.T, path string) (w, h int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return cfg.Width, cfg.Height
}

// TestRTrend: a panel for each column with runs at three or more r (gcn-adj-cls at r = 1, 2, 3),
// none for a column at one r (gcn-adj); each panel's points are the runs' test metrics, its line
// the means over the seeds, its band the paper's mean ± std; no file without such a column.
func TestRTrend(t *testing.T) {
	runs := []*results.Run{
		trendRun("gatedgcn", "adj", true, 1, 41, 0.30), trendRun("gatedgcn", "adj", true, 1, 95, 0.26), trendRun("gatedgcn", "adj", true, 1, 12, 0.28),
		trendRun("gatedgcn", "adj", true, 2, 41, 0.21), trendRun("gatedgcn", "adj", true, 2, 95, 0.19),
		trendRun("gatedgcn", "adj", true, 3, 41, 0.15), trendRun("gatedgcn", "adj", true, 3, 95, 0.17), trendRun("gatedgcn", "adj", true, 3, 12, 0.16),
		trendRun("gatedgcn", "adj", true, 3, 35, 0.12),
		trendRun("gatedgcn", "adj", false, 1, 41, 0.33), trendRun("gatedgcn", "adj", false, 1, 95, 0.35),
	}
	table := func(runs []*results.Run) *Table {
		t.Helper()
		groups, err := results.Aggregate(runs, results.Options{})
		if err != nil {
			t.Fatal(err)
		}
		tb, err := Build("table:zinc", groups, smallZinc(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		return tb
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	tb := table(runs)
	cols := TrendColumns(tb)
	if len(cols) != 1 || cols[0].Setting != "gcn-adj-cls" {
		t.Fatalf("columns %+v, want gcn-adj-cls alone", cols)
	}
	c := cols[0]
	// seeds by r, then by seed (12, 35, 41, 95)
	seeds := []plotter.XY{{X: 1, Y: 0.28}, {X: 1, Y: 0.30}, {X: 1, Y: 0.26}, {X: 2, Y: 0.21}, {X: 2, Y: 0.19},
		{X: 3, Y: 0.16}, {X: 3, Y: 0.12}, {X: 3, Y: 0.15}, {X: 3, Y: 0.17}}
	if len(c.Seeds) != len(seeds) {
		t.Fatalf("seed points %v, want %v", c.Seeds, seeds)
	}
	for i, p := range seeds {
		if c.Seeds[i] != p {
			t.Errorf("seed point %d: %v, want %v", i, c.Seeds[i], p)
		}
	}
	mean := []plotter.XY{{X: 1, Y: 0.28}, {X: 2, Y: 0.20}, {X: 3, Y: 0.15}} // (.30+.26+.28)/3, (.21+.19)/2, (.15+.17+.16+.12)/4
	if len(c.Mean) != len(mean) {
		t.Fatalf("mean line %v, want %v", c.Mean, mean)
	}
	for i, p := range mean {
		if c.Mean[i].X != p.X || !near(c.Mean[i].Y, p.Y) {
			t.Errorf("mean at r=%g: %v, want %v", p.X, c.Mean[i], p)
		}
	}
	// the paper's gcn-adj-cls: 0.287±0.010, 0.198±0.011, 0.152±0.007
	band := []TrendBand{{1, 0.287, 0.277, 0.297}, {2, 0.198, 0.187, 0.209}, {3, 0.152, 0.145, 0.159}}
	if len(c.Paper) != len(band) {
		t.Fatalf("paper band %v, want %v", c.Paper, band)
	}
	for i, b := range band {
		g := c.Paper[i]
		if g.R != b.R || !near(g.Mean, b.Mean) || !near(g.Low, b.Low) || !near(g.High, b.High) {
			t.Errorf("paper band at r=%g: %+v, want %+v", b.R, g, b)
		}
	}

	dir := t.TempDir()
	// the panel size of the layout: savePanels with blank plots
	refSize := func(n int) (int, int) {
		var ps []*plot.Plot
		for range n {
			ps = append(ps, plot.New())
		}
		p := filepath.Join(dir, fmt.Sprintf("ref%d.png", n))
		if err := savePanels(p, ps); err != nil {
			t.Fatal(err)
		}
		return pngSize(t, p)
	}
	w1, h1 := refSize(1)
	path := filepath.Join(dir, "zinc-rtrend.png")
	if wrote, err := PlotRTrend(tb, path); err != nil || !wrote {
		t.Fatalf("PlotRTrend: wrote %v, %v", wrote, err)
	}
	if w, h := pngSize(t, path); w != w1 || h != h1 {
		t.Errorf("one column: %dx%d, want one panel's %dx%d", w, h, w1, h1)
	}
	// a column the paper lacks, at r = 1, 2, 3: a second panel, without a band
	more := append(runs[:len(runs):len(runs)], trendRun("gatedgcn", "none", false, 1, 41, 0.6),
		trendRun("gatedgcn", "none", false, 2, 41, 0.5), trendRun("gatedgcn", "none", false, 3, 41, 0.55))
	if cols := TrendColumns(table(more)); len(cols) != 2 || cols[1].Setting != "gcn-none" || len(cols[1].Paper) != 0 || len(cols[1].Seeds) != 3 {
		t.Errorf("with gcn-none: %+v", cols)
	}
	two := filepath.Join(dir, "two.png")
	if wrote, err := PlotRTrend(table(more), two); err != nil || !wrote {
		t.Fatalf("PlotRTrend with two columns: wrote %v, %v", wrote, err)
	}
	w2, h2 := refSize(2)
	if w, h := pngSize(t, two); w != w2 || h != h2 || w2 <= w1 {
		t.Errorf("two columns: %dx%d, want two panels' %dx%d", w, h, w2, h2)
	}
	if os.Getenv("REPORT_KEEP_PLOTS") != "" {
		for _, p := range []string{path, two} {
			b, _ := os.ReadFile(p)
			os.WriteFile(filepath.Join(os.Getenv("REPORT_KEEP_PLOTS"), "rtrend-"+filepath.Base(p)), b, 0o644)
		}
	}

	// without r = 3 no column has three r: no file, no error
	none := filepath.Join(dir, "none-rtrend.png")
	wrote, err := PlotRTrend(table(runs[:5]), none)
	if err != nil || wrote {
		t.Errorf("no qualifying column: wrote %v, %v", wrote, err)
	}
	if _, err := os.Stat(none); !os.IsNotExist(err) {
		t.Errorf("no qualifying column: %s exists (%v)", none, err)
	}
}

// TestEveryPlotUsesValueTicks reads the package's source: plot.New is called in newPlot only,
// so that every figure drawn here (metric, r-trend, time and density, curves, the paper's
// figures) labels both axes with valueTicks, not gonum's default ticker.
func TestEveryPlotUsesValueTicks(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ast.Inspect(fn, func(x ast.Node) bool {
				sel, ok := x.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "New" {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "plot" {
					n++
					if fn.Name.Name != "newPlot" {
						t.Errorf("%s: %s calls plot.New: use newPlot", fset.Position(sel.Pos()), fn.Name.Name)
					}
				}
				return true
			})
		}
	}
	if n != 1 {
		t.Errorf("plot.New called %d times, want once (in newPlot)", n)
	}
	p := newPlot()
	if _, ok := p.X.Tick.Marker.(valueTicks); !ok {
		t.Error("newPlot: X axis without valueTicks")
	}
	if _, ok := p.Y.Tick.Marker.(valueTicks); !ok {
		t.Error("newPlot: Y axis without valueTicks")
	}
}

// TestQuietCorner: the r-trend's legend leaves the corner where the data are for the emptiest
// one, and keeps the default corner when the data leave it free.
func TestQuietCorner(t *testing.T) {
	col := func(ys ...float64) TrendColumn {
		var c TrendColumn
		for i, y := range ys {
			c.Mean = append(c.Mean, plotter.XY{X: float64(i + 1), Y: y})
		}
		return c
	}
	for _, tc := range []struct {
		what      string
		ys        []float64
		top, left bool
	}{
		{"falling: the top right is free", []float64{10, 8, 6, 4, 3, 2, 1, 1, 1, 1}, true, false},
		{"rising at the end: the top left is free", []float64{1, 1, 1, 1, 1, 1, 2, 3, 9, 10}, true, true},
		{"high but for one point at the bottom right: the bottom left is free", []float64{10, 10, 10, 10, 10, 10, 10, 1, 10, 10}, false, true},
	} {
		p := plot.New()
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 1, 10, 0, 10
		p.Legend.Top = true
		quietCorner(p, col(tc.ys...))
		if p.Legend.Top != tc.top || p.Legend.Left != tc.left {
			t.Errorf("%s: legend top %v left %v, want %v %v", tc.what, p.Legend.Top, p.Legend.Left, tc.top, tc.left)
		}
	}
}
