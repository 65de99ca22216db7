// Package report is the reporting tree: report/results collects finished runs and aggregates
// them over seeds, report/paper holds the paper's published tables, and report itself lays the
// aggregated runs out like the paper's tables — rows r, columns model-encoding[-cls], a density
// column — with the paper's published number beside each of ours, as Markdown and LaTeX, and
// draws the plots (plot.go; the r-trend figure, rtrend.go).
package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/rewiregnn/rewiregnn/internal/plural"
	"github.com/rewiregnn/rewiregnn/report/paper"
	"github.com/rewiregnn/rewiregnn/report/results"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// DatasetTitle is the paper's spelling of a dataset name.
func DatasetTitle(d string) string {
	switch d {
	case "zinc", "aqsol", "mnist", "cluster", "pattern", "cifar10":
		return strings.ToUpper(d)
	}
	return d
}

// MetricTitle names a metric for captions and axes.
func MetricTitle(m string) string {
	switch m {
	case runfiles.MetricMAE:
		return "test MAE (lower is better)"
	case runfiles.MetricAccuracy:
		return "test accuracy % (higher is better)"
	case runfiles.MetricWeightedAcc:
		return "test weighted accuracy % (higher is better)"
	case runfiles.MetricAP:
		return "test AP (higher is better)"
	}
	return "test " + m
}

type cell struct {
	setting string
	r       int
}

// Table is one r-sweep table: ours beside the paper's.
type Table struct {
	ID      string // table id, e.g. table:zinc
	Dataset string
	Metric  string
	Columns []string // settings: the paper's order, then settings only we ran
	Rows    []int    // r values
	Ours    map[cell]*results.Group
	Paper   *paper.Table // nil when the paper has no such table
	// Density measured here (e.g. from cmd/stats -json) by r; nil leaves the column out.
	Density map[int]float64
	// LeftOut are the runs of this table that results.Select left out (set by the caller;
	// listed under the table with their reasons).
	LeftOut []results.LeftOut
	// Notes are footnotes of cells, by the run name of the cell's group (set by the caller from
	// the grids' notes, config.Grid.Notes): the cell gets ¶k and the note is listed under the
	// table.
	Notes map[string]string
	// best marks, per column, the r of our best mean (bold)
	best map[string]int
}

// Build assembles the table id from the groups belonging to it and the paper's table (nil if
// none). density may be nil.
func Build(id string, groups []*results.Group, pt *paper.Table, density map[int]float64) (*Table, error) {
	t := &Table{ID: id, Ours: map[cell]*results.Group{}, Paper: pt, Density: density, best: map[string]int{}}
	cols := map[string]bool{}
	rows := map[int]bool{}
	if pt != nil {
		if pt.RowKey != "r" {
			return nil, fmt.Errorf("%s: the paper's table has rows by %s, not by r", id, pt.RowKey)
		}
		t.Dataset, t.Metric = pt.Dataset, pt.Metric
		for _, c := range pt.Columns {
			cols[c] = true
			t.Columns = append(t.Columns, c)
		}
		for _, r := range pt.Rows {
			rows[r.R] = true
		}
	}
	var extra []string
	for _, g := range groups {
		if g.Table != id {
			continue
		}
		if t.Dataset == "" {
			t.Dataset = g.Dataset
		} else if g.Dataset != t.Dataset {
			return nil, fmt.Errorf("%s: runs of datasets %s and %s in one table (%s)", id, t.Dataset, g.Dataset, g.Runs[0].Dir)
		}
		if t.Metric == "" {
			t.Metric = g.Metric
		} else if g.Metric != t.Metric {
			return nil, fmt.Errorf("%s: %s has metric %s, the table %s", id, g.Runs[0].Dir, g.Metric, t.Metric)
		}
		s := g.Setting()
		if !cols[s] {
			cols[s] = true
			extra = append(extra, s)
		}
		rows[g.R] = true
		t.Ours[cell{s, g.R}] = g
	}
	sort.Strings(extra)
	t.Columns = append(t.Columns, extra...)
	for r := range rows {
		t.Rows = append(t.Rows, r)
	}
	sort.Ints(t.Rows)
	for _, c := range t.Columns {
		bestR, found := 0, false
		var bestV float64
		for _, r := range t.Rows {
			g := t.Ours[cell{c, r}]
			if g == nil {
				continue
			}
			v := g.Test.Mean
			if !found || (runfiles.LowerIsBetter(t.Metric) && v < bestV) || (!runfiles.LowerIsBetter(t.Metric) && v > bestV) {
				bestR, bestV, found = r, v, true
			}
		}
		if found && countOurs(t, c) > 1 {
			t.best[c] = bestR
		}
	}
	return t, nil
}

func countOurs(t *Table, col string) int {
	n := 0
	for _, r := range t.Rows {
		if t.Ours[cell{col, r}] != nil {
			n++
		}
	}
	return n
}

// colLabel is a column's label: the paper's (the key itself) in a table that reproduces one of
// the paper's, else the model registry's (labels.go).
func (t *Table) colLabel(c string) string {
	if t.Paper != nil {
		return c
	}
	return results.RegistrySetting(c)
}

// Legend names every column label of the table (labels.go).
func (t *Table) Legend() string {
	if t.Paper != nil {
		return PaperLegend(t.Columns)
	}
	return RegistryLegend(registryColumns(t.Columns))
}

// Group returns our group of a cell, nil if not run.
func (t *Table) Group(setting string, r int) *results.Group { return t.Ours[cell{setting, r}] }

// PaperCell returns the paper's cell.
func (t *Table) PaperCell(setting string, r int) (paper.Cell, bool) {
	if t.Paper == nil {
		return paper.Cell{}, false
	}
	return t.Paper.Cell(r, setting)
}

// PaperDensity returns the paper's printed density of row r.
func (t *Table) PaperDensity(r int) string {
	if t.Paper == nil {
		return ""
	}
	row, ok := t.Paper.RowR(r)
	if !ok {
		return ""
	}
	return row.Density
}

func f3(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }

// markup is how one output format (Markdown, LaTeX) writes a cell: the mean–spread separator,
// bold, the footnote markers, a cell footnote's number, an empty cell and the paper's value
// beside ours.
type markup struct {
	pm                       string
	bold                     func(string) string
	dagger, ddagger, section func(string) string
	note                     func(int) string
	empty                    string
	paper                    func(paper.Cell) string
}

var (
	md = markup{
		pm:      " ± ",
		bold:    func(s string) string { return "**" + s + "**" },
		dagger:  func(x string) string { return " †" + x },
		ddagger: func(x string) string { return " ‡" + x },
		section: func(x string) string { return " §" + x },
		note:    func(k int) string { return fmt.Sprintf(" ¶%d", k) },
		empty:   "–",
		paper:   func(pc paper.Cell) string { return " (" + strings.ReplaceAll(pc.String(), "±", " ± ") + ")" },
	}
	tex = markup{
		pm:      "$\\pm$",
		bold:    func(s string) string { return "\\textbf{" + s + "}" },
		dagger:  func(x string) string { return "$^{\\dagger " + x + "}$" },
		ddagger: func(x string) string { return "$^{\\ddagger " + x + "}$" },
		section: func(x string) string { return "$^{\\S " + x + "}$" },
		note:    func(k int) string { return fmt.Sprintf("$^{\\P %d}$", k) },
		empty:   "--",
		paper: func(pc paper.Cell) string {
			p := pc.Text
			if pc.Mean != "" {
				p = pc.Mean + "$\\pm$" + pc.Std
			}
			return " {\\scriptsize(" + p + ")}"
		},
	}
)

// ours is a group's test statistic in m, bold if asked, with its footnote markers.
func (m markup) ours(g *results.Group, bold bool) string {
	s := g.Test.Text(m.pm)
	if bold {
		s = m.bold(s)
	}
	return s + marks(g, m)
}

// marks are the footnote markers of a group: †k/n when seeds are missing, ‡k when capped, §k
// when k seeds ran on a reduced budget.
func marks(g *results.Group, m markup) string {
	var out []string
	if g.Short() {
		out = append(out, m.dagger(fmt.Sprintf("%d/%d", len(g.Seeds), g.Planned)))
	}
	if c := g.Capped(); c > 0 {
		out = append(out, m.ddagger(fmt.Sprintf("%d", c)))
	}
	if g.Reduced > 0 {
		out = append(out, m.section(fmt.Sprintf("%d", g.Reduced)))
	}
	return strings.Join(out, "")
}

// cellNote is a footnote of one cell: its number (¶k), column, r and text.
type cellNote struct {
	k       int
	setting string
	r       int
	text    string
}

// cellNotes numbers the notes of the cells that have runs, row by row, column by column.
func (t *Table) cellNotes() []cellNote {
	var out []cellNote
	for _, r := range t.Rows {
		for _, c := range t.Columns {
			if g := t.Group(c, r); g != nil && t.Notes[g.Name] != "" {
				out = append(out, cellNote{len(out) + 1, c, r, t.Notes[g.Name]})
			}
		}
	}
	return out
}

// noteMarks are the footnote numbers of the cells that have a note (cellNotes), by cell.
func (t *Table) noteMarks() map[cell]int {
	m := map[cell]int{}
	for _, n := range t.cellNotes() {
		m[cell{n.setting, n.r}] = n.k
	}
	return m
}

// notesMarkdown lists the cells' footnotes under the table.
func (t *Table) notesMarkdown() string {
	var b strings.Builder
	for _, n := range t.cellNotes() {
		fmt.Fprintf(&b, "¶%d %s, r = %d: %s\n\n", n.k, t.colLabel(n.setting), n.r, n.text)
	}
	return b.String()
}

// Markdown renders the table, a legend and a statistics table of the runs.
func (t *Table) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s: %s, %s\n\n", t.ID, DatasetTitle(t.Dataset), MetricTitle(t.Metric))
	b.WriteString("Each cell: ours, mean ± population std over seeds (3 decimals; the mean alone for one seed), then the paper's value in parentheses. " +
		"**Bold**: our best r in that column. †k/n: only k of the n planned seeds have finished. " +
		"‡k: k seeds stopped by the wall-clock cap (max_time). §k: k seeds ran on a reduced budget (listed below the runs; " +
		"included only with tables -include-reduced). ¶k: a note below the table. –: not run here / not in the paper.")
	if t.Paper != nil && len(t.Paper.ColumnNotes) > 0 {
		var notes []string
		for _, c := range t.Columns {
			if n, ok := t.Paper.ColumnNotes[c]; ok {
				notes = append(notes, c+": "+n)
			}
		}
		b.WriteString(" Paper's notes (*): " + strings.Join(notes, "; ") + ".")
	}
	b.WriteString("\n\n")
	hasPaperDensity := false
	for _, r := range t.Rows {
		if t.PaperDensity(r) != "" {
			hasPaperDensity = true
		}
	}
	b.WriteString("| r |")
	align := "|---:|"
	if hasPaperDensity {
		b.WriteString(" density (paper) |")
		align += "---:|"
	}
	if t.Density != nil {
		b.WriteString(" density (ours) |")
		align += "---:|"
	}
	for _, c := range t.Columns {
		h := t.colLabel(c)
		if t.Paper != nil && t.Paper.ColumnNotes[c] != "" {
			h += "*"
		}
		b.WriteString(" " + h + " |")
		align += "---|"
	}
	b.WriteString("\n" + align + "\n")
	marks := t.noteMarks()
	for _, r := range t.Rows {
		fmt.Fprintf(&b, "| %d |", r)
		if hasPaperDensity {
			d := t.PaperDensity(r)
			if d == "" {
				d = "–"
			}
			b.WriteString(" " + d + " |")
		}
		if t.Density != nil {
			if d, ok := t.Density[r]; ok {
				b.WriteString(" " + f3(d) + " |")
			} else {
				b.WriteString(" – |")
			}
		}
		for _, c := range t.Columns {
			b.WriteString(" " + t.cell(c, r, marks[cell{c, r}], md) + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("\n" + t.notesMarkdown() + t.Legend() + "\n\n")
	b.WriteString(t.statsMarkdown())
	b.WriteString(t.provenanceMarkdown())
	return b.String()
}

// provenanceMarkdown lists the budgets of the cells marked § and the runs left out of the table.
func (t *Table) provenanceMarkdown() string {
	var b strings.Builder
	for _, c := range t.Columns {
		for _, r := range t.Rows {
			g := t.Group(c, r)
			if g == nil || g.Reduced == 0 {
				continue
			}
			if b.Len() == 0 {
				b.WriteString("\n§ Reduced budget (not the paper's protocol; included by -include-reduced):\n\n")
			}
			fmt.Fprintf(&b, "- %s r=%d, %d of %s: %s\n", results.RegistrySetting(c), r, g.Reduced, plural.Count(len(g.Seeds), "seed"), strings.Join(g.Budgets, "; "))
		}
	}
	if len(t.LeftOut) > 0 {
		b.WriteString("\nLeft out of this table:\n\n| run | seed | reason |\n|---|---:|---|\n")
		for _, l := range t.LeftOut {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", l.Dir, l.SeedLabel(), l.Reason)
		}
	}
	return b.String()
}

// cell renders one cell in m; note is its footnote number (0: none).
func (t *Table) cell(c string, r int, note int, m markup) string {
	s := m.empty
	if g := t.Group(c, r); g != nil {
		br, ok := t.best[c]
		s = m.ours(g, ok && br == r)
		if note > 0 {
			s += m.note(note)
		}
	}
	if pc, ok := t.PaperCell(c, r); ok {
		s += m.paper(pc)
	}
	return s
}

// valCell is the validation metric's mean ± std over the seeds, or "–" for a setting without a
// validation split (no value: results.Stat.N is 0).
func valCell(s results.Stat) string {
	if s.N == 0 {
		return "–"
	}
	return s.Text(" ± ")
}

// statsMarkdown is the per-setting run statistics (params, epochs, hours, seconds per epoch:
// the result.json fields of docs/protocol.md §"Final evaluation", averaged as §"Reporting" says).
func (t *Table) statsMarkdown() string {
	var b strings.Builder
	b.WriteString("Runs (settings by the model registry's names): seeds finished, validation and training metric (final model, eval mode), epochs, seconds per training epoch, total hours (preprocessing included), parameters, device, stop reasons, " +
		"and our test mean against the paper's: Δ = ours − paper, \"within 2σ\" when |Δ| ≤ 2 × the paper's standard deviation over its seeds.\n\n")
	b.WriteString("| setting | r | seeds | val | train | epochs | s/epoch | hours | params | device | stopped by | vs paper |\n")
	b.WriteString("|---|---:|---|---|---|---:|---:|---:|---:|---|---|---|\n")
	n := 0
	for _, c := range t.Columns {
		for _, r := range t.Rows {
			g := t.Group(c, r)
			if g == nil {
				continue
			}
			n++
			var stops []string
			for _, k := range sortedKeys(g.StoppedBy) {
				stops = append(stops, fmt.Sprintf("%s %d", k, g.StoppedBy[k]))
			}
			fmt.Fprintf(&b, "| %s | %d | %d/%d | %s | %s | %.0f | %.2f | %.2f | %d | %s | %s | %s |\n",
				results.RegistrySetting(c), r, len(g.Seeds), g.Planned, valCell(g.Val), g.Train.Text(" ± "),
				g.Epochs.Mean, g.SecondsPerEpoch.Mean, g.Hours.Mean, g.Params, strings.Join(g.Devices, ","), strings.Join(stops, ", "),
				t.versusPaper(c, r, g))
		}
	}
	if n == 0 {
		return "No runs of this table have finished.\n"
	}
	return b.String()
}

// versusPaper compares our test mean with the paper's cell (paper.Cell.Versus); "–" where the
// paper has no number for the cell.
func (t *Table) versusPaper(c string, r int, g *results.Group) string {
	pc, ok := t.PaperCell(c, r)
	if !ok {
		return "–"
	}
	v, ok := pc.Versus(g.Test.Mean)
	if !ok {
		return "–"
	}
	return v
}

func sortedKeys(m map[string]int) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}

// texEscape escapes the characters of a column key that LaTeX treats specially.
func texEscape(s string) string {
	r := strings.NewReplacer(`\`, `\textbackslash{}`, "_", `\_`, "%", `\%`, "&", `\&`, "#", `\#`, "$", `\$`)
	return r.Replace(s)
}

// LaTeX renders the table like the paper's (tabular with a type:/density header row, r=N rows),
// ours with the paper's value in small type beside it.
func (t *Table) LaTeX() string {
	var b strings.Builder
	hasPaperDensity := false
	for _, r := range t.Rows {
		if t.PaperDensity(r) != "" {
			hasPaperDensity = true
		}
	}
	ncol := 1 + len(t.Columns)
	if hasPaperDensity {
		ncol++
	}
	if t.Density != nil {
		ncol++
	}
	fmt.Fprintf(&b, "%% %s generated by cmd/tables: ours mean$\\pm$population std over seeds (the mean alone for one seed), the paper's value in parentheses.\n", t.ID)
	b.WriteString("% \\textbf{}: our best r per column; $^{\\dagger k/n}$: k of n planned seeds; $^{\\ddagger k}$: k seeds stopped by max_time; $^{\\S k}$: k seeds of a reduced budget; $^{\\P k}$: a note below the table.\n")
	b.WriteString("\\begin{table*}[h]\n")
	fmt.Fprintf(&b, "\\caption{Increasing $r$ on %s (this reproduction; paper in parentheses): %s.}\n", DatasetTitle(t.Dataset), texEscape(MetricTitle(t.Metric)))
	b.WriteString("\\begin{center}\n\\begin{adjustbox}{max width=\\textwidth}\n")
	b.WriteString("\\begin{tabular}{" + strings.TrimSpace(strings.Repeat("l ", ncol)) + "}\n\\hline\n")
	b.WriteString("type:")
	if hasPaperDensity {
		b.WriteString(" & density")
	}
	if t.Density != nil {
		b.WriteString(" & density (ours)")
	}
	for _, c := range t.Columns {
		b.WriteString(" & " + texEscape(t.colLabel(c)))
		if t.Paper != nil && t.Paper.ColumnNotes[c] != "" {
			b.WriteString("*")
		}
	}
	b.WriteString(" \\\\\n\\hline\n")
	marks := t.noteMarks()
	for _, r := range t.Rows {
		fmt.Fprintf(&b, "r=%d", r)
		if hasPaperDensity {
			d := strings.ReplaceAll(t.PaperDensity(r), ">", "$>$")
			if d == "" {
				d = "--"
			}
			b.WriteString(" & " + d)
		}
		if t.Density != nil {
			if d, ok := t.Density[r]; ok {
				b.WriteString(" & " + f3(d))
			} else {
				b.WriteString(" & --")
			}
		}
		for _, c := range t.Columns {
			b.WriteString(" & " + t.cell(c, r, marks[cell{c, r}], tex))
		}
		b.WriteString(" \\\\\n")
	}
	b.WriteString("\\hline\n\\end{tabular}\n\\end{adjustbox}\n\\end{center}\n")
	for _, n := range t.cellNotes() {
		fmt.Fprintf(&b, "{\\footnotesize $^{\\P %d}$ %s, $r=%d$: %s\\par}\n", n.k, texEscape(t.colLabel(n.setting)), n.r, texText(n.text))
	}
	b.WriteString("{\\footnotesize " + texText(t.Legend()) + "\\par}\n")
	fmt.Fprintf(&b, "\\label{ours:%s}\n\\end{table*}\n", t.ID)
	return b.String()
}

// Summary is the paper's table:results with our rows added: per dataset, our value at the
// setting the paper reports as its best ("Ours(100K)") and our best cell.
type Summary struct {
	Paper  *paper.Table // table:results
	Tables *paper.File
	Groups []*results.Group
}

// paperChoice finds the setting and r of the paper's table:<dataset> whose printed cell equals
// the Ours(100K) cell of table:results.
func paperChoice(f *paper.File, dataset string, ours paper.Cell) (string, int, bool) {
	t, ok := f.TableForDataset(dataset)
	if !ok || ours.Mean == "" {
		return "", 0, false
	}
	for _, row := range t.Rows {
		for _, c := range t.Columns {
			pc := row.Cells[c]
			if pc.Mean == ours.Mean && pc.Std == ours.Std {
				return c, row.R, true
			}
		}
	}
	return "", 0, false
}

// Markdown renders the summary.
func (s *Summary) Markdown() string {
	var b strings.Builder
	b.WriteString("## table:results: the benchmark table with this reproduction\n\n")
	b.WriteString("Literature rows and Ours(100K) as printed in the paper; \"here, paper's setting\" is our result at the setting the paper's Ours(100K) comes from; \"here, best\" is our best finished cell (setting, r). Marks as in the per-dataset tables.\n\n")
	b.WriteString("| method |")
	for _, c := range s.Paper.Columns {
		b.WriteString(" " + DatasetTitle(c) + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(s.Paper.Columns)) + "\n")
	var oursPaper *paper.Row
	for i, row := range s.Paper.Rows {
		if strings.HasPrefix(row.Label, "Ours") {
			oursPaper = &s.Paper.Rows[i]
		}
		b.WriteString("| " + row.Label + " (paper) |")
		for _, c := range s.Paper.Columns {
			b.WriteString(" " + strings.ReplaceAll(row.Cells[c].String(), "±", " ± ") + " |")
		}
		b.WriteString("\n")
	}
	var used []string // the settings named in our rows, for the legend
	b.WriteString("| here, paper's setting |")
	for _, c := range s.Paper.Columns {
		txt := "–"
		if oursPaper != nil {
			if set, r, ok := paperChoice(s.Tables, c, oursPaper.Cells[c]); ok {
				used = append(used, set)
				txt = fmt.Sprintf("– (%s r=%d)", set, r)
				for _, g := range s.Groups {
					if g.Dataset == c && g.Table == "table:"+c && g.Setting() == set && g.R == r {
						txt = fmt.Sprintf("%s (%s r=%d)", md.ours(g, false), set, r)
					}
				}
			}
		}
		b.WriteString(" " + txt + " |")
	}
	b.WriteString("\n| here, best |")
	for _, c := range s.Paper.Columns {
		var best *results.Group
		for _, g := range s.Groups {
			if g.Dataset != c || g.Table != "table:"+c || math.IsNaN(g.Test.Mean) {
				continue
			}
			if best == nil || (runfiles.LowerIsBetter(g.Metric) && g.Test.Mean < best.Test.Mean) ||
				(!runfiles.LowerIsBetter(g.Metric) && g.Test.Mean > best.Test.Mean) {
				best = g
			}
		}
		if best == nil {
			b.WriteString(" – |")
		} else {
			used = append(used, best.Setting())
			fmt.Fprintf(&b, " %s (%s r=%d) |", md.ours(best, false), best.Setting(), best.R)
		}
	}
	b.WriteString("\n")
	if len(used) > 0 {
		b.WriteString("\n" + PaperLegend(used) + "\n")
	}
	return b.String()
}
