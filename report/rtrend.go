package report

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

// TrendMinRows is the number of distinct r with finished runs a column needs for a panel of the
// r-trend figure.
const TrendMinRows = 3

// TrendColumn is the data of one panel of the r-trend figure: a column of a table whose runs
// have finished at TrendMinRows or more r values.
type TrendColumn struct {
	Setting string      // the column, e.g. gcn-adj-cls
	Seeds   plotter.XYs // one point per run of the table's cells: (r, the run's test metric), by r then seed
	Mean    plotter.XYs // (r, our mean over the seeds), the table's cell, at each r with runs
	Paper   []TrendBand // the paper's cell at each r where it has a number
}

// TrendBand is the paper's cell at one r: its mean, and Low = mean − std, High = mean + std.
type TrendBand struct {
	R               float64
	Mean, Low, High float64
}

// TrendColumns selects the columns of t with finished runs at TrendMinRows or more r values, in
// the table's column order, with each one's per-run points, mean line and the paper's band.
// The runs are those of the table's groups (the cells it prints), each with its result's test
// metric, the value the cell's mean is taken over.
func TrendColumns(t *Table) []TrendColumn {
	var out []TrendColumn
	for _, c := range t.Columns {
		col := TrendColumn{Setting: c}
		for _, r := range t.Rows {
			x := float64(r)
			if g := t.Group(c, r); g != nil && !math.IsNaN(g.Test.Mean) {
				col.Mean = append(col.Mean, plotter.XY{X: x, Y: g.Test.Mean})
				for _, run := range g.Runs {
					if v := run.Result.TestMetric; !math.IsNaN(v) {
						col.Seeds = append(col.Seeds, plotter.XY{X: x, Y: v})
					}
				}
			}
			if pc, ok := t.PaperCell(c, r); ok {
				if m, s, ok := pc.Values(); ok {
					col.Paper = append(col.Paper, TrendBand{R: x, Mean: m, Low: m - s, High: m + s})
				}
			}
		}
		if len(col.Mean) >= TrendMinRows {
			out = append(out, col)
		}
	}
	return out
}

// variantTitle is a variant as a panel title writes it: adj-cls as "adj CLS".
func variantTitle(v string) string {
	if enc, ok := strings.CutSuffix(v, "-cls"); ok {
		return enc + " CLS"
	}
	return v
}

// paper's colours in the r-trend figure: a dark dashed mean over a light band
var (
	trendPaperLine = color.Gray{Y: 0x40}
	trendPaperBand = color.NRGBA{R: 0x80, G: 0x80, B: 0x80, A: 0x48}
)

// PlotRTrend draws the r-trend figure of a table: a panel per column of TrendColumns (x = r,
// y = the test metric), each of our runs a point, our mean over the seeds a solid line, the
// paper's mean a dashed line in a shaded band of ± its std. A table without such a column
// gets no file: wrote is false, and err nil.
func PlotRTrend(t *Table, path string) (wrote bool, err error) {
	cols := TrendColumns(t)
	if len(cols) == 0 {
		return false, nil
	}
	_, variants := t.variants()
	var plots []*plot.Plot
	for _, c := range cols {
		m, v := variant(c.Setting)
		p := newPlot()
		p.Title.Text = fmt.Sprintf("%s %s %s", DatasetTitle(t.Dataset), modelTitle(m), variantTitle(v))
		p.X.Label.Text = "r"
		p.Y.Label.Text = MetricTitle(t.Metric)
		p.Legend.Top = runfiles.LowerIsBetter(t.Metric)
		p.Add(plotter.NewGrid())
		rAxis(p, t.Rows)
		col, glyph := style(variants, v)

		var paperKey []plot.Thumbnailer
		if len(c.Paper) > 0 {
			var mean, ring plotter.XYs
			for _, b := range c.Paper {
				mean = append(mean, plotter.XY{X: b.R, Y: b.Mean})
				ring = append(ring, plotter.XY{X: b.R, Y: b.Low})
			}
			for i := len(c.Paper) - 1; i >= 0; i-- {
				ring = append(ring, plotter.XY{X: c.Paper[i].R, Y: c.Paper[i].High})
			}
			band, err := plotter.NewPolygon(ring)
			if err != nil {
				return false, fmt.Errorf("%s: %w", path, err)
			}
			band.Color = trendPaperBand
			band.LineStyle.Width, band.LineStyle.Color = 0, color.Transparent
			l, err := plotter.NewLine(mean)
			if err != nil {
				return false, fmt.Errorf("%s: %w", path, err)
			}
			l.Color, l.Width = trendPaperLine, vg.Points(1.2)
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(band, l)
			paperKey = []plot.Thumbnailer{band, l}
		}

		l, err := plotter.NewLine(c.Mean)
		if err != nil {
			return false, fmt.Errorf("%s: %w", path, err)
		}
		l.Color, l.Width = col, vg.Points(1.5)
		s, err := plotter.NewScatter(c.Seeds)
		if err != nil {
			return false, fmt.Errorf("%s: %w", path, err)
		}
		s.Color, s.Shape, s.Radius = col, glyph, vg.Points(2.5)
		p.Add(l, s)
		// a margin so that the extreme runs' glyphs do not sit on the frame
		pad := 0.05 * (p.Y.Max - p.Y.Min)
		p.Y.Min, p.Y.Max = p.Y.Min-pad, p.Y.Max+pad
		p.Legend.Add("ours (seeds)", s)
		p.Legend.Add("ours (mean)", l)
		if paperKey != nil {
			p.Legend.Add("paper (mean ± std)", paperKey...)
		}
		quietCorner(p, c)
		plots = append(plots, p)
	}
	if err := savePanels(path, plots); err != nil {
		return false, err
	}
	return true, nil
}

// quietCorner puts p's legend in the corner whose region (the outer 40 % of each axis)
// holds the fewest of c's points (our runs and means, the paper's means and band edges), so that
// the legend does not cover the data; ties keep the default (the top for a lower-is-better
// metric, the right).
func quietCorner(p *plot.Plot, c TrendColumn) {
	var pts []plotter.XY
	pts = append(append(pts, c.Seeds...), c.Mean...)
	for _, b := range c.Paper {
		pts = append(pts, plotter.XY{X: b.R, Y: b.Mean}, plotter.XY{X: b.R, Y: b.Low}, plotter.XY{X: b.R, Y: b.High})
	}
	const frac = 0.4
	xs, ys := p.X.Max-p.X.Min, p.Y.Max-p.Y.Min
	count := func(top, left bool) int {
		n := 0
		for _, q := range pts {
			inX := q.X >= p.X.Max-frac*xs
			if left {
				inX = q.X <= p.X.Min+frac*xs
			}
			inY := q.Y <= p.Y.Min+frac*ys
			if top {
				inY = q.Y >= p.Y.Max-frac*ys
			}
			if inX && inY {
				n++
			}
		}
		return n
	}
	best, bestTop, bestLeft := count(p.Legend.Top, p.Legend.Left), p.Legend.Top, p.Legend.Left
	for _, top := range []bool{true, false} {
		for _, left := range []bool{false, true} {
			if n := count(top, left); n < best {
				best, bestTop, bestLeft = n, top, left
			}
		}
	}
	p.Legend.Top, p.Legend.Left = bestTop, bestLeft
}
