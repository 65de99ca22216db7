package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/rewiregnn/rewiregnn/report/paper"
	"github.com/rewiregnn/rewiregnn/report/results"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// LRGBDatasets are the datasets whose table is an LRGBTable (beyond the reproduced paper: no
// published cells beside ours, but reference rows from other papers).
var LRGBDatasets = map[string]bool{"peptides-func": true}

// lrgbMetrics are the LRGB datasets' metrics, for a table without runs yet.
var lrgbMetrics = map[string]string{"peptides-func": runfiles.MetricAP}

// lrgbColumns are the rewired settings always shown (the columns of configs/grids/
// lrgb-peptides-func.yaml), lrgbRows the radii always shown (its r), lrgbBaselines our reference
// settings always shown (configs/grids/lrgb-peptides-func-baselines.yaml), with their labels.
var (
	lrgbColumns   = []string{"gcn-adj", "gcn-adj-cls"}
	lrgbRows      = []int{1, 2, 3, 4, 5, 6, 7, 8}
	lrgbBaselines = []string{"gcn-none", "gcn-rwse"}
	lrgbLabels    = map[string]string{"gcn-none": "GatedGCN", "gcn-rwse": "GatedGCN+RWSE"}
)

// LRGBDifferences are the differences between this framework's Peptides-func runs and LRGB's,
// each with its likely effect (docs/protocol.md §"Peptides-func: this framework against LRGB"):
// the footnote of table:peptides-func. LRGBSame is what both do alike.
var LRGBDifferences = []string{
	"Epoch reported: ours is the model after the last epoch (this project's protocol); LRGB reports, per seed, the test AP at the epoch of best validation AP (its results file records best epochs near 100 of 500). " +
		"Our runs show both, the best-validation value in brackets; LRGB's numbers are in the bracket column. Effect: a run that overfits after its peak scores lower at the final epoch; the bracketed value is the one comparable with LRGB's.",
	"End of training: both halve the rate after 20 epochs without improvement of the validation loss; LRGB's min_lr 1e-5 is a floor and every run trains 500 epochs, here a run stops once the rate falls below 1e-5 (the 7th halving), at 500 epochs or at 12 h. " +
		"Effect: fewer epochs at the smallest rate here; little on the best-validation value, and the final model is the one at the stop.",
	"Head and width: ours is the mean (with CLS: the CLS node's state) then benchmarking-gnns' MLP 135 → 67 → 33 → 10 on 5 GatedGCN layers of width 135; LRGB's is mean pooling then one Linear(138 → 10) on 5 layers of width 138. " +
		"Both about 500K parameters (ours 499,046 to 501,476; LRGB's GatedGCN 509,368). Effect: small (a deeper head on a slightly narrower network).",
	"Inputs: both sum one embedding per OGB atom and bond column; ours are initialised N(0, 1) (PyTorch's Embedding) and have a spare row per column for the CLS node and the added edges, OGB's encoders are Xavier-uniform. " +
		"RWSE (walks of 1..16 steps in both): ours adds Linear(16 → 135) to the atom embedding, without BatchNorm; LRGB concatenates BatchNorm + Linear(16 → 20) to a 118-wide atom embedding. Effect: small, mostly early in training.",
	"Graph: our rewired columns add a self-loop to every node at every r (r = 1 is the molecule plus self-loops plus a 1-column adjacency encoding) and, with CLS, a virtual node that is read out instead of the mean; " +
		"our reference rows and LRGB's GatedGCN use the molecule as it is. Effect: the r = 1 row is not LRGB's GatedGCN; compare r = 1 with our GatedGCN row.",
	"Encodings: our columns encode adjacency powers on the edges of the rewired graph; LRGB's long-range rows (Transformer+LapPE, SAN+RWSE) and GraphGPS are full-attention models with Laplacian or random-walk node encodings. " +
		"The virtual-node row adds RWSE to a node joined to every node (our CLS column without RWSE); DRew rewires per layer (layer l reaches the l-hop neighbours, with a delay) where ours joins all r-hop pairs before the first layer. Effect: a comparison of approaches at one budget, not of encodings.",
	"Seeds: ours 41, 95, 12, 35; LRGB's 0..3; four each, mean ± population std in both (GraphGym's np.std). Effect: seed noise only.",
}

// LRGBSame is what this framework and LRGB do alike on Peptides-func.
const LRGBSame = "Alike: the splits, the 10-label BCE loss with missing labels left out, AP as OGB's eval_ap (mean over labels of scikit-learn's average precision), Adam at 1e-3 (LRGB's AdamW without weight decay), batch 128, evaluation every epoch, the GatedGCN layer (residual, batch norm, dropout 0)."

// LRGBTable is the table of an LRGB dataset (table:peptides-func): our rewired runs by r and
// setting (final-epoch test metric, and in brackets the test metric at each seed's best
// validation epoch, LRGB's selection), then reference rows: our baselines without rewiring and
// the published results of other papers (paper.External), each with its source, and the
// differences between the two frameworks as a footnote.
type LRGBTable struct {
	T         *Table // our runs (Build): the groups, the statistics and the runs left out
	Rows      []int
	Columns   []string               // rewired settings
	Baselines []string               // our reference settings (r = 1, no CLS, no edge encoding)
	External  []paper.ExternalRow    // published rows of other papers
	Sources   []paper.ExternalSource // the sources the rows cite, numbered in this order
	best      map[string]int         // per column, the r of our best final-epoch mean
	bestVal   map[*results.Group]results.Stat
}

// isLRGBBaseline reports whether a group is a reference row: r = 1 without CLS, with no
// encoding or only the random-walk node encoding (not a rewired setting).
func isLRGBBaseline(g *results.Group) bool {
	return g.R == 1 && !g.CLS && (g.Encoding == "none" || g.Encoding == "rwse")
}

// BuildLRGB lays out an LRGB dataset's table from our table t (Build, without a paper table)
// and the external results (nil: none). Each group's best-validation statistic is read from its
// runs' metrics.jsonl; a run without readable epochs is left out of that statistic only.
func BuildLRGB(t *Table, ext *paper.External) (*LRGBTable, error) {
	lt := &LRGBTable{T: t, best: map[string]int{}, bestVal: map[*results.Group]results.Stat{}}
	if t.Metric == "" {
		t.Metric = lrgbMetrics[t.Dataset]
	}
	rows := map[int]bool{}
	for _, r := range lrgbRows {
		rows[r] = true
	}
	cols := append([]string(nil), lrgbColumns...)
	bases := append([]string(nil), lrgbBaselines...)
	for _, g := range t.Ours {
		s := g.Setting()
		if isLRGBBaseline(g) {
			if !contains(bases, s) {
				bases = append(bases, s)
			}
		} else {
			rows[g.R] = true
			if !contains(cols, s) {
				cols = append(cols, s)
			}
		}
		lt.bestVal[g] = bestValStat(g)
	}
	sort.Strings(cols[len(lrgbColumns):])
	sort.Strings(bases[len(lrgbBaselines):])
	lt.Columns, lt.Baselines = cols, bases
	for r := range rows {
		lt.Rows = append(lt.Rows, r)
	}
	sort.Ints(lt.Rows)
	for _, c := range lt.Columns {
		n, bestR, bestV := 0, 0, 0.0
		for _, r := range lt.Rows {
			g := lt.column(c, r)
			if g == nil {
				continue
			}
			v := g.Test.Mean
			if n == 0 || (runfiles.LowerIsBetter(t.Metric) && v < bestV) || (!runfiles.LowerIsBetter(t.Metric) && v > bestV) {
				bestR, bestV = r, v
			}
			n++
		}
		if n > 1 {
			lt.best[c] = bestR
		}
	}
	if ext != nil {
		lt.External = ext.For(t.ID)
		for _, row := range lt.External {
			if lt.sourceIndex(row.Source) > 0 {
				continue
			}
			s, ok := ext.Source(row.Source)
			if !ok {
				return nil, fmt.Errorf("%s: external row %s cites unknown source %q", t.ID, row.Method, row.Source)
			}
			lt.Sources = append(lt.Sources, s)
		}
	}
	return lt, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// column is our rewired group of a cell (nil for a reference row's group).
func (lt *LRGBTable) column(c string, r int) *results.Group {
	g := lt.T.Group(c, r)
	if g == nil || isLRGBBaseline(g) {
		return nil
	}
	return g
}

// baseline is our reference group of a setting (r = 1).
func (lt *LRGBTable) baseline(s string) *results.Group {
	g := lt.T.Group(s, 1)
	if g == nil || !isLRGBBaseline(g) {
		return nil
	}
	return g
}

// sourceIndex numbers a source id from 1 in citation order; 0 when not cited.
func (lt *LRGBTable) sourceIndex(id string) int {
	for i, s := range lt.Sources {
		if s.ID == id {
			return i + 1
		}
	}
	return 0
}

// BestVal is a group's test metric at each seed's best validation epoch (the first epoch of the
// best validation metric, LRGB's argmax), mean ± population std over the seeds that logged
// epochs (N of them).
func (lt *LRGBTable) BestVal(g *results.Group) results.Stat { return lt.bestVal[g] }

// bestValStat reads the group's runs' epochs: per run the test metric of the first epoch whose
// validation metric is best. A run whose metrics.jsonl is missing or unreadable is left out of
// the statistic (its N counts the runs read; the table says "k of n seeds"), as is one without
// validation figures (no validation split: no best epoch).
func bestValStat(g *results.Group) results.Stat {
	var xs []float64
	for _, r := range g.Runs {
		eps, err := r.Epochs()
		if err != nil || len(eps) == 0 || !hasVal(eps) {
			continue
		}
		bi := 0
		for i, e := range eps {
			if (runfiles.LowerIsBetter(g.Metric) && e.ValMetric < eps[bi].ValMetric) || (!runfiles.LowerIsBetter(g.Metric) && e.ValMetric > eps[bi].ValMetric) {
				bi = i
			}
		}
		xs = append(xs, eps[bi].TestMetric)
	}
	if len(xs) == 0 {
		return results.Stat{Mean: math.NaN(), Std: math.NaN()}
	}
	return results.MeanStd(xs)
}

// f4 writes a published-precision number.
func f4(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }

// thousands writes n with commas: 499,046.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// ours is a group's final-epoch statistic and, in brackets, its best-validation one, in m; m's
// empty cell for no group.
func (lt *LRGBTable) ours(g *results.Group, bold bool, m markup) string {
	if g == nil {
		return m.empty
	}
	s := m.ours(g, bold)
	if bv := lt.bestValText(g, m.pm); bv != "" {
		s += " [" + bv + "]"
	}
	return s
}

// bestValText is a group's best-validation statistic, with the number of seeds it covers when
// some lack their epochs; "" when none has them.
func (lt *LRGBTable) bestValText(g *results.Group, sep string) string {
	bv := lt.bestVal[g]
	if g == nil || bv.N == 0 {
		return ""
	}
	s := bv.Text(sep)
	if bv.N < len(g.Seeds) {
		s += fmt.Sprintf(", %d of %d seeds", bv.N, len(g.Seeds))
	}
	return s
}

// Legend names the labels of the table's columns and reference rows: the model registry's names.
func (lt *LRGBTable) Legend() string {
	return RegistryLegend(registryColumns(append(append([]string(nil), lt.Columns...), lt.Baselines...)))
}

// baselineLabel names one of our reference rows.
func baselineLabel(s string) string {
	if l, ok := lrgbLabels[s]; ok {
		return l + ", this framework (" + results.RegistrySetting(s) + ", r = 1)"
	}
	return results.RegistrySetting(s) + ", this framework (r = 1)"
}

// versusPublished compares our best-validation mean with the published row of the same model:
// "within 2σ" when the difference is at most twice the published std.
func (lt *LRGBTable) versusPublished(s string, g *results.Group) string {
	bv := lt.bestVal[g]
	if g == nil || bv.N == 0 {
		return "–"
	}
	for _, row := range lt.External {
		if row.Setting != s {
			continue
		}
		m, sd, _ := row.Cell().Values()
		d := bv.Mean - m
		word := "outside 2σ"
		if math.Abs(d) <= 2*sd+1e-12 {
			word = "within 2σ"
		}
		return fmt.Sprintf("%s of %s [%d] (Δ %+.4f, 2σ %.4f)", word, row.Method, lt.sourceIndex(row.Source), d, 2*sd)
	}
	return "–"
}

// Markdown renders the table, its reference rows with their sources, the differences between the
// frameworks, and the run statistics and left-out runs of Table.
func (lt *LRGBTable) Markdown() string {
	t := lt.T
	var b strings.Builder
	fmt.Fprintf(&b, "## %s: %s, %s\n\n", t.ID, DatasetTitle(t.Dataset), MetricTitle(t.Metric))
	b.WriteString("Beyond the reproduced paper (it has no such table). Each cell: ours, the final-epoch model's test metric, mean ± population std over seeds (3 decimals; the mean alone for one seed), " +
		"then in brackets the test metric at each seed's best validation epoch (LRGB's selection). **Bold**: our best r in that column (final epoch). " +
		"†k/n: only k of the n planned seeds have finished. ‡k: k seeds stopped by the wall-clock cap (max_time). §k: k seeds ran on a reduced budget. –: not run here.\n\n")
	b.WriteString("| r |")
	align := "|---:|"
	for _, c := range lt.Columns {
		b.WriteString(" " + results.RegistrySetting(c) + " |")
		align += "---|"
	}
	b.WriteString("\n" + align + "\n")
	for _, r := range lt.Rows {
		fmt.Fprintf(&b, "| %d |", r)
		for _, c := range lt.Columns {
			br, ok := lt.best[c]
			b.WriteString(" " + lt.ours(lt.column(c, r), ok && br == r, md) + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("\n" + lt.Legend() + "\n")
	b.WriteString("\nReference rows: our GatedGCN without rewiring, and published results of other papers (not the reproduced paper's), with their sources below. " +
		"Published values stand in the best-validation column: LRGB's rows are its best-validation selection; for the others, their source below says what is known of theirs.\n\n")
	b.WriteString("| model | test, final epoch | test, best-validation epoch | parameters | source | ours against the published row |\n|---|---|---|---:|---|---|\n")
	for _, s := range lt.Baselines {
		g := lt.baseline(s)
		final, bv, params, src := "–", "–", "–", "this framework"
		if g != nil {
			final = md.ours(g, false)
			if st := lt.bestValText(g, " ± "); st != "" {
				bv = st
			}
			params = thousands(g.Params)
			src = "this framework, " + g.Name
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", baselineLabel(s), final, bv, params, src, lt.versusPublished(s, g))
	}
	for _, row := range lt.External {
		params := "–"
		if row.Params > 0 {
			params = thousands(row.Params)
		}
		fmt.Fprintf(&b, "| %s | – | %s ± %s | %s | [%d] | |\n", row.Method, row.Mean, row.Std, params, lt.sourceIndex(row.Source))
	}
	b.WriteString("\n")
	for i, s := range lt.Sources {
		fmt.Fprintf(&b, "[%d] %s: %s. Selection: %s. Checked %s\n\n", i+1, s.Citation, s.Where, s.Selection, s.Checked)
	}
	b.WriteString("Our reference rows are the runs of configs/grids/lrgb-peptides-func-baselines.yaml (the molecule without self-loops, LRGB's protocol); " +
		"the columns those of configs/grids/lrgb-peptides-func.yaml. Differences between this framework and LRGB (docs/protocol.md §\"Peptides-func: this framework against LRGB\"):\n\n")
	for i, d := range LRGBDifferences {
		fmt.Fprintf(&b, "%d. %s\n", i+1, d)
	}
	b.WriteString("\n" + LRGBSame + "\n\n")
	b.WriteString(t.statsMarkdown())
	b.WriteString(t.provenanceMarkdown())
	return b.String()
}

// texText escapes a sentence for LaTeX and writes its symbols in math mode.
func texText(s string) string {
	r := strings.NewReplacer("~", "$\\sim$", "±", "$\\pm$", "→", "$\\to$", "σ", "$\\sigma$", "Δ", "$\\Delta$", "§", "\\S{}", "–", "--", "…", "\\dots{}")
	return r.Replace(texEscape(s))
}

// LaTeX renders the table as the other tables (a tabular with r rows), the reference rows
// under a rule spanning the setting columns, and the sources and differences as notes.
func (lt *LRGBTable) LaTeX() string {
	t := lt.T
	var b strings.Builder
	n := len(lt.Columns)
	fmt.Fprintf(&b, "%% %s generated by cmd/tables: ours final-epoch mean$\\pm$population std over seeds (the mean alone for one seed), [test at the best validation epoch].\n", t.ID)
	b.WriteString("% \\textbf{}: our best r per column; $^{\\dagger k/n}$: k of n planned seeds; $^{\\ddagger k}$: k seeds stopped by max_time; $^{\\S k}$: k seeds of a reduced budget.\n")
	b.WriteString("\\begin{table*}[h]\n")
	fmt.Fprintf(&b, "\\caption{Increasing $r$ on %s (this framework, beyond the reproduced paper): %s. Each cell: the final-epoch model, in brackets the test value at each seed's best validation epoch (LRGB's selection). "+
		"Reference rows: our GatedGCN without rewiring and published results of other papers (sources below).}\n", texEscape(DatasetTitle(t.Dataset)), texEscape(MetricTitle(t.Metric)))
	b.WriteString("\\begin{center}\n\\begin{adjustbox}{max width=\\textwidth}\n")
	b.WriteString("\\begin{tabular}{" + strings.TrimSpace(strings.Repeat("l ", n+1)) + "}\n\\hline\nr")
	for _, c := range lt.Columns {
		b.WriteString(" & " + texEscape(results.RegistrySetting(c)))
	}
	b.WriteString(" \\\\\n\\hline\n")
	for _, r := range lt.Rows {
		fmt.Fprintf(&b, "r=%d", r)
		for _, c := range lt.Columns {
			br, ok := lt.best[c]
			b.WriteString(" & " + lt.ours(lt.column(c, r), ok && br == r, tex))
		}
		b.WriteString(" \\\\\n")
	}
	b.WriteString("\\hline\n")
	span := func(label, value string) {
		fmt.Fprintf(&b, "%s & \\multicolumn{%d}{l}{%s} \\\\\n", label, n, value)
	}
	for _, s := range lt.Baselines {
		g := lt.baseline(s)
		v := "--"
		if g != nil {
			v = lt.ours(g, false, tex) + fmt.Sprintf(", %s parameters", thousands(g.Params))
		}
		span(texText(baselineLabel(s)), v)
	}
	for _, row := range lt.External {
		v := fmt.Sprintf("-- [%s$\\pm$%s]", row.Mean, row.Std)
		if row.Params > 0 {
			v += fmt.Sprintf(", %s parameters", thousands(row.Params))
		}
		span(fmt.Sprintf("%s [%d]", texEscape(row.Method), lt.sourceIndex(row.Source)), v)
	}
	b.WriteString("\\hline\n\\end{tabular}\n\\end{adjustbox}\n\\end{center}\n")
	b.WriteString("{\\footnotesize\n" + texText(lt.Legend()) + "\\par\n")
	for i, s := range lt.Sources {
		fmt.Fprintf(&b, "[%d] %s: %s. Selection: %s. Checked %s\\par\n", i+1, texText(s.Citation), texText(s.Where), texText(s.Selection), texText(s.Checked))
	}
	b.WriteString("Differences from LRGB: ")
	for i, d := range LRGBDifferences {
		fmt.Fprintf(&b, "(%d) %s ", i+1, texText(d))
	}
	b.WriteString(texText(LRGBSame) + "\\par\n}\n")
	fmt.Fprintf(&b, "\\label{ours:%s}\n\\end{table*}\n", t.ID)
	return b.String()
}
