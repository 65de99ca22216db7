package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/rewiregnn/rewiregnn/internal/plural"
	"github.com/rewiregnn/rewiregnn/report/results"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// panel size of every plot
const (
	panelW = 12 * vg.Centimeter
	panelH = 9 * vg.Centimeter
)

// savePanels lays plots out in one row and writes a PNG atomically.
func savePanels(path string, plots []*plot.Plot) error {
	img := vgimg.New(panelW*vg.Length(len(plots)), panelH)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Centimeter, PadTop: vg.Millimeter * 2,
		PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, dc)
	for j, p := range plots {
		p.Draw(canvases[0][j])
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return runfiles.WriteAtomic(path, buf.Bytes(), 0o644)
}

// rAxis puts a tick at every r of the table and spans them all.
func rAxis(p *plot.Plot, rows []int) {
	if len(rows) == 0 {
		return
	}
	var ticks []plot.Tick
	for _, r := range rows {
		ticks = append(ticks, plot.Tick{Value: float64(r), Label: fmt.Sprint(r)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = float64(rows[0])-0.25, float64(rows[len(rows)-1])+0.25
}

// newPlot is plot.New with valueTicks on both axes: every figure of the project starts here
// (TestEveryPlotUsesValueTicks), so that no axis is labelled by gonum's default ticker, which
// writes two significant digits (a tick at 1.25 labelled "1.2"). An axis of whole r values
// replaces its ticks with rAxis.
func newPlot() *plot.Plot {
	p := plot.New()
	p.X.Tick.Marker = valueTicks{}
	p.Y.Tick.Marker = valueTicks{}
	return p
}

// valueTicks is gonum's default ticker (where the ticks go) with every label written exactly,
// all with the same number of decimals, as many as the ticks' spacing needs: 0.95, 1.10, 1.25
// on an axis of MAEs from 0.92 to 1.28; 200, 600, 1000 on an axis of epochs.
type valueTicks struct{}

// Ticks implements plot.Ticker.
func (valueTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	var vals []float64
	for _, t := range ticks {
		if t.Label != "" {
			vals = append(vals, t.Value)
		}
	}
	dec, tol := tickDecimals(vals)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = tickLabel(ticks[i].Value, dec, tol)
		}
	}
	return ticks
}

// tickLabel writes v with dec decimals; a value within tol of zero (a sum of steps that should
// have come to zero) as zero, never "-0.0".
func tickLabel(v float64, dec int, tol float64) string {
	if math.Abs(v) <= tol {
		v = 0
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

// maxTickDecimals bounds tickDecimals: enough for the ticks of any range a figure draws (a
// spacing of 1e-12 needs 13).
const maxTickDecimals = 20

// tickDecimals is the fewest decimals (at most maxTickDecimals) that write each of vals
// exactly, to within tol: a millionth of the smallest gap between them (the ticks are sums of a
// step and carry rounding error), or a billionth of the value itself for a single tick.
func tickDecimals(vals []float64) (dec int, tol float64) {
	tol = math.Inf(1)
	for i := 1; i < len(vals); i++ {
		tol = math.Min(tol, math.Abs(vals[i]-vals[i-1])*1e-6)
	}
	if math.IsInf(tol, 1) || tol == 0 {
		tol = 1e-9
		if len(vals) == 1 && vals[0] != 0 {
			tol = math.Abs(vals[0]) * 1e-9
		}
	}
	for dec = 0; dec < maxTickDecimals; dec++ {
		if writesExactly(vals, dec, tol) {
			return dec, tol
		}
	}
	return maxTickDecimals, tol
}

// writesExactly reports whether every value, written with dec decimals, reads back within tol.
func writesExactly(vals []float64, dec int, tol float64) bool {
	for _, v := range vals {
		back, err := strconv.ParseFloat(tickLabel(v, dec, tol), 64)
		if err != nil || math.Abs(back-v) > tol {
			return false
		}
	}
	return true
}

// variant is a setting without its model: adj, adj-cls, …
func variant(setting string) (model, rest string) {
	model, rest, _ = strings.Cut(setting, "-")
	return model, rest
}

// modelTitle is the name in prose of a column key's model label (gcn: GatedGCN).
func modelTitle(m string) string { return modelName(results.RegistryModel(m)) }

// style gives each variant (encoding, cls) one colour and glyph across all panels and plots.
func style(variants []string, v string) (color.Color, draw.GlyphDrawer) {
	i := sort.SearchStrings(variants, v)
	return plotutil.Color(i), plotutil.Shape(i)
}

func (t *Table) variants() (models []string, variants []string) {
	seenM, seenV := map[string]bool{}, map[string]bool{}
	for _, c := range t.Columns {
		m, v := variant(c)
		if !seenM[m] {
			seenM[m] = true
			models = append(models, m)
		}
		if !seenV[v] {
			seenV[v] = true
			variants = append(variants, v)
		}
	}
	sort.Strings(variants)
	return models, variants
}

type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

// PlotMetric draws the test metric against r: one panel per model, one colour per encoding and
// CLS; ours solid with population-std error bars, the paper's dashed.
func PlotMetric(t *Table, path string) error {
	models, variants := t.variants()
	var plots []*plot.Plot
	for _, m := range models {
		p := newPlot()
		p.Title.Text = fmt.Sprintf("%s %s", DatasetTitle(t.Dataset), modelTitle(m))
		p.X.Label.Text = "r"
		p.Y.Label.Text = MetricTitle(t.Metric)
		p.Legend.Top = runfiles.LowerIsBetter(t.Metric)
		p.Add(plotter.NewGrid())
		rAxis(p, t.Rows)
		for _, c := range t.Columns {
			cm, v := variant(c)
			if cm != m {
				continue
			}
			col, glyph := style(variants, v)
			var ours errPoints
			var theirs plotter.XYs
			for _, r := range t.Rows {
				if g := t.Group(c, r); g != nil && !math.IsNaN(g.Test.Mean) {
					ours.XYs = append(ours.XYs, plotter.XY{X: float64(r), Y: g.Test.Mean})
					ours.YErrors = append(ours.YErrors, struct{ Low, High float64 }{g.Test.Std, g.Test.Std})
				}
				if pc, ok := t.PaperCell(c, r); ok {
					if mean, _, ok := pc.Values(); ok {
						theirs = append(theirs, plotter.XY{X: float64(r), Y: mean})
					}
				}
			}
			if len(ours.XYs) > 0 {
				l, s, err := plotter.NewLinePoints(ours.XYs)
				if err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				l.Color, s.Color, s.Shape = col, col, glyph
				eb, err := plotter.NewYErrorBars(ours)
				if err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				eb.Color = col
				p.Add(l, s, eb)
				p.Legend.Add(v, l, s)
			}
			if len(theirs) > 0 {
				l, err := plotter.NewLine(theirs)
				if err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				l.Color = col
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
				p.Add(l)
				p.Legend.Add(v+" (paper)", l)
			}
		}
		plots = append(plots, p)
	}
	if len(plots) == 0 {
		return fmt.Errorf("%s: %s has no settings to plot", path, t.ID)
	}
	return savePanels(path, plots)
}

// PlotTime draws the mean seconds per training epoch against r per setting, and in a second
// panel the density against r (the paper's, and ours when measured).
func PlotTime(t *Table, path string) error {
	_, variants := t.variants()
	p := newPlot()
	p.Title.Text = DatasetTitle(t.Dataset) + ": seconds per training epoch"
	p.X.Label.Text = "r"
	p.Y.Label.Text = "s / epoch (mean over seeds)"
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	drew := false
	for _, c := range t.Columns {
		var xy plotter.XYs
		for _, r := range t.Rows {
			if g := t.Group(c, r); g != nil {
				xy = append(xy, plotter.XY{X: float64(r), Y: g.SecondsPerEpoch.Mean})
			}
		}
		if len(xy) == 0 {
			continue
		}
		drew = true
		m, v := variant(c)
		col, glyph := style(variants, v)
		l, s, err := plotter.NewLinePoints(xy)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		l.Color, s.Color, s.Shape = col, col, glyph
		l.Dashes = plotutil.Dashes(modelIndex(m))
		p.Add(l, s)
		p.Legend.Add(results.RegistrySetting(c), l, s)
	}
	if !drew {
		return fmt.Errorf("%s: no finished runs of %s to time", path, t.ID)
	}
	d := newPlot()
	d.Title.Text = DatasetTitle(t.Dataset) + ": density |E'_r| / |V|^2"
	d.X.Label.Text = "r"
	d.Y.Label.Text = "density"
	d.Legend.Top = false
	d.Legend.Left = false
	d.Add(plotter.NewGrid())
	var theirs, ours plotter.XYs
	for _, r := range t.Rows {
		if t.Paper != nil {
			if row, ok := t.Paper.RowR(r); ok {
				if v, _, ok := row.DensityValue(); ok {
					theirs = append(theirs, plotter.XY{X: float64(r), Y: v})
				}
			}
		}
		if v, ok := t.Density[r]; ok {
			ours = append(ours, plotter.XY{X: float64(r), Y: v})
		}
	}
	for i, set := range []struct {
		name string
		xy   plotter.XYs
	}{{"paper", theirs}, {"ours", ours}} {
		if len(set.xy) == 0 {
			continue
		}
		l, s, err := plotter.NewLinePoints(set.xy)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		l.Color, s.Color = plotutil.Color(i), plotutil.Color(i)
		d.Add(l, s)
		d.Legend.Add(set.name, l, s)
	}
	d.Y.Min, d.Y.Max = 0, 1.05
	rAxis(p, t.Rows)
	rAxis(d, t.Rows)
	return savePanels(path, []*plot.Plot{p, d})
}

func modelIndex(m string) int {
	switch m {
	case "gcn":
		return 0
	case "trans":
		return 1
	case "mon":
		return 2
	}
	return 3
}

// PlotCurves draws the learning curves of one setting: validation loss and validation metric per
// epoch, one line per r, each the mean over the seeds up to the shortest seed's last epoch.
func PlotCurves(dataset, metric, setting string, groups []*results.Group, path string) error {
	loss := newPlot()
	loss.Title.Text = fmt.Sprintf("%s %s: validation loss", DatasetTitle(dataset), results.RegistrySetting(setting))
	loss.X.Label.Text = "epoch"
	loss.Y.Label.Text = "val loss (mean over seeds)"
	met := newPlot()
	met.Title.Text = fmt.Sprintf("%s %s: validation metric", DatasetTitle(dataset), results.RegistrySetting(setting))
	met.X.Label.Text = "epoch"
	met.Y.Label.Text = "val " + strings.TrimPrefix(MetricTitle(metric), "test ")
	met.Legend.Top = !runfiles.LowerIsBetter(metric)
	loss.Legend.Top = true
	loss.Add(plotter.NewGrid())
	met.Add(plotter.NewGrid())
	sort.Slice(groups, func(i, j int) bool { return groups[i].R < groups[j].R })
	lines := 0
	for i, g := range groups {
		var hist [][]runfiles.Epoch
		for _, r := range g.Runs {
			e, err := r.Epochs()
			if err != nil {
				return err
			}
			if len(e) > 0 && hasVal(e) { // a run without a validation split has no curve here
				hist = append(hist, e)
			}
		}
		if len(hist) == 0 {
			continue
		}
		n := len(hist[0])
		for _, h := range hist {
			n = min(n, len(h))
		}
		var lxy, mxy plotter.XYs
		for ep := 0; ep < n; ep++ {
			var l, m float64
			for _, h := range hist {
				l += h[ep].ValLoss
				m += h[ep].ValMetric
			}
			k := float64(len(hist))
			lxy = append(lxy, plotter.XY{X: float64(hist[0][ep].Epoch), Y: l / k})
			mxy = append(mxy, plotter.XY{X: float64(hist[0][ep].Epoch), Y: m / k})
		}
		name := fmt.Sprintf("r=%d (%s)", g.R, plural.Count(len(hist), "seed"))
		for _, pl := range []struct {
			p  *plot.Plot
			xy plotter.XYs
		}{{loss, lxy}, {met, mxy}} {
			l, err := plotter.NewLine(pl.xy)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			l.Color = plotutil.Color(i)
			pl.p.Add(l)
			pl.p.Legend.Add(name, l)
		}
		lines++
	}
	if lines == 0 {
		return fmt.Errorf("%s: no metrics.jsonl with validation figures for %s", path, setting)
	}
	return savePanels(path, []*plot.Plot{loss, met})
}

// hasVal reports whether every epoch of a run's metrics.jsonl has the validation figures (a
// run without a validation split has none: runfiles.Epoch.NoVal).
func hasVal(eps []runfiles.Epoch) bool {
	for _, e := range eps {
		if e.NoVal {
			return false
		}
	}
	return true
}
