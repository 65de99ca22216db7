// Package results collects finished run directories (<out>/<run name>/seed<seed>/, read and
// verified with package runfiles) and aggregates them over seeds into the cells of a paper
// table: mean ± population standard deviation (ddof = 0).
package results

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

// Run is one finished run directory.
type Run struct {
	Dir    string
	Result *runfiles.Result
}

// Epochs reads the run's metrics.jsonl; a missing file gives no epochs and no error.
func (r *Run) Epochs() ([]runfiles.Epoch, error) {
	e, err := runfiles.ReadMetrics(filepath.Join(r.Dir, runfiles.MetricsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return e, err
}

// Scan finds every result.json under root (hidden folders skipped) and reads it. A result.json
// that cannot be read or does not verify is not fatal to the others: it comes back in bad, with
// its folder and the error as the reason, for the caller to list (a table must not silently lose
// a seed). err is for a root that cannot be walked.
func Scan(root string) (runs []*Run, bad []LeftOut, err error) {
	if _, err := os.Stat(root); err != nil {
		return nil, nil, err
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != runfiles.ResultFile {
			return nil
		}
		res, err := runfiles.ReadResult(path)
		if err != nil {
			bad = append(bad, LeftOut{Dir: filepath.Dir(path), Reason: "unreadable result: " + err.Error()})
			return nil
		}
		runs = append(runs, &Run{Dir: filepath.Dir(path), Result: res})
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].Dir < runs[j].Dir })
	return runs, bad, nil
}

// paperModels maps the model registry's names (models/models.go) to the paper's short model
// labels, for the models whose label differs: the paper writes gcn for GatedGCN, mon for MoNet
// and trans for the Transformer; Kipf and Welling's GCN, which the paper did not train and the
// registry calls gcn, is kgcn here so that its runs never land in GatedGCN's columns.
var paperModels = map[string]string{"gatedgcn": "gcn", "gcn": "kgcn", "monet": "mon", "transformer": "trans"}

// registryModels is paperModels inverted: the registry's name of each paper label.
var registryModels = func() map[string]string {
	m := map[string]string{}
	for reg, pap := range paperModels {
		m[pap] = reg
	}
	return m
}()

// ModelKey is the paper's short model label of a registry model name (paperModels); a model
// the paper has no label for keeps its name. A paper label (mon, trans) is returned as it is.
func ModelKey(model string) string {
	m := strings.ToLower(model)
	if k, ok := paperModels[m]; ok {
		return k
	}
	return m
}

// RegistryModel is the registry's name of a paper label (gcn → gatedgcn, kgcn → gcn, mon →
// monet, trans → transformer); any other label is a registry name already.
func RegistryModel(key string) string {
	if m, ok := registryModels[key]; ok {
		return m
	}
	return key
}

// Setting is the paper's column key of a run: model-encoding[-cls], e.g. gcn-adj-cls, with the
// paper's model label (ModelKey). Tables that reproduce the paper's are keyed and labelled by it.
func Setting(model, encoding string, cls bool) string {
	s := ModelKey(model) + "-" + encoding
	if cls {
		s += "-cls"
	}
	return s
}

// RegistrySetting is a column key (Setting) with the model registry's name in place of the
// paper's label: gcn-adj-cls → gatedgcn-adj-cls, kgcn-adj → gcn-adj. Everything that does not
// reproduce a table of the paper (our own tables, figures, the statistics) is labelled by it.
func RegistrySetting(setting string) string {
	model, rest, ok := strings.Cut(setting, "-")
	if !ok {
		return RegistryModel(setting)
	}
	return RegistryModel(model) + "-" + rest
}

// Key identifies a table cell: the runs of one configuration over seeds.
type Key struct {
	Table    string `json:"table"` // table id, e.g. table:zinc
	Dataset  string `json:"dataset"`
	Model    string `json:"model"` // as in the result (gatedgcn, …)
	Encoding string `json:"encoding"`
	CLS      bool   `json:"cls"`
	R        int    `json:"r"`
}

// Setting is the key's column name.
func (k Key) Setting() string { return Setting(k.Model, k.Encoding, k.CLS) }

// Stat is a mean and population standard deviation.
type Stat struct {
	Mean float64 `json:"mean"`
	Std  float64 `json:"std"`
	N    int     `json:"n"`
}

// Text is the statistic as the tables and the docs write it: the mean, sep and the population
// standard deviation (3 decimals each); the mean alone for one value, whose spread is not known.
func (s Stat) Text(sep string) string {
	f3 := func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
	if s.N == 1 {
		return f3(s.Mean)
	}
	return f3(s.Mean) + sep + f3(s.Std)
}

// MeanStd returns the mean and the population standard deviation (ddof = 0) of xs.
func MeanStd(xs []float64) Stat {
	if len(xs) == 0 {
		return Stat{Mean: math.NaN(), Std: math.NaN()}
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	m := s / float64(len(xs))
	var v float64
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return Stat{Mean: m, Std: math.Sqrt(v / float64(len(xs))), N: len(xs)}
}

// Group is one aggregated cell.
type Group struct {
	Key
	Name    string  `json:"name"`   // run name (from the results)
	Metric  string  `json:"metric"` // mae | accuracy | weighted_accuracy
	Seeds   []int64 `json:"seeds"`  // sorted
	Planned int     `json:"planned"`
	Runs    []*Run  `json:"-"`

	Test            Stat           `json:"test"`
	Val             Stat           `json:"val"`
	Train           Stat           `json:"train"`
	SecondsPerEpoch Stat           `json:"seconds_per_epoch"`
	Epochs          Stat           `json:"epochs"`
	Hours           Stat           `json:"hours"`
	Params          int            `json:"params"`
	Devices         []string       `json:"devices"`
	StoppedBy       map[string]int `json:"stopped_by"`
	// Reduced counts the runs of a reduced or unknown budget (runfiles.Result.Provenance not
	// Protocol; only there when Select included them); Budgets are their distinct notes
	// (runfiles.Result.BudgetNote).
	Reduced int      `json:"reduced"`
	Budgets []string `json:"budgets,omitempty"`
	// DataSource is the runs' runfiles.Result.DataSource ("pyg" for the public distribution).
	DataSource string `json:"data_source,omitempty"`
}

// Capped is the number of runs stopped by the wall-clock cap.
func (g *Group) Capped() int { return g.StoppedBy[runfiles.StopMaxTime] }

// Short reports whether fewer seeds finished than were planned.
func (g *Group) Short() bool { return len(g.Seeds) < g.Planned }

// Options of Aggregate.
type Options struct {
	// TableOf names the table a run belongs to; nil uses "table:<dataset>".
	TableOf func(*Run) string
	// Planned is the number of seeds planned for a key (e.g. from the grid); nil uses
	// DefaultPlanned.
	Planned func(Key) int
	// DefaultPlanned is used without Planned, 4 (the paper's seeds) when 0.
	DefaultPlanned int
}

// Aggregate groups runs by Key and computes each group's statistics. Two runs of one key with
// the same seed (two copies of a run) are an error naming both folders. Groups come sorted by
// table, setting and r.
func Aggregate(runs []*Run, opt Options) ([]*Group, error) {
	if opt.DefaultPlanned == 0 {
		opt.DefaultPlanned = 4
	}
	byKey := map[Key]*Group{}
	seedDir := map[Key]map[int64]string{}
	for _, r := range runs {
		res := r.Result
		k := Key{Dataset: res.Dataset, Model: res.Model, Encoding: res.Encoding, CLS: res.CLS, R: res.R}
		if opt.TableOf != nil {
			k.Table = opt.TableOf(r)
		} else {
			k.Table = "table:" + res.Dataset
		}
		g := byKey[k]
		if g == nil {
			g = &Group{Key: k, Name: res.Name, Metric: res.Metric, StoppedBy: map[string]int{}, DataSource: res.DataSource}
			byKey[k] = g
			seedDir[k] = map[int64]string{}
		}
		if g.Metric != res.Metric {
			return nil, fmt.Errorf("%s: metric %q, but %s has %q for the same setting", r.Dir, res.Metric, g.Runs[0].Dir, g.Metric)
		}
		if src := g.Runs; len(src) > 0 && src[0].Result.DataSource != res.DataSource {
			return nil, fmt.Errorf("%s read %s, but %s read %s for the same setting: keep runs on the public distribution and on substitute data in separate folders",
				r.Dir, sourceName(res.DataSource), src[0].Dir, sourceName(src[0].Result.DataSource))
		}
		if d, dup := seedDir[k][res.Seed]; dup {
			return nil, fmt.Errorf("seed %d of %s r=%d (%s) appears twice: %s and %s", res.Seed, k.Setting(), k.R, k.Dataset, d, r.Dir)
		}
		seedDir[k][res.Seed] = r.Dir
		g.Runs = append(g.Runs, r)
	}
	var out []*Group
	for k, g := range byKey {
		sort.Slice(g.Runs, func(i, j int) bool { return g.Runs[i].Result.Seed < g.Runs[j].Result.Seed })
		var test, val, tr, spe, ep, hrs []float64
		devs := map[string]bool{}
		for _, r := range g.Runs {
			res := r.Result
			g.Seeds = append(g.Seeds, res.Seed)
			test = append(test, res.TestMetric)
			if res.ValSplit != "none" {
				val = append(val, res.ValMetric)
			}
			tr = append(tr, res.TrainMetric)
			spe = append(spe, res.SecondsPerEpoch)
			ep = append(ep, float64(res.Epochs))
			hrs = append(hrs, res.TotalSeconds/3600)
			g.StoppedBy[res.StoppedBy]++
			if res.Params > g.Params {
				g.Params = res.Params
			}
			devs[DeviceLabel(res.Device)] = true
			if res.Provenance() != runfiles.Protocol {
				g.Reduced++
				if note := res.BudgetNote(); !slices.Contains(g.Budgets, note) {
					g.Budgets = append(g.Budgets, note)
				}
			}
		}
		for d := range devs {
			g.Devices = append(g.Devices, d)
		}
		sort.Strings(g.Devices)
		g.Test, g.Val, g.Train = MeanStd(test), MeanStd(val), MeanStd(tr)
		if len(val) == 0 {
			g.Val = Stat{} // no run had a validation split: N 0, and tables show "–"
		}
		g.SecondsPerEpoch, g.Epochs, g.Hours = MeanStd(spe), MeanStd(ep), MeanStd(hrs)
		g.Planned = opt.DefaultPlanned
		if opt.Planned != nil {
			g.Planned = opt.Planned(k)
		}
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Key, out[j].Key
		if a.Table != b.Table {
			return a.Table < b.Table
		}
		if a.Setting() != b.Setting() {
			return a.Setting() < b.Setting()
		}
		return a.R < b.R
	})
	return out, nil
}

// sourceName describes a result's DataSource.
func sourceName(s string) string {
	if s == "" {
		return "the data folder's own files (or generated data)"
	}
	return "the public distribution (" + s + ")"
}

// deviceNoise matches the parts of a recorded device description that vary from run to run on
// one machine: the kernel cache's counts and NVRTC's file path.
var deviceNoise = regexp.MustCompile(`; \d+ files from cache, \d+ compiled| \([^()]*libnvrtc[^()]*\)`)

// DeviceLabel is a run's device as the tables group it: the recorded description without the
// parts that differ between runs on the same machine.
func DeviceLabel(device string) string { return deviceNoise.ReplaceAllString(device, "") }
