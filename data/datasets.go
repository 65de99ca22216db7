package data

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Dataset is one dataset of the registry (RegisterDataset): the facts the config's validation,
// the loaders and the trainer all read from here.
type Dataset struct {
	Name   string   // its dataset.name, or a family's prefix (Depths)
	Depths int      // > 0: a family of datasets Name-1 … Name-Depths (neighborsmatch-3)
	Task   Task     // what it predicts, which decides a model's readout and loss
	Splits []string // its splits; without "val", training carves one (dataset.val_fraction)
	Files  bool     // read from the data folder rather than generated from its recipe
	// A dataset registered beside the built-ins (whose loaders are data's own) brings its
	// description (name: with its depth) and the loader of one split (limit: the first graphs
	// only, 0 for all).
	Open func(dir, name string) (*Spec, error)
	Load func(dir string, spec *Spec, split string, seed uint64, limit int) ([]*Graph, error)
	// Defaults are its config defaults, as a YAML document of run-config keys (dataset:,
	// train:, ...), for a dataset registered beside the built-ins, whose defaults are the files
	// configs/defaults/dataset/<name>.yaml; "" for none beyond the base defaults.
	Defaults string
}

// datasets is the registry.
var datasets = []Dataset{
	{Name: "zinc", Task: GraphRegression, Splits: trainValTest, Files: true},
	{Name: "aqsol", Task: GraphRegression, Splits: trainValTest, Files: true},
	{Name: "mnist", Task: GraphClass, Splits: trainValTest, Files: true},
	{Name: "cifar10", Task: GraphClass, Splits: trainValTest, Files: true},
	{Name: "peptides-func", Task: GraphMultiLabel, Splits: trainValTest, Files: true},   // LRGB: 10 binary labels per graph
	{Name: "peptides-struct", Task: GraphRegression, Splits: trainValTest, Files: true}, // LRGB: 11 regression targets per graph
	{Name: "cluster", Task: NodeClass, Splits: trainValTest},
	{Name: "pattern", Task: NodeClass, Splits: trainValTest},
	{Name: "pattern-v1", Task: NodeClass, Splits: trainValTest},
	{Name: "neighborsmatch", Depths: NeighborsMatchMaxDepth, Task: RootClass, Splits: []string{"train", "test"}},
	{Name: "erdosrenyi", Task: GraphClass, Splits: []string{"train"}},
}

var trainValTest = []string{"train", "val", "test"}

// RegisterDataset adds d to the registry (a test's dummy dataset, or a new one with its own
// loader), from an init function: the registry is not locked. It panics on an empty or taken
// name, or without Open and Load: programming errors.
func RegisterDataset(d Dataset) {
	if d.Name == "" || slices.ContainsFunc(datasets, func(o Dataset) bool { return o.Name == d.Name }) || d.Open == nil || d.Load == nil {
		panic(fmt.Sprintf("data.RegisterDataset: %q: empty or taken name, or no Open and Load", d.Name))
	}
	datasets = append(datasets, d)
}

// LookupDataset returns the registry's dataset of that name (as a config gives it, in lower
// case) and, for a family, the depth the name gives (neighborsmatch-3: 3); ok is false for a
// name the registry lacks or a depth outside the family's.
func LookupDataset(name string) (d Dataset, depth int, ok bool) {
	for _, d := range datasets {
		if d.Depths == 0 && d.Name == name {
			return d, 0, true
		}
		if rest, found := strings.CutPrefix(name, d.Name+"-"); found && d.Depths > 0 {
			n, err := strconv.Atoi(rest)
			if err != nil || n < 1 || n > d.Depths || strconv.Itoa(n) != rest {
				return Dataset{}, 0, false
			}
			return d, n, true
		}
	}
	return Dataset{}, 0, false
}

// DatasetNames lists every name a config may give, a family as each of its depths, sorted.
func DatasetNames() []string {
	var out []string
	for _, d := range datasets {
		if d.Depths == 0 {
			out = append(out, d.Name)
		}
		for n := 1; n <= d.Depths; n++ {
			out = append(out, d.Name+"-"+strconv.Itoa(n))
		}
	}
	sort.Strings(out)
	return out
}

// Names lists the datasets LoadSplit knows, a family once as "<name>-1..<depths>"
// (neighborsmatch-1..9), sorted.
func Names() []string {
	var ns []string
	for _, d := range datasets {
		if d.Depths > 0 {
			ns = append(ns, fmt.Sprintf("%s-1..%d", d.Name, d.Depths))
		} else {
			ns = append(ns, d.Name)
		}
	}
	sort.Strings(ns)
	return ns
}

// WithoutSplit lists the registry's datasets that lack the split, a family as "<name>-N"
// (neighborsmatch-N), in registry order.
func WithoutSplit(split string) []string {
	var out []string
	for _, d := range datasets {
		switch {
		case slices.Contains(d.Splits, split):
		case d.Depths > 0:
			out = append(out, d.Name+"-N")
		default:
			out = append(out, d.Name)
		}
	}
	return out
}

// NeedsFiles reports whether a dataset is read from the data folder (the molecules, the image
// datasets and the LRGB peptides) rather than generated from its recipe.
func NeedsFiles(name string) bool {
	d, _, ok := LookupDataset(strings.ToLower(name))
	return ok && d.Files
}

// withFacts is spec with the registry's task and splits of its dataset.
func withFacts(spec *Spec, err error) (*Spec, error) {
	if err != nil || spec == nil {
		return spec, err
	}
	d, _, ok := LookupDataset(spec.Name)
	if !ok {
		return nil, fmt.Errorf("dataset %q: not in the registry", spec.Name)
	}
	spec.Task, spec.Splits = d.Task, slices.Clone(d.Splits)
	return spec, nil
}
