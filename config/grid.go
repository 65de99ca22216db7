package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rewiregnn/rewiregnn/data"
	"go.yaml.in/yaml/v3"
)

// Grid is a grid config: the runs of a whole table or figure, as products of datasets ×
// models × encodings × cls × r, each run with the grid's seeds. A grid file reads:
//
//	name: table-zinc          # optional; default: the file name without .yaml
//	table: "table:zinc"       # the paper table or figure the runs fill (tables groups by it)
//	datasets: [zinc]
//	models: [transformer, gatedgcn]
//	encodings: [adj, short, lp]
//	cls: [false, true]
//	r: 1-10                   # a number, a list [1, 2, 3], or ranges "1-4,6"
//	seeds: [41, 95, 12, 35]   # optional; default: train.seeds of the defaults (the paper's)
//	tag: noloops              # optional: appended to every run name (zinc-gatedgcn-none-r1-noloops),
//	                          # for a variant whose keys run names leave out (dataset.self_loops)
//	notes:                    # optional: a footnote under the table for a run's cell, by run name
//	  zinc-gatedgcn-adj-r1: "read with the bond types; without them 0.37 (fidelity-…)"
//	extra:                    # optional: more products; unset keys are taken from the top
//	  - cls: [true]
//	    r: [1]
//	overrides:                # optional: run-config keys for every run, as in a config file
//	  train:
//	    max_time: 10m
type Grid struct {
	Name     string    // the grid's name (file name without .yaml unless given)
	Table    string    // paper table/figure id, e.g. "table:zinc", "fig:neighborplot"
	Path     string    // the file it was read from
	Products []Product // the top-level product first, then each of extra
	Seeds    []int64   // nil: the defaults' train.seeds
	Tag      string    // appended to every run name as -<tag>; "" for none
	Notes    []Note    // footnotes of runs' cells, in file order

	overrides *layer // the overrides: mapping, as a config-file layer
	seedsSrc  string
	env, set  *layer
}

// Note is a grid's footnote to the table cell of one of its runs.
type Note struct {
	Run  string // the run's name
	Text string
	Line int // its line in the grid file
}

// Product is one Cartesian product of settings.
type Product struct {
	Datasets  []string
	Models    []string
	Encodings []string
	CLS       []bool
	R         []int
	Line      int // line of the product in the grid file
}

// gridAxes are the run-config keys a grid's products choose; overrides, environment variables
// and -set may not set them (nor the seeds and the run name, which the grid also decides).
var gridAxes = map[string]string{
	"dataset.name":     "datasets",
	"model.name":       "models",
	"dataset.encoding": "encodings",
	"dataset.cls":      "cls",
	"dataset.r":        "r",
	"train.seeds":      "seeds",
	"name":             "",
}

func axisError(key string) string {
	if g := gridAxes[key]; g != "" {
		return fmt.Sprintf("%s is chosen by the grid (its %q list)", key, g)
	}
	return fmt.Sprintf("%s is derived for every run of a grid", key)
}

// LoadGrid reads a grid config. sets are -set key=value overrides applied to every run on top
// of the grid's overrides and the environment (they may not change the grid's own axes).
func LoadGrid(path string, sets []string) (*Grid, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("grid: %w", err)
	}
	return ParseGrid(path, data, sets)
}

// ParseGrid is LoadGrid for a grid held in memory; path names it in errors and gives its
// default name.
func ParseGrid(path string, data []byte, sets []string) (*Grid, error) {
	root, err := parseYAMLDoc(path, data)
	if err != nil {
		return nil, err
	}
	if root == nil {
		return nil, fmt.Errorf("%s: empty grid", path)
	}
	g := &Grid{Path: path, Name: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), overrides: newLayer(path)}
	var errs []error
	fail := func(line int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s:%d: %s", path, line, fmt.Sprintf(format, args...)))
	}
	top := Product{Line: root.Line}
	seen := eachKey(root, "", fail, func(key string, kn, vn *yaml.Node) {
		switch key {
		case "name", "table":
			if vn.Kind != yaml.ScalarNode || isNull(vn) || vn.Value == "" {
				fail(vn.Line, "%s: want a name, got %s", key, describe(vn))
				return
			}
			if key == "name" {
				g.Name = vn.Value
			} else {
				g.Table = vn.Value
			}
		case "tag":
			if vn.Kind != yaml.ScalarNode || !validTag(vn.Value) {
				fail(vn.Line, "tag: want lower-case letters and digits (it ends every run name as -<tag>), got %s", describe(vn))
				return
			}
			g.Tag = vn.Value
		case "notes":
			g.Notes = parseNotes(vn, fail)
		case "seeds":
			seeds, err := nodeValue(schemaByKey["train.seeds"], vn)
			if err != nil {
				fail(vn.Line, "seeds: %v", strings.TrimPrefix(err.Error(), "train.seeds: "))
				return
			}
			g.Seeds, g.seedsSrc = seeds.([]int64), fmt.Sprintf("%s:%d", path, vn.Line)
		case "overrides":
			if vn.Kind != yaml.MappingNode {
				fail(vn.Line, "overrides: want a mapping of run-config keys, got %s", describe(vn))
				return
			}
			l, err := runLayer(path, vn, "overrides.")
			if err != nil {
				errs = append(errs, err)
				return
			}
			for _, k := range sortedKeys(l.vals) {
				if _, axis := gridAxes[k]; axis {
					fail(lineOf(l.vals[k].src), "overrides.%s", axisError(k))
				}
			}
			g.overrides = l
		case "extra":
			if vn.Kind != yaml.SequenceNode {
				fail(vn.Line, "extra: want a list of products, got %s", describe(vn))
				return
			}
			for _, item := range vn.Content {
				item = deref(item)
				if item.Kind != yaml.MappingNode {
					fail(item.Line, "extra: each item must be a mapping (datasets, models, encodings, cls, r), got %s", describe(item))
					continue
				}
				p := Product{Line: item.Line}
				eachKey(item, "extra: ", fail, func(k string, pk, pv *yaml.Node) {
					if !isAxisKey(k) {
						fail(pk.Line, "extra: unknown key %q (an extra product takes datasets, models, encodings, cls, r)", k)
						return
					}
					if err := p.setAxis(k, pv); err != nil {
						fail(pv.Line, "extra: %v", err)
					}
				})
				g.Products = append(g.Products, p)
			}
		default:
			if isAxisKey(key) {
				if err := top.setAxis(key, vn); err != nil {
					fail(vn.Line, "%v", err)
				}
				return
			}
			msg := fmt.Sprintf("unknown key %q (a grid takes name, table, tag, notes, datasets, models, encodings, cls, r, seeds, extra, overrides)", key)
			if key == "dataset" || key == "model" || key == "encoding" {
				msg += fmt.Sprintf("; did you mean %q?", key+"s")
			}
			fail(kn.Line, "%s", msg)
		}
	})
	for _, need := range []struct {
		key string
		ok  bool
	}{{"datasets", top.Datasets != nil}, {"models", top.Models != nil}, {"encodings", top.Encodings != nil}, {"cls", top.CLS != nil}, {"r", top.R != nil}} {
		if !need.ok && seen[need.key] == 0 {
			fail(root.Line, "missing key %q", need.key)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for i := range g.Products {
		g.Products[i].inherit(top)
	}
	g.Products = append([]Product{top}, g.Products...)

	if g.env, err = envLayer(os.Environ()); err != nil {
		return nil, err
	}
	if g.set, err = setLayer(sets); err != nil {
		return nil, err
	}
	for _, l := range []*layer{g.env, g.set} {
		for _, k := range sortedKeys(l.vals) {
			if _, axis := gridAxes[k]; axis {
				errs = append(errs, fmt.Errorf("%s: grid %s: %s", l.vals[k].src, path, axisError(k)))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return g, nil
}

func isAxisKey(k string) bool {
	switch k {
	case "datasets", "models", "encodings", "cls", "r":
		return true
	}
	return false
}

// lineOf extracts the line from a "file:line" source.
func lineOf(src string) int {
	i := strings.LastIndexByte(src, ':')
	n, _ := strconv.Atoi(src[i+1:])
	return n
}

// setAxis reads one list of a product, rejecting unknown names and repeats.
func (p *Product) setAxis(key string, n *yaml.Node) error {
	if key == "r" {
		rs, err := parseRList(n)
		if err != nil {
			return err
		}
		p.R = rs
		return nil
	}
	var items []string
	switch {
	case n.Kind == yaml.SequenceNode:
		for _, it := range n.Content {
			it = deref(it)
			if it.Kind != yaml.ScalarNode || isNull(it) {
				return fmt.Errorf("%s: want a list of names, got an item that is %s", key, describe(it))
			}
			items = append(items, it.Value)
		}
	case n.Kind == yaml.ScalarNode && !isNull(n):
		items = []string{n.Value}
	default:
		return fmt.Errorf("%s: want a list, got %s", key, describe(n))
	}
	if len(items) == 0 {
		return fmt.Errorf("%s: empty list", key)
	}
	seen := map[string]bool{}
	for _, it := range items {
		if seen[it] {
			return fmt.Errorf("%s: %q is listed twice", key, it)
		}
		seen[it] = true
	}
	switch key {
	case "datasets":
		for _, it := range items {
			if _, _, ok := datasetFamily(it); !ok {
				return fmt.Errorf("datasets: unknown dataset %q (known: %s)", it, strings.Join(data.DatasetNames(), ", "))
			}
		}
		p.Datasets = items
	case "models":
		for _, it := range items {
			if !contains(ModelNames, it) {
				return fmt.Errorf("models: unknown model %q (want %s)", it, orList(ModelNames))
			}
		}
		p.Models = items
	case "encodings":
		for _, it := range items {
			if _, ok := data.LookupEncoding(it); !ok {
				return fmt.Errorf("encodings: unknown encoding %q (want %s)", it, orList(data.EncodingNames()))
			}
		}
		p.Encodings = items
	case "cls":
		p.CLS = nil
		for _, it := range items {
			b, err := strconv.ParseBool(it)
			if err != nil {
				return fmt.Errorf("cls: %q is not true or false", it)
			}
			p.CLS = append(p.CLS, b)
		}
	}
	return nil
}

// parseRList reads r: 3, r: [1, 2, 3], r: "1-10" or r: "1-4,6".
func parseRList(n *yaml.Node) ([]int, error) {
	var parts []string
	switch {
	case n.Kind == yaml.SequenceNode:
		for _, it := range n.Content {
			it = deref(it)
			if it.Kind != yaml.ScalarNode || isNull(it) {
				return nil, fmt.Errorf("r: want a list of radii, got an item that is %s", describe(it))
			}
			parts = append(parts, it.Value)
		}
	case n.Kind == yaml.ScalarNode && !isNull(n):
		parts = strings.Split(n.Value, ",")
	default:
		return nil, fmt.Errorf("r: want a radius, a list or a range like 1-10, got %s", describe(n))
	}
	var out []int
	seen := map[int]bool{}
	for _, part := range parts {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(strings.TrimSpace(lo))
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.Atoi(strings.TrimSpace(hi))
		}
		if part == RadiusAuto {
			return nil, fmt.Errorf("r: %s picks one radius for a single run (a run config's dataset.r); a grid lists its radii: find the rule's choice with go run ./cmd/stats -dataset NAME -suggest", RadiusAuto)
		}
		if err1 != nil || err2 != nil || a < 1 || b < a {
			return nil, fmt.Errorf("r: %q is not a radius ≥ 1 or a range like 1-10", part)
		}
		for r := a; r <= b; r++ {
			if seen[r] {
				return nil, fmt.Errorf("r: radius %d is listed twice", r)
			}
			seen[r] = true
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("r: empty list")
	}
	return out, nil
}

func (p *Product) inherit(top Product) {
	if p.Datasets == nil {
		p.Datasets = top.Datasets
	}
	if p.Models == nil {
		p.Models = top.Models
	}
	if p.Encodings == nil {
		p.Encodings = top.Encodings
	}
	if p.CLS == nil {
		p.CLS = top.CLS
	}
	if p.R == nil {
		p.R = top.R
	}
}

// Expand resolves every run of the grid, in a stable order (the products in file order, each
// as datasets × models × encodings × cls × r in list order). Each run is fully resolved and
// validated as Load would (defaults, the grid's overrides, the run's setting and seeds, the
// environment, the -set overrides), with Name set to its derived name (and -<tag>, the grid's
// tag, if it has one); two runs with the same name are an error. A sweep makes one job per (run, seed): see Jobs.
func (g *Grid) Expand() ([]*Run, error) {
	var runs []*Run
	where := map[string]int{}
	for _, p := range g.Products {
		for _, ds := range p.Datasets {
			for _, m := range p.Models {
				for _, enc := range p.Encodings {
					for _, cls := range p.CLS {
						for _, r := range p.R {
							src := fmt.Sprintf("%s:%d (%s)", g.Path, p.Line, SettingName(ds, m, enc, cls, r))
							cell := newLayer(src)
							cell.vals["dataset.name"] = setting{ds, src}
							cell.vals["model.name"] = setting{m, src}
							cell.vals["dataset.encoding"] = setting{enc, src}
							cell.vals["dataset.cls"] = setting{cls, src}
							cell.vals["dataset.r"] = setting{r, src}
							if g.Seeds != nil {
								cell.vals["train.seeds"] = setting{append([]int64(nil), g.Seeds...), g.seedsSrc}
							}
							run, err := resolve([]*layer{g.overrides, cell}, g.env, g.set)
							if err != nil {
								return nil, fmt.Errorf("grid %s: run %s:\n%w", g.Path, SettingName(ds, m, enc, cls, r), err)
							}
							run.Name = run.RunName()
							if g.Tag != "" {
								run.Name += "-" + g.Tag
							}
							if line, dup := where[run.Name]; dup {
								return nil, fmt.Errorf("%s:%d: run %s is already in the product on line %d", g.Path, p.Line, run.Name, line)
							}
							where[run.Name] = p.Line
							runs = append(runs, run)
						}
					}
				}
			}
		}
	}
	if err := g.checkNotes(runs); err != nil {
		return nil, err
	}
	return runs, nil
}

// parseNotes reads the notes: mapping, run name → footnote text, reporting each bad entry at
// its line.
func parseNotes(vn *yaml.Node, fail func(line int, format string, args ...any)) []Note {
	if vn.Kind != yaml.MappingNode {
		fail(vn.Line, "notes: want a mapping of run name to footnote, got %s", describe(vn))
		return nil
	}
	var out []Note
	for i := 0; i+1 < len(vn.Content); i += 2 {
		kn, tn := deref(vn.Content[i]), deref(vn.Content[i+1])
		if tn.Kind != yaml.ScalarNode || strings.TrimSpace(tn.Value) == "" {
			fail(tn.Line, "notes.%s: want the footnote's text, got %s", kn.Value, describe(tn))
			continue
		}
		if j := slices.IndexFunc(out, func(n Note) bool { return n.Run == kn.Value }); j >= 0 {
			fail(kn.Line, "notes.%s given twice (first on line %d)", kn.Value, out[j].Line)
			continue
		}
		out = append(out, Note{Run: kn.Value, Text: strings.TrimSpace(tn.Value), Line: kn.Line})
	}
	return out
}

// checkNotes refuses a note whose run is not one of runs.
func (g *Grid) checkNotes(runs []*Run) error {
	for _, n := range g.Notes {
		if !slices.ContainsFunc(runs, func(r *Run) bool { return r.Name == n.Run }) {
			return fmt.Errorf("%s:%d: notes.%s: the grid has no such run", g.Path, n.Line, n.Run)
		}
	}
	return nil
}

// validTag says whether s may end a run name: lower-case letters and digits, at least one.
func validTag(s string) bool {
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return s != ""
}

// Job is one (run, seed) pair of a sweep.
type Job struct {
	Run  *Run
	Seed int64
}

// Dir is the job's run directory.
func (j Job) Dir() string { return j.Run.Dir(j.Seed) }

// Jobs lists the (run, seed) pairs of runs, runs in order and each run's seeds in order.
func Jobs(runs []*Run) []Job {
	var out []Job
	for _, r := range runs {
		for _, s := range r.Train.Seeds {
			out = append(out, Job{Run: r, Seed: s})
		}
	}
	return out
}

// LoadGrids reads every grid (*.yaml) of a folder, sorted by file name.
func LoadGrids(dir string, sets []string) ([]*Grid, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("grid: no *.yaml grid files in %s", dir)
	}
	sort.Strings(paths)
	var out []*Grid
	names := map[string]string{}
	for _, p := range paths {
		g, err := LoadGrid(p, sets)
		if err != nil {
			return nil, err
		}
		if other, dup := names[g.Name]; dup {
			return nil, fmt.Errorf("%s: grid name %q is also the name of %s", p, g.Name, other)
		}
		names[g.Name] = p
		out = append(out, g)
	}
	return out, nil
}

// eachKey calls f on each key of the mapping m (lower-cased) and its value, in order, after
// failing a key given twice (prefix starts the message: "extra: "); it returns each key's line.
func eachKey(m *yaml.Node, prefix string, fail func(line int, format string, args ...any), f func(key string, kn, vn *yaml.Node)) map[string]int {
	seen := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		kn, vn := deref(m.Content[i]), deref(m.Content[i+1])
		key := strings.ToLower(kn.Value)
		if first, dup := seen[key]; dup {
			fail(kn.Line, "%skey %q given twice (first on line %d)", prefix, key, first)
			continue
		}
		seen[key] = kn.Line
		f(key, kn, vn)
	}
	return seen
}
