package report

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/report/paper"
	"github.com/rewiregnn/rewiregnn/report/results"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

func paperFigure(t *testing.T, id string) *paper.Figure {
	t.Helper()
	f, err := paper.Load()
	if err != nil {
		t.Fatal(err)
	}
	fig, ok := f.Figure(id)
	if !ok {
		t.Fatalf("no %s in tables.json", id)
	}
	return fig
}

// erdosRun writes a run whose epoch e logs training accuracy acc(e) % and returns it.
func erdosRun(t *testing.T, enc string, r int, seed int64, epochs int, acc func(e int) float64) *results.Run {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "seed")
	eps := make([]runfiles.Epoch, epochs)
	for e := range eps {
		eps[e] = runfiles.Epoch{Epoch: e, LR: 1e-3, TrainLoss: 1, TrainMetric: acc(e)}
	}
	if err := runfiles.WriteMetrics(filepath.Join(dir, runfiles.MetricsFile), eps); err != nil {
		t.Fatal(err)
	}
	res := &runfiles.Result{Name: "erdosrenyi-gatedgcn-" + enc, Dataset: "erdosrenyi", Model: "gatedgcn", Encoding: enc, R: r,
		Seed: seed, Metric: runfiles.MetricAccuracy, TrainMetric: 3, Epochs: epochs, StoppedBy: runfiles.StopMaxEpochs, ConfigHash: protocolHash}
	return &results.Run{Dir: dir, Result: res}
}

// TestErdosFigure: per epoch, our curve is the mean and population std of the seeds' logged
// training accuracies as fractions; the paper's epoch 250 reads our last epoch (249); a series
// without runs stays empty; the Markdown puts ours beside the paper's value.
func TestErdosFigure(t *testing.T) {
	runs := []*results.Run{
		erdosRun(t, "short", 5, 41, 250, func(e int) float64 { return float64(e) * 0.4 }),
		erdosRun(t, "short", 5, 95, 250, func(e int) float64 { return float64(e) * 0.2 }),
		erdosRun(t, "lp", 5, 41, 250, func(int) float64 { return 7 }),
	}
	groups, err := results.Aggregate(runs, results.Options{DefaultPlanned: 1})
	if err != nil {
		t.Fatal(err)
	}
	fig, err := BuildFigure(paperFigure(t, "fig:random_erdos"), groups)
	if err != nil {
		t.Fatal(err)
	}
	byLabel := map[string]FigureCurve{}
	for _, c := range fig.Curves {
		byLabel[c.Label] = c
	}
	short := byLabel["Shortest"]
	if len(short.Points) != 250 {
		t.Fatalf("Shortest: %d points, want 250", len(short.Points))
	}
	p := short.Points[100] // seeds at 40% and 20%
	if p.X != 100 || math.Abs(p.Y.Mean-0.30) > 1e-12 || math.Abs(p.Y.Std-0.10) > 1e-12 || p.Y.N != 2 {
		t.Errorf("Shortest at epoch 100: %+v; want 0.30 ± 0.10 over 2 seeds", p)
	}
	if last, ok := short.at(250, true); !ok || last.X != 249 {
		t.Errorf("the paper's epoch 250 reads our epoch %v (%t), want 249", last.X, ok)
	}
	if lp := byLabel["Laplacian"]; len(lp.Points) != 250 || lp.Points[0].Y.Mean != 0.07 || lp.Points[0].Y.Std != 0 {
		t.Errorf("Laplacian: %d points, first %+v", len(lp.Points), lp.Points)
	}
	if len(byLabel["Adj-5"].Points) != 0 || len(byLabel["Adj-10"].Points) != 0 {
		t.Errorf("curves without runs have points")
	}
	md := fig.Markdown()
	for _, want := range []string{
		"| epoch | Laplacian (gatedgcn-lp r=5) | Shortest (gatedgcn-short r=5) | Adj-5 (gatedgcn-adj r=5) | Adj-10 (gatedgcn-adj r=10) |",
		"| 100 | 0.07 ± 0.00 (1) / 0.10 | 0.30 ± 0.10 (2) / 0.35 | – / 0.40 | – / 0.02 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	if err := fig.Plot(filepath.Join(t.TempDir(), "erdos.png")); err != nil {
		t.Error(err)
	}
}

// TestNeighborsFigure: per problem radius (dataset neighborsmatch-<r_p>), the seeds' final
// training accuracy as fractions, for the series' setting and r only.
func TestNeighborsFigure(t *testing.T) {
	var runs []*results.Run
	add := func(depth, r int, cls bool, seed int64, acc float64) {
		ds := "neighborsmatch-" + string(rune('0'+depth))
		res := &runfiles.Result{Name: ds + "-x", Dataset: ds, Model: "gatedgcn", Encoding: "adj", CLS: cls, R: r, Seed: seed,
			Metric: runfiles.MetricAccuracy, TrainMetric: acc, TestMetric: acc, Epochs: 10, StoppedBy: runfiles.StopMinLR, ConfigHash: protocolHash}
		runs = append(runs, &results.Run{Dir: t.TempDir(), Result: res})
	}
	add(3, 1, false, 41, 100)
	add(3, 1, false, 95, 100)
	add(4, 1, false, 41, 10)
	add(4, 1, false, 95, 6)
	add(4, 2, false, 41, 100)
	add(4, 1, true, 41, 90)
	groups, err := results.Aggregate(runs, results.Options{DefaultPlanned: 1})
	if err != nil {
		t.Fatal(err)
	}
	fig, err := BuildFigure(paperFigure(t, "fig:neighborplot"), groups)
	if err != nil {
		t.Fatal(err)
	}
	r1 := fig.Curves[0]
	if r1.Label != "r=1" || len(r1.Points) != 2 || r1.Points[0].X != 3 || r1.Points[0].Y.Mean != 1 ||
		r1.Points[1].X != 4 || math.Abs(r1.Points[1].Y.Mean-0.08) > 1e-12 || math.Abs(r1.Points[1].Y.Std-0.02) > 1e-12 {
		t.Errorf("r=1 curve: %+v", r1.Points)
	}
	if cls := fig.Curves[4]; cls.Label != "r=1,CLS" || len(cls.Points) != 1 || cls.Points[0].Y.Mean != 0.9 {
		t.Errorf("r=1,CLS curve: %+v", cls)
	}
	if fig.Groups != 4 {
		t.Errorf("%d groups of the figure's datasets, want 4", fig.Groups)
	}
	md := fig.Markdown()
	for _, want := range []string{"| 4 | 0.08 ± 0.02 (2) / 0.08 | 1.00 ± 0.00 (1) / 1.00 |", "| 5 | – / 0.03 | – / 0.20 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q (a radius without runs reads no neighbour):\n%s", want, md)
		}
	}
}
