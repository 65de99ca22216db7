package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/rewiregnn/rewiregnn/report/paper"
	"github.com/rewiregnn/rewiregnn/report/results"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// ModelTable is the model-agnostic comparison of a grid such as configs/grids/model-agnostic.yaml
// (its runs grouped under the table id table:results): per dataset and model, the test metric
// at r = 1 without CLS (the baseline row) beside the number the paper's table:results quotes
// for that model from the literature, and the rewired setting with CLS, with the change.
type ModelTable struct {
	Paper  *paper.Table // table:results (nil: no literature column)
	Groups []*results.Group
}

// literatureRows are the rows of the paper's table:results that quote a model from the
// literature (benchmarking-gnns and PNA's paper), by model name.
var literatureRows = map[string]string{
	"gin": "GIN(100K)", "sage": "GraphSage(100K)", "gat": "GAT(100K)", "pna": "PNA(100K)",
	"monet": "MoNet(100K)", "gatedgcn": "GatedGCN(100K)",
}

// modelOrder is the order of the models' rows; others follow by name.
var modelOrder = []string{"gin", "gcn", "sage", "gat", "pna", "gatedgcn", "monet", "transformer"}

// Markdown renders one table per dataset.
func (m *ModelTable) Markdown() string {
	byData := map[string][]*results.Group{}
	for _, g := range m.Groups {
		byData[g.Dataset] = append(byData[g.Dataset], g)
	}
	var datasets []string
	for d := range byData {
		datasets = append(datasets, d)
	}
	sort.Strings(datasets)
	var b strings.Builder
	b.WriteString("## The method on any GNN: each model at r = 1 and rewired with CLS\n\n")
	b.WriteString("Test metric, mean ± population std over the seeds that finished (n; the mean alone for one); \"literature\" is the model's row in the paper's table:results (benchmarking-gnns' training of it, without rewiring or encodings); \"change\" is rewired against r = 1, relative. Marks as in the per-dataset tables. " +
		"Models by the model registry's names (models/models.go): " + registryModelList(m.Groups) + ".\n")
	for _, d := range datasets {
		gs := byData[d]
		metric := gs[0].Metric
		better := "higher is better"
		if runfiles.LowerIsBetter(metric) {
			better = "lower is better"
		}
		fmt.Fprintf(&b, "\n### %s (test %s, %s)\n\n", DatasetTitle(d), metric, better)
		b.WriteString("| model | parameters | literature | r = 1 | epochs, stop | rewired | epochs, stop | change |\n|---|---|---|---|---|---|---|---|\n")
		for _, model := range sortedModels(gs) {
			base, rew := pickSettings(gs, model)
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", model, paramCounts(base, rew), m.literature(model, d),
				modelCell(base, ""), stopInfo(base), modelCell(rew, "setting"), stopInfo(rew), relChange(base, rew))
		}
	}
	return b.String()
}

// pickSettings returns a model's group at r = 1 without CLS and its rewired group with CLS (the largest
// r), nil where missing.
func pickSettings(gs []*results.Group, model string) (base, rew *results.Group) {
	for _, g := range gs {
		switch {
		case g.Model != model:
		case g.R == 1 && !g.CLS:
			base = g
		case g.CLS && (rew == nil || g.R > rew.R):
			rew = g
		}
	}
	return base, rew
}

// sortedModels lists the models of gs in modelOrder, then the others by name.
func sortedModels(gs []*results.Group) []string {
	seen := map[string]bool{}
	for _, g := range gs {
		seen[g.Model] = true
	}
	var out []string
	for _, m := range modelOrder {
		if seen[m] {
			out = append(out, m)
			delete(seen, m)
		}
	}
	var rest []string
	for m := range seen {
		rest = append(rest, m)
	}
	sort.Strings(rest)
	return append(out, rest...)
}

func (m *ModelTable) literature(model, dataset string) string {
	if m.Paper == nil {
		return "–"
	}
	label, ok := literatureRows[model]
	if !ok {
		return "–"
	}
	for _, row := range m.Paper.Rows {
		if row.Label == label {
			if c := row.Cells[dataset]; c.Mean != "" {
				return strings.ReplaceAll(c.String(), "±", " ± ") + " (" + label + ")"
			}
		}
	}
	return "–"
}

// modelCell is a group's test metric with its seeds and marks; with "setting", its r and CLS too.
func modelCell(g *results.Group, what string) string {
	if g == nil || math.IsNaN(g.Test.Mean) {
		return "–"
	}
	s := fmt.Sprintf("%s (n = %d)%s", g.Test.Text(md.pm), len(g.Seeds), marks(g, md))
	if what == "setting" {
		s += fmt.Sprintf(", r = %d", g.R)
		if g.CLS {
			s += " + CLS"
		}
	}
	return s
}

// stopInfo is a group's mean epochs and how its runs stopped.
func stopInfo(g *results.Group) string {
	if g == nil {
		return "–"
	}
	var stops []string
	for k, n := range g.StoppedBy {
		stops = append(stops, fmt.Sprintf("%s ×%d", k, n))
	}
	sort.Strings(stops)
	return fmt.Sprintf("%.0f, %s", g.Epochs.Mean, strings.Join(stops, ", "))
}

// paramCounts is the parameter counts of the two settings.
func paramCounts(base, rew *results.Group) string {
	var ps []string
	for _, g := range []*results.Group{base, rew} {
		if g != nil {
			ps = append(ps, fmt.Sprintf("%d", g.Params))
		}
	}
	return strings.Join(ps, " / ")
}

// relChange is (rewired − base)/base in percent, said as better or worse.
func relChange(base, rew *results.Group) string {
	if base == nil || rew == nil || base.Test.Mean == 0 {
		return "–"
	}
	d := (rew.Test.Mean - base.Test.Mean) / math.Abs(base.Test.Mean) * 100
	word := "better"
	if (d > 0) == runfiles.LowerIsBetter(base.Metric) {
		word = "worse"
	}
	if d == 0 {
		word = "same"
	}
	return fmt.Sprintf("%+.1f%% (%s)", d, word)
}

// registryModelList names the models of gs, registry name = name in prose, in table order.
func registryModelList(gs []*results.Group) string {
	var parts []string
	for _, m := range sortedModels(gs) {
		parts = append(parts, m+" = "+modelName(m))
	}
	return strings.Join(parts, ", ")
}
