// Command tables aggregates finished runs (every result.json under a folder) over seeds — mean ±
// population std — into tables laid out like the paper's, with the paper's numbers beside ours,
// as Markdown and LaTeX, plus plots.
//
//	tables -runs runs [-table table:zinc] [-grid configs/grids/zinc.yaml …] [-out docs/results/zinc]
//	       [-stats zinc-stats.json …] [-seeds 4] [-paper FILE] [-external FILE] [-plots=true]
//	       [-include-reduced]
//
// -grid may be given more than once for grids that fill one table: table:peptides-func is
// configs/grids/lrgb-peptides-func.yaml (the rewired settings) and
// lrgb-peptides-func-baselines.yaml (LRGB's GatedGCN and GatedGCN+RWSE, trained here).
//
// A dataset beyond the paper with a table of its own layout (report.LRGBDatasets:
// peptides-func) is written as report.LRGBTable: our rewired settings by r, each cell the
// final-epoch test metric and, in brackets, the test metric at each seed's best validation
// epoch (LRGB's selection, from metrics.jsonl); then our baselines and the published results of
// other papers (report/paper/external.json, or -external FILE), numbered with their sources; then
// the differences between the two frameworks as a footnote.
//
// Only runs of the paper's protocol are aggregated: runs stopped by a signal or on a non-finite
// loss, and runs of a reduced budget (result.json's departures from the configured protocol,
// reductions of the config below the built-in budget, or no config_hash at all) and runs on the
// emulated GPU (train -device emu: a check of the GPU path, its timings no GPU's) are left out,
// listed on standard error and under each table with the reason, as is a result.json that cannot
// be read or does not verify (the other runs are still tabulated); with -grid, so are runs in the
// grid's directories of another config, while an older result whose config.yaml is the grid's
// run takes that run's provenance (so full-budget older runs still count). -include-reduced
// includes the reduced-budget (and emulated) runs, marking their cells § and listing their
// budgets.
//
// -figure fig:random_erdos (or fig:neighborplot) draws one of the paper's plotted figures with our
// curves beside its points instead; -homophily analyses the CLUSTER and PATTERN runs' test
// predictions by homophily bucket (table:cluster_homo, table:pattern_homo), from the
// predictions.bin that train -predict writes into each run directory.
//
// Without -out the Markdown goes to standard output. With -out it writes, per table (zinc for
// table:zinc): zinc.md, zinc.tex, zinc-metric.png, zinc-time.png, zinc-curves-<setting>.png (the
// setting by the model registry's names: zinc-curves-gatedgcn-adj-cls.png),
// zinc-rtrend.png (only when some setting has finished runs at three or more r: a panel per such
// setting, each run a point, the mean over seeds a line, the paper's mean ± std a dashed line in
// a band), and for all tables together tables.md, results.md (the paper's table:results with our
// rows) and summary.json (every aggregated cell). -plots=false writes no PNG.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/homophily"
	"github.com/rewiregnn/rewiregnn/internal/plural"
	"github.com/rewiregnn/rewiregnn/report"
	"github.com/rewiregnn/rewiregnn/report/paper"
	"github.com/rewiregnn/rewiregnn/report/results"
	"github.com/rewiregnn/rewiregnn/runfiles"
	"github.com/rewiregnn/rewiregnn/sweep"
)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

type usageError struct{ error }

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	err := tablesMain(args, stdout, stderr)
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "tables:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "tables:", err)
		return 1
	}
}

// options are tables' flags.
type options struct {
	runsDir                   string
	runsGiven                 bool // -runs was given (with -grid it replaces the grids' out folders)
	grids, sets, stats        []string
	table, out, figure        string
	seeds                     int
	paperFile, externalFile   string
	plots, homophily, reduced bool
}

// parseFlags reads tables' flags and refuses combinations that cannot run (usageError).
func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("tables", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sets, stats, grids multiFlag
	o := &options{}
	fs.StringVar(&o.runsDir, "runs", "runs", "folder searched for result.json files (with -grid: replaces the grid's out folder)")
	fs.Var(&grids, "grid", "grid config: only its runs, in its out folder, form its table (planned seeds from the grid); repeatable for grids that fill one table (lrgb-peptides-func and lrgb-peptides-func-baselines)")
	fs.Var(&sets, "set", "key=value override for -grid, as given to sweep (repeatable)")
	fs.StringVar(&o.table, "table", "", "only this table id (e.g. table:zinc); default all tables found")
	fs.StringVar(&o.out, "out", "", "folder for the Markdown, LaTeX, plots and summary.json (default: Markdown to standard output)")
	fs.Var(&stats, "stats", "JSON of `go run ./cmd/stats -json` for the density measured here (repeatable; the dataset and r of each entry place it)")
	fs.IntVar(&o.seeds, "seeds", 4, "planned seeds per setting without -grid (cells with fewer are marked †)")
	fs.StringVar(&o.paperFile, "paper", "", "the paper's tables (default: the transcription compiled in, report/paper/tables.json)")
	fs.StringVar(&o.externalFile, "external", "", "published results of other papers for the tables beyond the paper (default: the file compiled in, report/paper/external.json)")
	fs.BoolVar(&o.plots, "plots", true, "with -out: draw the PNG plots")
	fs.BoolVar(&o.homophily, "homophily", false, "the homophily analysis (table:cluster_homo, table:pattern_homo) of the CLUSTER and PATTERN runs under -runs instead of the tables: each run's test predictions (predictions.bin, from train -predict DIR) in three parts by edge homophily")
	fs.StringVar(&o.figure, "figure", "", "a plotted figure of the paper instead of the tables (fig:random_erdos, fig:neighborplot): our curves from the runs under -runs beside its points")
	fs.BoolVar(&o.reduced, strings.TrimPrefix(results.IncludeReducedFlag, "-"), false,
		"include runs of a reduced budget (departures from the configured protocol such as -subset or -epochs, a grid below the built-in budget, results without config_hash, or runs on the emulated GPU), marked § in the tables; runs stopped by a signal or on a non-finite loss are left out regardless")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{err}
	}
	o.grids, o.sets, o.stats = grids, sets, stats
	fs.Visit(func(f *flag.Flag) { o.runsGiven = o.runsGiven || f.Name == "runs" })
	switch {
	case fs.NArg() > 0:
		return nil, usageError{fmt.Errorf("unexpected argument %q (flags only)", fs.Arg(0))}
	case o.seeds < 1:
		return nil, usageError{fmt.Errorf("-seeds %d: want ≥ 1", o.seeds)}
	case o.table != "" && !strings.HasPrefix(o.table, "table:"):
		return nil, usageError{fmt.Errorf("-table %q: a table id looks like table:zinc", o.table)}
	case len(o.sets) > 0 && len(o.grids) == 0:
		return nil, usageError{errors.New("-set needs -grid")}
	case o.homophily && (len(o.grids) > 0 || o.table != "" || o.figure != ""):
		return nil, usageError{errors.New("-homophily takes its runs from -runs; drop -grid, -table and -figure")}
	case o.figure != "" && (len(o.grids) > 0 || o.table != ""):
		return nil, usageError{errors.New("-figure takes its runs from -runs; drop -grid and -table")}
	}
	return o, nil
}

// published loads the paper's tables and the other papers' results: the files given, or the
// transcriptions compiled in.
func published(o *options) (*paper.File, *paper.External, error) {
	var pf *paper.File
	var err error
	if o.paperFile != "" {
		pf, err = paper.LoadFile(o.paperFile)
	} else {
		pf, err = paper.Load()
	}
	if err != nil {
		return nil, nil, err
	}
	var ext *paper.External
	if o.externalFile != "" {
		ext, err = paper.LoadExternalFile(o.externalFile)
	} else {
		ext, err = paper.LoadExternal()
	}
	return pf, ext, err
}

// tablesMain finds the runs, aggregates them over seeds and writes the tables (or the figure, or
// the homophily analysis).
func tablesMain(args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	pf, ext, err := published(o)
	if err != nil {
		return err
	}
	if o.homophily {
		return homophilyMain(pf, o.runsDir, o.out, o.reduced, stdout, stderr)
	}
	if o.figure != "" {
		return figureMain(pf, o.figure, o.runsDir, o.out, o.plots, o.reduced, stdout, stderr)
	}
	density, err := readStats(o.stats)
	if err != nil {
		return err
	}
	var runs []*results.Run
	var gridLeft []results.LeftOut // unreadable results; runs in the grid's directories of another config
	var gr *gridRuns
	opt := results.Options{DefaultPlanned: o.seeds}
	if len(o.grids) == 0 {
		if runs, gridLeft, err = results.Scan(o.runsDir); err != nil {
			return fmt.Errorf("-runs: %w", err)
		}
	} else {
		if gr, err = findGridRuns(o); err != nil {
			return err
		}
		runs, gridLeft = gr.runs, gr.left
		gr.setPlanned(&opt)
		if len(runs) == 0 {
			fmt.Fprintf(stderr, "tables: no finished runs of grid %s yet\n", strings.Join(gr.names, ", "))
		}
	}
	runs, left := results.Select(runs, o.reduced)
	left = append(gridLeft, left...)
	reportLeftOut(stderr, left)
	groups, err := results.Aggregate(runs, opt)
	if err != nil {
		return err
	}
	order, err := tableOrder(o, pf, groups, gr, left)
	if err != nil {
		return err
	}
	doc, err := render(o, pf, ext, order, groups, gr, left, density)
	if err != nil {
		return err
	}
	if o.out == "" {
		_, err := io.WriteString(stdout, doc.all)
		return err
	}
	return doc.write(o, groups, stdout)
}

// gridRuns are the finished runs of the grids given by -grid, found where each grid puts them
// (its out folder, or -runs if given), and what the grids say of them.
type gridRuns struct {
	runs    []*results.Run
	left    []results.LeftOut // unreadable results; runs in the grids' directories of another config
	notes   map[string]string // the grids' footnotes, by run name (config.Grid.Notes)
	table   string            // the one table the grids fill
	names   []string          // the grids' names
	planned map[string]int    // planned seeds, by run name
}

// findGridRuns loads each grid's plan and scans the folders its runs go to.
func findGridRuns(o *options) (*gridRuns, error) {
	over := ""
	if o.runsGiven {
		over = o.runsDir
	}
	gr := &gridRuns{notes: map[string]string{}, planned: map[string]int{}}
	jobDir := map[string]sweep.Job{}
	jobGrid := map[string]string{}
	roots := map[string]bool{}
	for _, gp := range o.grids {
		plan, err := sweep.LoadPlan(gp, o.sets, over, "")
		if err != nil {
			return nil, err
		}
		id := plan.Table
		if id == "" {
			id = "table:" + plan.Grid
		}
		if o.table != "" && o.table != id {
			return nil, usageError{fmt.Errorf("-table %s, but grid %s fills %s", o.table, plan.Grid, id)}
		}
		if gr.table != "" && id != gr.table {
			return nil, usageError{fmt.Errorf("grid %s fills %s, grid %s %s: give grids of one table", gr.names[0], gr.table, plan.Grid, id)}
		}
		gr.table = id
		gr.names = append(gr.names, plan.Grid)
		for _, n := range plan.Notes {
			gr.notes[n.Run] = n.Text
		}
		for _, j := range plan.Jobs {
			abs, err := filepath.Abs(j.Dir)
			if err != nil {
				return nil, err
			}
			if other, dup := jobGrid[abs]; dup {
				return nil, usageError{fmt.Errorf("grids %s and %s both run %s seed %d (%s)", other, plan.Grid, j.Name, j.Seed, j.Dir)}
			}
			gr.planned[j.Name]++
			jobDir[abs], jobGrid[abs] = j, plan.Grid
			roots[j.Out] = true
		}
	}
	for root := range roots {
		if err := gr.scan(root, jobDir); err != nil {
			return nil, err
		}
	}
	return gr, nil
}

// scan adds the runs under root that are the grids' jobs (jobDir, by absolute folder).
func (gr *gridRuns) scan(root string, jobDir map[string]sweep.Job) error {
	found, bad, err := results.Scan(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, b := range bad {
		if abs, _ := filepath.Abs(b.Dir); jobDir[abs].Dir != "" {
			gr.left = append(gr.left, b)
		}
	}
	for _, r := range found {
		abs, _ := filepath.Abs(r.Dir)
		j, ok := jobDir[abs]
		if !ok {
			continue
		}
		st, note := sweep.Inspect(j)
		switch {
		case st == sweep.Mismatch && r.Result.ConfigHash != "":
			// a run of another config than the grid's is not the grid's run
			gr.left = append(gr.left, results.LeftOut{Dir: r.Dir, Name: r.Result.Name, Dataset: r.Result.Dataset,
				Seed: r.Result.Seed, Reason: "not the grid's run: " + note})
			continue
		case st == sweep.Finished && r.Result.ConfigHash == "":
			// an older result whose config.yaml (the resolved config it ran with, budget
			// included) is the grid's run: it has the grid run's provenance
			adoptProvenance(r.Result, j)
		}
		gr.runs = append(gr.runs, r)
	}
	return nil
}

// setPlanned makes every run the grids' table's and plans each cell the seeds its grid runs.
func (gr *gridRuns) setPlanned(opt *results.Options) {
	opt.TableOf = func(*results.Run) string { return gr.table }
	byKey := map[results.Key]int{}
	for _, r := range gr.runs {
		k := results.Key{Table: gr.table, Dataset: r.Result.Dataset, Model: r.Result.Model, Encoding: r.Result.Encoding, CLS: r.Result.CLS, R: r.Result.R}
		byKey[k] = gr.planned[r.Result.Name]
	}
	opt.Planned = func(k results.Key) int { return byKey[k] }
}

// tableOrder is the ids of the tables to write, sorted: the grids' table, the one -table names,
// or every table with runs.
func tableOrder(o *options, pf *paper.File, groups []*results.Group, gr *gridRuns, left []results.LeftOut) ([]string, error) {
	ids := map[string]bool{}
	for _, g := range groups {
		ids[g.Table] = true
	}
	if gr != nil {
		ids = map[string]bool{gr.table: true}
	} else if o.table != "" && o.table != "table:results" {
		if !ids[o.table] {
			if _, ok := pf.Table(o.table); !ok {
				return nil, fmt.Errorf("-table %s: no finished runs under %s and no such table in the paper", o.table, o.runsDir)
			}
		}
		ids = map[string]bool{o.table: true}
	}
	var order []string
	for id := range ids {
		order = append(order, id)
	}
	sort.Strings(order)
	if len(order) == 0 && o.table != "table:results" && gr == nil {
		if len(left) > 0 {
			return nil, fmt.Errorf("no run under %s to tabulate: all %d were left out (listed above)", o.runsDir, len(left))
		}
		return nil, fmt.Errorf("no result.json under %s", o.runsDir)
	}
	return order, nil
}

// document is everything tables writes: each table rendered, the model-agnostic table and the
// paper's table:results with our rows (when asked for), and all of them in one Markdown text.
type document struct {
	tables          []rendered
	models, summary string
	all             string
}

// render builds and renders the tables of order, then the model-agnostic and summary tables
// where they apply.
func render(o *options, pf *paper.File, ext *paper.External, order []string, groups []*results.Group, gr *gridRuns,
	left []results.LeftOut, density map[string]map[int]float64) (*document, error) {
	doc := &document{}
	var all strings.Builder
	gridTable := ""
	var notes map[string]string
	if gr != nil {
		gridTable, notes = gr.table, gr.notes
	}
	for _, id := range order {
		pt, _ := pf.Table(id)
		if pt != nil && pt.RowKey != "r" {
			continue
		}
		ds := datasetOf(id, pt, groups)
		t, err := report.Build(id, groups, pt, density[ds])
		if err != nil {
			return nil, err
		}
		if t.Dataset == "" {
			t.Dataset = ds // a table without runs yet
		}
		t.LeftOut = leftOutOf(left, t, gr != nil)
		t.Notes = notes
		r := rendered{t: t}
		if pt == nil && report.LRGBDatasets[t.Dataset] {
			// beyond the paper: our runs beside LRGB's published rows (report/paper/external.json)
			lt, err := report.BuildLRGB(t, ext)
			if err != nil {
				return nil, err
			}
			r.md, r.tex = lt.Markdown(), lt.LaTeX()
		} else {
			r.md, r.tex = t.Markdown(), t.LaTeX()
		}
		doc.tables = append(doc.tables, r)
		all.WriteString(r.md)
		all.WriteString("\n")
	}
	if gridTable == "table:results" { // a grid of models (configs/grids/model-agnostic.yaml)
		res, _ := pf.Table("table:results")
		doc.models = (&report.ModelTable{Paper: res, Groups: groups}).Markdown()
		all.WriteString(doc.models)
	}
	if res, ok := pf.Table("table:results"); ok && gr == nil && (o.table == "table:results" || (o.table == "" && anyDataset(groups, res.Columns))) {
		doc.summary = (&report.Summary{Paper: res, Tables: pf, Groups: groups}).Markdown()
		all.WriteString(doc.summary)
	}
	doc.all = all.String()
	return doc, nil
}

// write writes the document's files into o.out (refusing to replace tables of more runs), each
// atomically, and names each on stdout.
func (doc *document) write(o *options, groups []*results.Group, stdout io.Writer) error {
	if err := checkNotFewer(o.out, groups); err != nil {
		return err
	}
	write := func(name, content string) error {
		p := filepath.Join(o.out, name)
		if err := runfiles.WriteAtomic(p, []byte(content), 0o644); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "wrote", p)
		return nil
	}
	for _, r := range doc.tables {
		short := strings.TrimPrefix(r.t.ID, "table:")
		if err := write(short+".md", r.md); err != nil {
			return err
		}
		if err := write(short+".tex", r.tex); err != nil {
			return err
		}
		if o.plots {
			if err := plotTable(r.t, groups, o.out, short, stdout); err != nil {
				return err
			}
		}
	}
	for _, f := range []struct{ name, content string }{{"results.md", doc.summary}, {"models.md", doc.models}} {
		if f.content != "" {
			if err := write(f.name, f.content); err != nil {
				return err
			}
		}
	}
	if err := write("tables.md", doc.all); err != nil {
		return err
	}
	js, err := json.MarshalIndent(groups, "", "  ")
	if err != nil {
		return err
	}
	return write(summaryFile, string(js)+"\n")
}

// rendered is one table and its Markdown and LaTeX: the paper-shaped table's, or for a dataset
// beyond the paper (report.LRGBDatasets) the LRGB table's.
type rendered struct {
	t       *report.Table
	md, tex string
}

// plotTable draws the metric, r-trend (where a setting has runs at three or more r), time and
// learning-curve plots of a table that has runs.
func plotTable(t *report.Table, groups []*results.Group, out, short string, stdout io.Writer) error {
	bySetting := map[string][]*results.Group{}
	for _, g := range groups {
		if g.Table == t.ID {
			bySetting[g.Setting()] = append(bySetting[g.Setting()], g)
		}
	}
	if len(bySetting) == 0 {
		return nil
	}
	p := filepath.Join(out, short+"-metric.png")
	if err := report.PlotMetric(t, p); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "wrote", p)
	p = filepath.Join(out, short+"-rtrend.png")
	wrote, err := report.PlotRTrend(t, p)
	if err != nil {
		return err
	}
	if wrote {
		fmt.Fprintln(stdout, "wrote", p)
	}
	p = filepath.Join(out, short+"-time.png")
	if err := report.PlotTime(t, p); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "wrote", p)
	for _, c := range t.Columns {
		gs := bySetting[c]
		if len(gs) == 0 {
			continue
		}
		p := filepath.Join(out, short+"-curves-"+results.RegistrySetting(c)+".png")
		err := report.PlotCurves(t.Dataset, t.Metric, c, gs, p)
		if err != nil && strings.Contains(err.Error(), "no metrics.jsonl") {
			continue // runs without epoch logs: no curves
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, "wrote", p)
	}
	return nil
}

// summaryFile is the file of -out that lists every aggregated cell, with its seeds.
const summaryFile = "summary.json"

// checkNotFewer refuses to replace the tables in out when they were made from more runs (as its
// summary.json records) than groups hold: tables of a fresh clone, whose runs are not in the
// repository, or of a partial runs folder must not overwrite committed results.
func checkNotFewer(out string, groups []*results.Group) error {
	p := filepath.Join(out, summaryFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("-out: %w", err)
	}
	var old []struct {
		Seeds []int64 `json:"seeds"`
	}
	if err := json.Unmarshal(b, &old); err != nil {
		return fmt.Errorf("-out: %s: %w (cannot tell how many runs its tables hold; move it away to replace them)", p, err)
	}
	m, n := 0, 0 // runs (one per seed of a cell) in the folder's tables and in these
	for _, g := range old {
		m += len(g.Seeds)
	}
	for _, g := range groups {
		n += len(g.Seeds)
	}
	if n < m {
		return fmt.Errorf("-out %s holds tables of %d runs (%s) and these are of %d: refusing to replace them with tables of fewer runs "+
			"(give the folder that holds all of its runs with -runs, write elsewhere with -out, or delete %s to replace them on purpose)", out, m, p, n, p)
	}
	return nil
}

// adoptProvenance gives an older result (no config_hash) whose run directory's config.yaml
// matches the grid's run the provenance of that run: its hash, departures and reductions. Other
// older results stay of unknown provenance (results.Select).
func adoptProvenance(res *runfiles.Result, j sweep.Job) {
	res.ConfigHash = j.Config.Hash()
	res.Departures = j.Config.Departures()
	res.Reductions = runfiles.WithoutKeys(j.Config.Reductions(), res.Departures)
}

// reportLeftOut lists the runs left out of the tables, and why, on w.
func reportLeftOut(w io.Writer, left []results.LeftOut) {
	if len(left) == 0 {
		return
	}
	fmt.Fprintf(w, "tables: %s left out:\n", plural.Count(len(left), "run"))
	for _, l := range left {
		fmt.Fprintf(w, "  %s (seed %s): %s\n", l.Dir, l.SeedLabel(), l.Reason)
	}
}

// leftOutOf are the left-out runs that belong to a table: all of them for a grid's table, else
// those of the table's dataset and the unreadable results (whose dataset is unknown).
func leftOutOf(left []results.LeftOut, t *report.Table, grid bool) []results.LeftOut {
	if grid {
		return left
	}
	var out []results.LeftOut
	for _, l := range left {
		if l.Dataset == t.Dataset || l.Dataset == "" {
			out = append(out, l)
		}
	}
	return out
}

// anyDataset reports whether some group is of one of the datasets.
func anyDataset(groups []*results.Group, datasets []string) bool {
	for _, g := range groups {
		for _, d := range datasets {
			if g.Dataset == d {
				return true
			}
		}
	}
	return false
}

func datasetOf(id string, pt *paper.Table, groups []*results.Group) string {
	if pt != nil && pt.Dataset != "" {
		return pt.Dataset
	}
	for _, g := range groups {
		if g.Table == id {
			return g.Dataset
		}
	}
	return strings.TrimPrefix(id, "table:")
}

// statsEntry is the part of a cmd/stats -json entry used here.
type statsEntry struct {
	Dataset string   `json:"dataset"`
	R       int      `json:"r"`
	CLS     bool     `json:"cls"`
	Density *float64 `json:"density"`
}

// readStats reads cmd/stats -json outputs into density by dataset and r. Entries with the CLS
// node are ignored (the density excludes it and is the same).
func readStats(paths []string) (map[string]map[int]float64, error) {
	out := map[string]map[int]float64{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("-stats: %w", err)
		}
		var es []statsEntry
		if err := json.Unmarshal(b, &es); err != nil {
			return nil, fmt.Errorf("-stats %s: %w (want the output of go run ./cmd/stats -json)", p, err)
		}
		for i, e := range es {
			if e.Dataset == "" || e.R < 1 || e.Density == nil {
				return nil, fmt.Errorf("-stats %s: entry %d lacks dataset, r or density", p, i)
			}
			if e.CLS {
				continue
			}
			if out[e.Dataset] == nil {
				out[e.Dataset] = map[int]float64{}
			}
			out[e.Dataset][e.R] = *e.Density
		}
	}
	return out, nil
}

// figureMain writes one of the paper's plotted figures with our curves (tables -figure): the
// Markdown table, and with -out also <name>.md, <name>.png and <name>.json.
func figureMain(pf *paper.File, id, runsDir, out string, plots, includeReduced bool, stdout, stderr io.Writer) error {
	pfig, ok := pf.Figure(id)
	if !ok {
		var ids []string
		for _, f := range pf.Figures {
			ids = append(ids, f.ID)
		}
		return usageError{fmt.Errorf("-figure %q: not a plotted figure of the paper (known: %s)", id, strings.Join(ids, ", "))}
	}
	groups, err := scanGroups(runsDir, includeReduced, stderr)
	if err != nil {
		return err
	}
	fig, err := report.BuildFigure(pfig, groups)
	if err != nil {
		return err
	}
	if fig.Groups == 0 {
		return fmt.Errorf("-figure %s: no finished %s runs under %s", id, pfig.Dataset, runsDir)
	}
	md := fig.Markdown() + "\nOur runs:\n\n" + fig.Settings()
	if out == "" {
		_, err := io.WriteString(stdout, md)
		return err
	}
	short := strings.ReplaceAll(strings.TrimPrefix(id, "fig:"), "_", "-")
	if err := writeReport(out, short, md, fig, stdout); err != nil {
		return err
	}
	if !plots {
		return nil
	}
	p := filepath.Join(out, short+".png")
	if err := fig.Plot(p); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "wrote", p)
	return nil
}

// homophilyMain writes the homophily analysis of every CLUSTER and PATTERN setting under runsDir
// (tables -homophily): homophily-<dataset>.md and .json with -out, else Markdown on stdout.
func homophilyMain(pf *paper.File, runsDir, out string, includeReduced bool, stdout, stderr io.Writer) error {
	groups, err := scanGroups(runsDir, includeReduced, stderr)
	if err != nil {
		return err
	}
	found := false
	for _, ds := range []string{"cluster", "pattern"} {
		var rep *homophily.Report
		for _, g := range groups {
			if g.Dataset != ds {
				continue
			}
			var preds []*runfiles.Predictions
			for _, r := range g.Runs {
				p, err := runfiles.ReadPredictions(filepath.Join(r.Dir, runfiles.PredictionsFile))
				if errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("-homophily: %s has no %s: write it with go run ./cmd/train -predict %s", r.Dir, runfiles.PredictionsFile, r.Dir)
				}
				if err != nil {
					return fmt.Errorf("-homophily: %w", err)
				}
				preds = append(preds, p)
			}
			if rep == nil {
				test, _, err := data.LoadFirst("", ds, "test", len(preds[0].Nodes))
				if err != nil {
					return err
				}
				if rep, err = homophily.NewReport(ds, test[:min(len(test), len(preds[0].Nodes))], 3); err != nil {
					return err
				}
			}
			if err := rep.Add(g.Name, g.R, preds); err != nil {
				return err
			}
		}
		if rep == nil {
			continue
		}
		found = true
		pt, _ := pf.Table("table:" + ds + "_homo")
		md := rep.Markdown(pt)
		if out == "" {
			if _, err := io.WriteString(stdout, md+"\n"); err != nil {
				return err
			}
			continue
		}
		if err := writeReport(out, "homophily-"+ds, md, rep, stdout); err != nil {
			return err
		}
	}
	if !found {
		return fmt.Errorf("-homophily: no finished CLUSTER or PATTERN runs under %s", runsDir)
	}
	return nil
}

// scanGroups reads every result under runsDir, leaves out (and lists) what -include-reduced
// says, and aggregates the seeds of each setting.
func scanGroups(runsDir string, includeReduced bool, stderr io.Writer) ([]*results.Group, error) {
	runs, bad, err := results.Scan(runsDir)
	if err != nil {
		return nil, fmt.Errorf("-runs: %w", err)
	}
	runs, left := results.Select(runs, includeReduced)
	reportLeftOut(stderr, append(bad, left...))
	return results.Aggregate(runs, results.Options{DefaultPlanned: 1})
}

// writeReport writes <name>.md and <name>.json (v as indented JSON) into out, atomically.
func writeReport(out, name, md string, v any, stdout io.Writer) error {
	js, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		b    []byte
	}{{name + ".md", []byte(md)}, {name + ".json", append(js, '\n')}} {
		p := filepath.Join(out, f.name)
		if err := runfiles.WriteAtomic(p, f.b, 0o644); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "wrote", p)
	}
	return nil
}
