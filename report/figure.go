package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/rewiregnn/rewiregnn/report/paper"
	"github.com/rewiregnn/rewiregnn/report/results"
)

// Figure is one of the paper's plotted figures with our curves beside its points: one curve per
// paper series (its setting and r), each point the mean ± population std over our seeds.
type Figure struct {
	ID      string           `json:"id"`
	Dataset string           `json:"dataset"`
	X       string           `json:"x"` // epoch or r_p
	Y       string           `json:"y"`
	Curves  []FigureCurve    `json:"curves"`
	Paper   *paper.Figure    `json:"-"`
	Groups  int              `json:"groups"` // our aggregated settings of the figure's dataset
	groups  []*results.Group // those settings, by name
}

// FigureCurve is our curve of one paper series.
type FigureCurve struct {
	Label   string        `json:"label"`
	Setting string        `json:"setting"`
	R       int           `json:"r"`
	Points  []FigurePoint `json:"points"` // by increasing x; empty when no run of the setting exists
	Paper   paper.Series  `json:"-"`
}

// FigurePoint is our value at one x.
type FigurePoint struct {
	X float64      `json:"x"`
	Y results.Stat `json:"y"`
}

// BuildFigure assembles our curves of a paper figure from aggregated runs:
//
//   - x = epoch (fig:random_erdos): per epoch, the training accuracy the run logged for that
//     epoch (on the fly, in training mode, as the paper's curves are drawn), over the seeds
//     that reached it;
//   - x = r_p (fig:neighborplot): per problem radius (dataset neighborsmatch-<r_p>), the best
//     training accuracy of each seed over its epochs (on the fly, Alon & Yahav's "best train
//     acc"; the final evaluation's when the run kept no epoch log).
//
// Accuracies are fractions, as the paper plots them.
func BuildFigure(pf *paper.Figure, groups []*results.Group) (*Figure, error) {
	f := &Figure{ID: pf.ID, Dataset: pf.Dataset, X: pf.X, Y: pf.Y, Paper: pf}
	for _, s := range pf.Series {
		c := FigureCurve{Label: s.Label, Setting: s.Setting, R: s.R, Paper: s}
		var err error
		switch pf.X {
		case "epoch":
			c.Points, err = epochPoints(pf.Dataset, s, groups)
		case "r_p":
			c.Points, err = radiusPoints(pf.Dataset, s, groups)
		default:
			err = fmt.Errorf("%s: no builder for x = %q", pf.ID, pf.X)
		}
		if err != nil {
			return nil, err
		}
		f.Curves = append(f.Curves, c)
	}
	for _, g := range groups {
		if figureDataset(pf.Dataset, g.Dataset) {
			f.groups = append(f.groups, g)
		}
	}
	sort.Slice(f.groups, func(i, j int) bool { return f.groups[i].Name < f.groups[j].Name })
	f.Groups = len(f.groups)
	return f, nil
}

// figureDataset says whether a run's dataset belongs to a figure's (neighborsmatch-3 to
// neighborsmatch).
func figureDataset(fig, ds string) bool {
	return ds == fig || strings.HasPrefix(ds, fig+"-")
}

func findGroup(groups []*results.Group, dataset string, s paper.Series) *results.Group {
	for _, g := range groups {
		if g.Dataset == dataset && g.Setting() == s.Setting && g.R == s.R {
			return g
		}
	}
	return nil
}

// epochPoints: the per-epoch training accuracy of the series' runs.
func epochPoints(dataset string, s paper.Series, groups []*results.Group) ([]FigurePoint, error) {
	g := findGroup(groups, dataset, s)
	if g == nil {
		return nil, nil
	}
	byEpoch := map[int][]float64{}
	for _, r := range g.Runs {
		eps, err := r.Epochs()
		if err != nil {
			return nil, err
		}
		for _, e := range eps {
			byEpoch[e.Epoch] = append(byEpoch[e.Epoch], e.TrainMetric/100)
		}
	}
	var out []FigurePoint
	for ep, ys := range byEpoch {
		out = append(out, FigurePoint{X: float64(ep), Y: results.MeanStd(ys)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].X < out[j].X })
	return out, nil
}

// radiusPoints: the best training accuracy per problem radius.
func radiusPoints(family string, s paper.Series, groups []*results.Group) ([]FigurePoint, error) {
	var out []FigurePoint
	for _, g := range groups {
		rest, ok := strings.CutPrefix(g.Dataset, family+"-")
		if !ok || g.Setting() != s.Setting || g.R != s.R {
			continue
		}
		rp, err := strconv.Atoi(rest)
		if err != nil {
			continue
		}
		var ys []float64
		for _, r := range g.Runs {
			eps, err := r.Epochs()
			if err != nil {
				return nil, err
			}
			best := r.Result.TrainMetric
			if len(eps) > 0 {
				best = eps[0].TrainMetric
				for _, e := range eps {
					best = max(best, e.TrainMetric)
				}
			}
			ys = append(ys, best/100)
		}
		out = append(out, FigurePoint{X: float64(rp), Y: results.MeanStd(ys)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].X < out[j].X })
	return out, nil
}

// at is our point at x; on an epoch axis, the paper's epoch one past our last one reads our last
// (the paper's epoch 250 is our 250th and last epoch, index 249).
func (c *FigureCurve) at(x float64, epochs bool) (FigurePoint, bool) {
	for _, p := range c.Points {
		if p.X == x {
			return p, true
		}
	}
	if n := len(c.Points); epochs && n > 0 && x > c.Points[n-1].X && x-c.Points[n-1].X <= 1 {
		return c.Points[n-1], true
	}
	return FigurePoint{}, false
}

// Markdown is a table with a row per paper x and, per series, ours (mean ± std, seeds) beside
// the paper's value.
func (f *Figure) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s: %s\n\n", f.ID, f.Paper.Caption)
	fmt.Fprintf(&b, "%s per %s, ours (mean ± std over seeds) / the paper's; %s.\n\n", f.Y, f.X, f.Paper.Note)
	b.WriteString("| " + f.X + " |")
	for _, c := range f.Curves {
		fmt.Fprintf(&b, " %s (%s r=%d) |", c.Label, results.RegistrySetting(c.Setting), c.R)
	}
	b.WriteString("\n|---|")
	for range f.Curves {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	var xs []float64
	for _, c := range f.Curves {
		for _, p := range c.Paper.Points {
			if !slices.Contains(xs, p[0]) {
				xs = append(xs, p[0])
			}
		}
	}
	sort.Float64s(xs)
	for _, x := range xs {
		fmt.Fprintf(&b, "| %g |", x)
		for _, c := range f.Curves {
			ours := "–"
			if p, ok := c.at(x, f.X == "epoch"); ok {
				ours = fmt.Sprintf("%.2f ± %.2f (%d)", p.Y.Mean, p.Y.Std, p.Y.N)
			}
			paperY := "–"
			for _, p := range c.Paper.Points {
				if p[0] == x {
					paperY = strconv.FormatFloat(p[1], 'f', 2, 64)
				}
			}
			fmt.Fprintf(&b, " %s / %s |", ours, paperY)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Plot draws our curves (solid, with a band of ± one std) and the paper's points (dashed, hollow
// markers) in the same colour per series.
func (f *Figure) Plot(path string) error {
	p := newPlot()
	p.Title.Text = fmt.Sprintf("%s: ours (solid) and the paper (dashed)", f.ID)
	p.X.Label.Text = f.X
	p.Y.Label.Text = f.Y
	p.Y.Min, p.Y.Max = 0, 1.05
	p.Legend.Top = f.X == "epoch"
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	for i, c := range f.Curves {
		col := plotutil.Color(i)
		if len(c.Points) > 0 {
			var mid, lo, hi plotter.XYs
			for _, pt := range c.Points {
				mid = append(mid, plotter.XY{X: pt.X, Y: pt.Y.Mean})
				lo = append(lo, plotter.XY{X: pt.X, Y: math.Max(0, pt.Y.Mean-pt.Y.Std)})
				hi = append(hi, plotter.XY{X: pt.X, Y: math.Min(1, pt.Y.Mean+pt.Y.Std)})
			}
			for _, band := range []plotter.XYs{lo, hi} {
				l, err := plotter.NewLine(band)
				if err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				l.Color, l.Width = col, vg.Points(0.4)
				p.Add(l)
			}
			l, pts, err := plotter.NewLinePoints(mid)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			l.Color, l.Width = col, vg.Points(1.5)
			pts.Color, pts.Shape, pts.Radius = col, draw.BoxGlyph{}, vg.Points(2.5)
			if len(mid) > 20 { // a curve per epoch: the line alone
				pts.Radius = 0
			}
			p.Add(l, pts)
			seeds := "seeds"
			if n := c.Points[len(c.Points)-1].Y.N; n == 1 {
				seeds = "seed"
			}
			p.Legend.Add(fmt.Sprintf("%s (ours, %d %s)", c.Label, c.Points[len(c.Points)-1].Y.N, seeds), l, pts)
		}
		var pts plotter.XYs
		for _, q := range c.Paper.Points {
			pts = append(pts, plotter.XY{X: q[0], Y: q[1]})
		}
		l, s, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		l.Color, l.Dashes = col, []vg.Length{vg.Points(4), vg.Points(3)}
		s.Color, s.Shape = col, draw.CircleGlyph{}
		p.Add(l, s)
		p.Legend.Add(c.Label+" (paper)", l, s)
	}
	return savePanels(path, []*plot.Plot{p})
}

// Settings summarises our runs behind the figure: name, seeds, epochs, seconds per run.
func (f *Figure) Settings() string {
	var b strings.Builder
	b.WriteString("| run | seeds | epochs | s/epoch | s/run | final train accuracy (eval mode) | stopped by |\n|---|---|---|---|---|---|---|\n")
	for _, g := range f.groups {
		var stops []string
		for k, n := range g.StoppedBy {
			stops = append(stops, fmt.Sprintf("%s ×%d", k, n))
		}
		sort.Strings(stops)
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.3f | %.0f | %.3f ± %.3f | %s |\n", g.Name, len(g.Seeds), g.Epochs.Mean,
			g.SecondsPerEpoch.Mean, g.Hours.Mean*3600, g.Train.Mean/100, g.Train.Std/100, strings.Join(stops, ", "))
	}
	return b.String()
}
