// Package docfacts keeps the figures the docs quote from the repository's own files (how many
// configs there are, the epochs, test metrics and wall times of committed runs, how far parked
// runs have come) equal to those files. A figure is written between markers,
//
//	<!--fact:epochs docs/results/zinc-cpu/runs-->197–249<!--/fact-->
//
// which render as the bare value. Check reports every marker whose value differs from what the
// files say now; Update rewrites them (`go run ./cmd/docfacts -w`, also run by scripts/tables.sh).
package docfacts

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/rewiregnn/rewiregnn/report/paper"
	"github.com/rewiregnn/rewiregnn/report/results"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// marker matches one fact: its kind, its argument (folders or glob patterns relative to the
// repository root, separated by spaces; none for configs) and the value written in the doc.
var marker = regexp.MustCompile(`<!--fact:([a-z-]+)(?: ([^>]*?))?-->(.*?)<!--/fact-->`)

// Kinds are the facts a marker may name, each with what it says (for the docs and the errors).
var Kinds = map[string]string{
	"configs":     "the per-setting config files: configs/*/*.yaml outside configs/defaults and configs/grids",
	"runs":        "the finished runs (result.json, no checkpoint.bin) under the folders",
	"epochs":      "the range of the finished runs' epochs under the folders",
	"test":        "the range of the finished runs' test metrics under the folders, 3 decimals",
	"cell":        "the finished runs' test metrics under the folders as mean ± population std, 3 decimals (one run: its value)",
	"minutes":     "the range of the finished runs' total_seconds under the folders, in whole minutes",
	"parked":      "the range of epochs logged (metrics.jsonl lines) by the parked runs (with checkpoint.bin) under the folders",
	"unfinished":  "the number of parked runs (with checkpoint.bin) under the folders",
	"parked-test": "the range of the parked runs' last logged test metrics under the folders, 3 decimals (a first look, not a result)",
	"cells":       "the number of the paper's table cells (table:<dataset>, a setting at an r, with a number) with a finished run under the folders, runs on a reduced budget left out; runs of settings outside the paper's tables are not counted",
	"vs":          "the finished runs' test mean under the folders (all of one dataset, model, encoding, CLS and r) against the paper's cell in table:<dataset>, as the tables' vs paper column writes it: within 2σ (Δ +0.008, 2σ 0.018)",
}

// Mismatch is a marker whose value is not what the files say.
type Mismatch struct {
	File string // relative to the repository root
	Line int
	Fact string // as written, e.g. "epochs docs/results/zinc-cpu/runs"
	Have string
	Want string
}

func (m Mismatch) String() string {
	return fmt.Sprintf("%s:%d: fact %q reads %q, the files say %q", m.File, m.Line, m.Fact, m.Have, m.Want)
}

// Docs lists the Markdown files whose facts are kept: README.md and everything under docs/.
func Docs(root string) ([]string, error) {
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("docfacts: list the docs: %w", err)
	}
	sort.Strings(files[1:])
	return files, nil
}

// Check returns every marker in the docs whose value differs from the files', in file order.
func Check(root string) ([]Mismatch, error) {
	var all []Mismatch
	err := eachDoc(root, func(rel string, b []byte) ([]byte, error) {
		ms, _, err := scan(root, rel, b)
		all = append(all, ms...)
		return nil, err
	})
	return all, err
}

// Update rewrites every marker whose value differs and returns what it changed.
func Update(root string) ([]Mismatch, error) {
	var all []Mismatch
	err := eachDoc(root, func(rel string, b []byte) ([]byte, error) {
		ms, out, err := scan(root, rel, b)
		if err != nil || len(ms) == 0 {
			return nil, err
		}
		all = append(all, ms...)
		return out, nil
	})
	return all, err
}

// eachDoc calls f on every doc's contents; a non-nil result replaces the file (atomically).
func eachDoc(root string, f func(rel string, b []byte) ([]byte, error)) error {
	docs, err := Docs(root)
	if err != nil {
		return err
	}
	for _, rel := range docs {
		p := filepath.Join(root, rel)
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("docfacts: %w", err)
		}
		out, err := f(rel, b)
		if err != nil {
			return err
		}
		if out != nil {
			if err := runfiles.WriteAtomic(p, out, 0o644); err != nil {
				return fmt.Errorf("docfacts: %w", err)
			}
		}
	}
	return nil
}

// scan finds the markers of one doc and returns the mismatches and the doc with them corrected.
func scan(root, rel string, b []byte) ([]Mismatch, []byte, error) {
	var ms []Mismatch
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	line := 0
	cache := map[string]string{}
	for sc.Scan() {
		line++
		text := sc.Text()
		var ferr error
		fixed := marker.ReplaceAllStringFunc(text, func(m string) string {
			sub := marker.FindStringSubmatch(m)
			fact := strings.TrimSpace(sub[1] + " " + sub[2])
			want, ok := cache[fact]
			if !ok {
				v, err := Value(root, sub[1], sub[2])
				if err != nil {
					if ferr == nil {
						ferr = fmt.Errorf("docfacts: %s:%d: fact %q: %w", rel, line, fact, err)
					}
					return m
				}
				want, cache[fact] = v, v
			}
			if want == sub[3] {
				return m
			}
			ms = append(ms, Mismatch{File: rel, Line: line, Fact: fact, Have: sub[3], Want: want})
			return strings.Replace(m, "-->"+sub[3]+"<!--", "-->"+want+"<!--", 1)
		})
		if ferr != nil {
			return nil, nil, ferr
		}
		out.WriteString(fixed)
		out.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("docfacts: %s: %w", rel, err)
	}
	if !bytes.HasSuffix(b, []byte("\n")) {
		out.Truncate(out.Len() - 1)
	}
	return ms, out.Bytes(), nil
}

// Value computes one fact from the files under root.
func Value(root, kind, arg string) (string, error) {
	if _, ok := Kinds[kind]; !ok {
		return "", fmt.Errorf("unknown fact %q (known: %s)", kind, strings.Join(kindNames(), ", "))
	}
	if kind == "configs" {
		if arg != "" {
			return "", fmt.Errorf("configs takes no folder")
		}
		n, err := countConfigs(root)
		return fmt.Sprint(n), err
	}
	if arg == "" {
		return "", fmt.Errorf("%s needs a folder (relative to the repository root)", kind)
	}
	runs, err := collectAll(root, arg)
	if err != nil {
		return "", err
	}
	var xs []float64
	switch kind {
	case "runs":
		return fmt.Sprint(len(runs.results)), nil
	case "unfinished":
		return fmt.Sprint(len(runs.parked)), nil
	case "epochs":
		for _, r := range runs.results {
			xs = append(xs, float64(r.Epochs))
		}
		return span(xs, "%.0f")
	case "test":
		return span(testMetrics(reportable(runs.results)), "%.3f")
	case "cell":
		return meanStd(testMetrics(reportable(runs.results)))
	case "minutes":
		for _, r := range runs.results {
			xs = append(xs, math.Round(r.TotalSeconds/60))
		}
		return span(xs, "%.0f")
	case "parked-test":
		return span(runs.parkedTest, "%.3f")
	case "vs":
		return versusPaper(runs.results)
	case "cells":
		return paperCells(runs.results)
	default: // parked
		return span(runs.parked, "%.0f")
	}
}

// reportable keeps the results a table reports (runfiles.Result.Reportable).
func reportable(rs []*runfiles.Result) []*runfiles.Result {
	var out []*runfiles.Result
	for _, r := range rs {
		if r.Reportable() == "" {
			out = append(out, r)
		}
	}
	return out
}

func testMetrics(rs []*runfiles.Result) []float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = r.TestMetric
	}
	return xs
}

// versusPaper compares the reportable results' test mean with the paper's cell of their setting
// (paper.Cell.Versus).
func versusPaper(rs []*runfiles.Result) (string, error) {
	rs = reportable(rs)
	if len(rs) == 0 {
		return "", fmt.Errorf("no runs to take it from")
	}
	dataset, setting, r := rs[0].Dataset, results.Setting(rs[0].Model, rs[0].Encoding, rs[0].CLS), rs[0].R
	for _, o := range rs[1:] {
		if s := results.Setting(o.Model, o.Encoding, o.CLS); o.Dataset != dataset || s != setting || o.R != r {
			return "", fmt.Errorf("runs of two settings: %s %s r=%d and %s %s r=%d", dataset, setting, r, o.Dataset, s, o.R)
		}
	}
	pf, err := paper.Load()
	if err != nil {
		return "", err
	}
	cell, err := cellOf(pf, dataset, setting, r)
	if err != nil {
		return "", err
	}
	v, ok := cell.Versus(results.MeanStd(testMetrics(rs)).Mean)
	if !ok {
		return "", fmt.Errorf("table:%s's cell %s at r = %d has no number (%q)", dataset, setting, r, cell.String())
	}
	return v, nil
}

// paperCells counts the paper's table cells with a number that the finished results fill, as
// the cell and vs facts read them, less the runs on a reduced budget (runfiles.Reduced: a
// binding departure, a reduced config, the emulated GPU; a result older than config hashes
// counts, as the tables count it when its config is the grid's): each distinct (dataset,
// setting, r) with a cell in table:<dataset>.
func paperCells(rs []*runfiles.Result) (string, error) {
	pf, err := paper.Load()
	if err != nil {
		return "", err
	}
	seen := map[string]bool{}
	for _, r := range reportable(rs) {
		if r.Provenance() == runfiles.Reduced {
			continue
		}
		setting := results.Setting(r.Model, r.Encoding, r.CLS)
		if c, err := cellOf(pf, r.Dataset, setting, r.R); err != nil || c.Mean == "" {
			continue
		}
		seen[fmt.Sprintf("%s %s r=%d", r.Dataset, setting, r.R)] = true
	}
	if len(seen) == 0 {
		return "", fmt.Errorf("no run fills a cell of the paper's tables")
	}
	return fmt.Sprint(len(seen)), nil
}

// cellOf is the paper's cell of a setting at r in table:<dataset>.
func cellOf(pf *paper.File, dataset, setting string, r int) (paper.Cell, error) {
	pt, ok := pf.TableForDataset(dataset)
	if !ok {
		return paper.Cell{}, fmt.Errorf("the paper has no table:%s", dataset)
	}
	cell, ok := pt.Cell(r, setting)
	if !ok {
		return paper.Cell{}, fmt.Errorf("table:%s has no cell %s at r = %d", dataset, setting, r)
	}
	return cell, nil
}

func kindNames() []string {
	var ks []string
	for k := range Kinds {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// span formats the range of xs as "lo–hi", or one value when they are equal.
func span(xs []float64, format string) (string, error) {
	if len(xs) == 0 {
		return "", fmt.Errorf("no runs to take it from")
	}
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	a, b := fmt.Sprintf(format, lo), fmt.Sprintf(format, hi)
	if a == b {
		return a, nil
	}
	return a + "–" + b, nil
}

// meanStd formats xs as the tables do (results.Stat.Text: mean ± population std, or the one
// value).
func meanStd(xs []float64) (string, error) {
	if len(xs) == 0 {
		return "", fmt.Errorf("no runs to take it from")
	}
	return results.MeanStd(xs).Text(" ± "), nil
}

// countConfigs counts the per-setting config files.
func countConfigs(root string) (int, error) {
	dirs, err := os.ReadDir(filepath.Join(root, "configs"))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "defaults" || d.Name() == "grids" {
			continue
		}
		ms, err := filepath.Glob(filepath.Join(root, "configs", d.Name(), "*.yaml"))
		if err != nil {
			return 0, err
		}
		n += len(ms)
	}
	return n, nil
}

// collectAll reads the run folders under each of the space-separated folders or glob patterns
// of arg (relative to root); a pattern must match at least one folder.
func collectAll(root, arg string) (runSet, error) {
	var all runSet
	for _, pat := range strings.Fields(arg) {
		dirs, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(pat)))
		if err != nil {
			return all, fmt.Errorf("folder pattern %q: %w", pat, err)
		}
		if len(dirs) == 0 {
			return all, fmt.Errorf("no folder %s", pat)
		}
		for _, d := range dirs {
			rs, err := collect(d)
			if err != nil {
				return all, err
			}
			all.results = append(all.results, rs.results...)
			all.parked = append(all.parked, rs.parked...)
			all.parkedTest = append(all.parkedTest, rs.parkedTest...)
		}
	}
	return all, nil
}

// runSet is what a folder holds: the results of its finished runs, and the epochs logged by its
// parked ones.
type runSet struct {
	results    []*runfiles.Result
	parked     []float64 // epochs logged
	parkedTest []float64 // the last logged epoch's test metric
}

// collect reads every run folder under dir (hidden folders skipped: superseded and restarted
// runs): a folder with checkpoint.bin is a parked run (committed runs keep their checkpoint only
// while unfinished), one with result.json and no checkpoint a finished run.
func collect(dir string) (runSet, error) {
	var rs runSet
	if _, err := os.Stat(dir); err != nil {
		return rs, err
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(p, "checkpoint.bin")); err == nil {
			eps, err := runfiles.ReadMetrics(filepath.Join(p, "metrics.jsonl"))
			if err != nil {
				return err
			}
			rs.parked = append(rs.parked, float64(len(eps)))
			if len(eps) > 0 {
				rs.parkedTest = append(rs.parkedTest, eps[len(eps)-1].TestMetric)
			}
			return filepath.SkipDir
		}
		res := filepath.Join(p, "result.json")
		if _, err := os.Stat(res); err == nil {
			r, err := runfiles.ReadResult(res)
			if err != nil {
				return err
			}
			rs.results = append(rs.results, r)
			return filepath.SkipDir
		}
		return nil
	})
	return rs, err
}
