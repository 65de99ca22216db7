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

func tablesMain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tables", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sets, stats multiFlag
	runsDir := fs.String("runs", "runs", "folder searched for result.json files (with -grid: replaces the grid's out folder)")
	var grids multiFlag
	fs.Var(&grids, "grid", "grid config: only its runs, in its out folder, form its table (planned seeds from the grid); repeatable for grids that fill one table (lrgb-peptides-func and lrgb-peptides-func-baselines)")
	fs.Var(&sets, "set", "key=value override for -grid, as given to sweep (repeatable)")
	table := fs.String("table", "", "only this table id (e.g. table:zinc); default all tables found")
	out := fs.String("out", "", "folder for the Markdown, LaTeX, plots and summary.json (default: Markdown to standard output)")
	fs.Var(&stats, "stats", "JSON of `go run ./cmd/stats -json` for the density measured here (repeatable; the dataset and r of each entry place it)")
	seeds := fs.Int("seeds", 4, "planned seeds per setting without -grid (cells with fewer are marked †)")
	paperFile := fs.String("paper", "", "the paper's tables (default: the transcription compiled in, report/paper/tables.json)")
	externalFile := fs.String("external", "", "published results of other papers for the tables beyond the paper (default: the file compiled in, report/paper/external.json)")
	plots := fs.Bool("plots", true, "with -out: draw the PNG plots")
	homophilyReport := fs.Bool("homophily", false, "the homophily analysis (table:cluster_homo, table:pattern_homo) of the CLUSTER and PATTERN runs under -runs instead of the tables: each run's test predictions (predictions.bin, from train -predict DIR) in three parts by edge homophily")
	figure := fs.String("figure", "", "a plotted figure of the paper instead of the tables (fig:random_erdos, fig:neighborplot): our curves from the runs under -runs beside its points")
	includeReduced := fs.Bool(strings.TrimPrefix(results.IncludeReducedFlag, "-"), false,
		"include runs of a reduced budget (departures from the configured protocol such as -subset or -epochs, a grid below the built-in budget, results without config_hash, or runs on the emulated GPU), marked § in the tables; runs stopped by a signal or on a non-finite loss are left out regardless")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q (flags only)", fs.Arg(0))}
	}
	if *seeds < 1 {
		return usageError{fmt.Errorf("-seeds %d: want ≥ 1", *seeds)}
	}
	if *table != "" && !strings.HasPrefix(*table, "table:") {
		return usageError{fmt.Errorf("-table %q: a table id looks like table:zinc", *table)}
	}
	grid := len(grids) > 0
	if len(sets) > 0 && !grid {
		return usageError{errors.New("-set needs -grid")}
	}

	var pf *paper.File
	var err error
	if *paperFile != "" {
		pf, err = paper.LoadFile(*paperFile)
	} else {
		pf, err = paper.Load()
	}
	if err != nil {
		return err
	}
	var ext *paper.External
	if *externalFile != "" {
		ext, err = paper.LoadExternalFile(*externalFile)
	} else {
		ext, err = paper.LoadExternal()
	}
	if err != nil {
		return err
	}
	if *homophilyReport {
		if grid || *table != "" || *figure != "" {
			return usageError{errors.New("-homophily takes its runs from -runs; drop -grid, -table and -figure")}
		}
		return homophilyMain(pf, *runsDir, *out, *includeReduced, stdout, stderr)
	}
	if *figure != "" {
		if grid || *table != "" {
			return usageError{errors.New("-figure takes its runs from -runs; drop -grid and -table")}
		}
		return figureMain(pf, *figure, *runsDir, *out, *plots, *includeReduced, stdout, stderr)
	}
	density, err := readStats(stats)
	if err != nil {
		return err
	}
	runsGiven := false
	fs.Visit(func(f *flag.Flag) { runsGiven = runsGiven || f.Name == "runs" })
	var runs []*results.Run
	var gridLeft []results.LeftOut // unreadable results; runs in the grid's directories of another config
	var notes map[string]string    // the grids' footnotes, by run name (config.Grid.Notes)
	var gridTable string
	opt := results.Options{DefaultPlanned: *seeds}
	if !grid {
		if runs, gridLeft, err = results.Scan(*runsDir); err != nil {
			return fmt.Errorf("-runs: %w", err)
		}
	} else {
		// The grids' runs only, found where each grid puts them (its out, or -runs if given).
		over := ""
		if runsGiven {
			over = *runsDir
		}
		var tid string
		var names []string
		notes = map[string]string{}
		planned := map[string]int{}
		jobDir := map[string]sweep.Job{}
		jobGrid := map[string]string{}
		roots := map[string]bool{}
		for _, gp := range grids {
			plan, err := sweep.LoadPlan(gp, sets, over, "")
			if err != nil {
				return err
			}
			id := plan.Table
			if id == "" {
				id = "table:" + plan.Grid
			}
			if *table != "" && *table != id {
				return usageError{fmt.Errorf("-table %s, but grid %s fills %s", *table, plan.Grid, id)}
			}
			if tid != "" && id != tid {
				return usageError{fmt.Errorf("grid %s fills %s, grid %s %s: give grids of one table", names[0], tid, plan.Grid, id)}
			}
			tid = id
			names = append(names, plan.Grid)
			for _, n := range plan.Notes {
				notes[n.Run] = n.Text
			}
			for _, j := range plan.Jobs {
				abs, err := filepath.Abs(j.Dir)
				if err != nil {
					return err
				}
				if other, dup := jobGrid[abs]; dup {
					return usageError{fmt.Errorf("grids %s and %s both run %s seed %d (%s)", other, plan.Grid, j.Name, j.Seed, j.Dir)}
				}
				planned[j.Name]++
				jobDir[abs], jobGrid[abs] = j, plan.Grid
				roots[j.Out] = true
			}
		}
		for root := range roots {
			found, bad, err := results.Scan(root)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			for _, b := range bad {
				if abs, _ := filepath.Abs(b.Dir); jobDir[abs].Dir != "" {
					gridLeft = append(gridLeft, b)
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
					gridLeft = append(gridLeft, results.LeftOut{Dir: r.Dir, Name: r.Result.Name, Dataset: r.Result.Dataset,
						Seed: r.Result.Seed, Reason: "not the grid's run: " + note})
					continue
				case st == sweep.Finished && r.Result.ConfigHash == "":
					// an older result whose config.yaml (the resolved config it ran with, budget
					// included) is the grid's run: it has the grid run's provenance
					adoptProvenance(r.Result, j)
				}
				runs = append(runs, r)
			}
		}
		gridTable = tid
		opt.TableOf = func(*results.Run) string { return tid }
		byKey := map[results.Key]int{}
		for _, r := range runs {
			k := results.Key{Table: tid, Dataset: r.Result.Dataset, Model: r.Result.Model, Encoding: r.Result.Encoding, CLS: r.Result.CLS, R: r.Result.R}
			byKey[k] = planned[r.Result.Name]
		}
		opt.Planned = func(k results.Key) int { return byKey[k] }
		if len(runs) == 0 {
			fmt.Fprintf(stderr, "tables: no finished runs of grid %s yet\n", strings.Join(names, ", "))
		}
	}
	runs, left := results.Select(runs, *includeReduced)
	left = append(gridLeft, left...)
	reportLeftOut(stderr, left)
	groups, err := results.Aggregate(runs, opt)
	if err != nil {
		return err
	}
	ids := map[string]bool{}
	for _, g := range groups {
		ids[g.Table] = true
	}
	if gridTable != "" {
		ids = map[string]bool{gridTable: true}
	} else if *table != "" && *table != "table:results" {
		if !ids[*table] {
			if _, ok := pf.Table(*table); !ok {
				return fmt.Errorf("-table %s: no finished runs under %s and no such table in the paper", *table, *runsDir)
			}
		}
		ids = map[string]bool{*table: true}
	}
	var order []string
	for id := range ids {
		order = append(order, id)
	}
	sort.Strings(order)
	if len(order) == 0 && *table != "table:results" && !grid {
		if len(left) > 0 {
			return fmt.Errorf("no run under %s to tabulate: all %d were left out (listed above)", *runsDir, len(left))
		}
		return fmt.Errorf("no result.json under %s", *runsDir)
	}

	var all strings.Builder
	var tables []rendered
	for _, id := range order {
		pt, _ := pf.Table(id)
		if pt != nil && pt.RowKey != "r" {
			continue
		}
		var d map[int]float64
		ds := datasetOf(id, pt, groups)
		if m, ok := density[ds]; ok {
			d = m
		}
		t, err := report.Build(id, groups, pt, d)
		if err != nil {
			return err
		}
		if t.Dataset == "" {
			t.Dataset = ds // a table without runs yet
		}
		t.LeftOut = leftOutOf(left, t, gridTable != "")
		t.Notes = notes
		r := rendered{t: t}
		if pt == nil && report.LRGBDatasets[t.Dataset] {
			// beyond the paper: our runs beside LRGB's published rows (report/paper/external.json)
			lt, err := report.BuildLRGB(t, ext)
			if err != nil {
				return err
			}
			r.md, r.tex = lt.Markdown(), lt.LaTeX()
		} else {
			r.md, r.tex = t.Markdown(), t.LaTeX()
		}
		tables = append(tables, r)
		all.WriteString(r.md)
		all.WriteString("\n")
	}
	var models string
	if gridTable == "table:results" { // a grid of models (configs/grids/model-agnostic.yaml)
		res, _ := pf.Table("table:results")
		models = (&report.ModelTable{Paper: res, Groups: groups}).Markdown()
		all.WriteString(models)
	}
	var summary string
	if res, ok := pf.Table("table:results"); ok && gridTable == "" && (*table == "table:results" || (*table == "" && !grid && anyDataset(groups, res.Columns))) {
		summary = (&report.Summary{Paper: res, Tables: pf, Groups: groups}).Markdown()
		all.WriteString(summary)
	}
	if *out == "" {
		_, err := io.WriteString(stdout, all.String())
		return err
	}

	if err := checkNotFewer(*out, groups); err != nil {
		return err
	}
	write := func(name, content string) error {
		p := filepath.Join(*out, name)
		if err := runfiles.WriteAtomic(p, []byte(content), 0o644); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "wrote", p)
		return nil
	}
	for _, r := range tables {
		t := r.t
		short := strings.TrimPrefix(t.ID, "table:")
		if err := write(short+".md", r.md); err != nil {
			return err
		}
		if err := write(short+".tex", r.tex); err != nil {
			return err
		}
		if !*plots {
			continue
		}
		if err := plotTable(t, groups, *out, short, stdout); err != nil {
			return err
		}
	}
	if summary != "" {
		if err := write("results.md", summary); err != nil {
			return err
		}
	}
	if models != "" {
		if err := write("models.md", models); err != nil {
			return err
		}
	}
	if err := write("tables.md", all.String()); err != nil {
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
