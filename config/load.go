package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/rewiregnn/rewiregnn/configs"
	"github.com/spf13/viper"
)

// Load reads a run config and resolves it, layer over layer (later wins):
//
//  1. built-in defaults: configs/defaults/base.yaml, dataset/<dataset>.yaml,
//     model/<model>.yaml, override/<dataset>-<model>.yaml (and, for neighborsmatch-N,
//     model.layers = N+1);
//  2. the YAML file at path ("" for none: a run built from -set alone);
//  3. environment variables REWIREGNN_<SECTION>_<KEY> (REWIREGNN_TRAIN_BATCH_SIZE=64);
//  4. sets, "key=value" with dotted keys (train.batch_size=64, dataset.cls=true,
//     train.seeds=41,95), later ones winning.
//
// The dataset and model names (which choose the defaults) are read from layers 2–4 first.
// model.readout "auto" is resolved, and the result validated. Every error names the file and
// line, the environment variable or the -set that caused it, and the key.
func Load(path string, sets []string) (*Run, error) {
	var user []*layer
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		l, err := fileLayer(path, data)
		if err != nil {
			return nil, err
		}
		user = append(user, l)
	}
	env, err := envLayer(os.Environ())
	if err != nil {
		return nil, err
	}
	set, err := setLayer(sets)
	if err != nil {
		return nil, err
	}
	return resolve(user, env, set)
}

// Parse is Load for a config held in memory; src names it in errors.
func Parse(src string, data []byte, sets []string) (*Run, error) {
	l, err := fileLayer(src, data)
	if err != nil {
		return nil, err
	}
	env, err := envLayer(os.Environ())
	if err != nil {
		return nil, err
	}
	set, err := setLayer(sets)
	if err != nil {
		return nil, err
	}
	return resolve([]*layer{l}, env, set)
}

// fileLayer reads the keys of a run-config file.
func fileLayer(src string, data []byte) (*layer, error) {
	root, err := parseYAMLDoc(src, data)
	if err != nil {
		return nil, err
	}
	return runLayer(src, root, "")
}

// resolve stacks the defaults chosen by the dataset and model names under the user layers, the
// environment and the -set layer, merges them with viper, and validates the result.
func resolve(user []*layer, env, set *layer) (*Run, error) {
	upper := append(append([]*layer{}, user...), env, set)
	dsName, dsSrc := lookupName(upper, "dataset.name")
	if dsName == "" {
		return nil, fmt.Errorf("dataset.name is not set: give it in the config file or with -set dataset.name=NAME (known: %s)", strings.Join(DatasetNames(), ", "))
	}
	if _, _, ok := datasetFamily(dsName); !ok {
		return nil, fmt.Errorf("%s: dataset.name: unknown dataset %q (known: %s)", dsSrc, dsName, strings.Join(DatasetNames(), ", "))
	}
	modelName, modelSrc := lookupName(upper, "model.name")
	if modelName != "" && !contains(ModelNames, modelName) {
		return nil, fmt.Errorf("%s: model.name: unknown model %q (known: %s)", modelSrc, modelName, strings.Join(ModelNames, ", "))
	}
	defs, err := defaultLayers(dsName, modelName)
	if err != nil {
		return nil, err
	}

	v := viper.New()
	for _, l := range defs {
		for _, k := range sortedKeys(l.vals) {
			v.SetDefault(k, l.vals[k].val)
		}
	}
	for _, l := range user {
		if err := v.MergeConfigMap(l.nested()); err != nil {
			return nil, fmt.Errorf("%s: %w", l.name, err)
		}
	}
	for _, f := range schema {
		if err := v.BindEnv(f.key, EnvName(f.key)); err != nil {
			return nil, fmt.Errorf("config: binding %s: %w", EnvName(f.key), err)
		}
	}
	for _, k := range sortedKeys(set.vals) {
		v.Set(k, set.vals[k].val)
	}
	run := new(Run)
	if err := v.UnmarshalExact(run); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}

	// Where each key's final value came from, and a check that viper merged as documented.
	final := map[string]setting{}
	for _, l := range append(defs, upper...) {
		for k, s := range l.vals {
			final[k] = s
		}
	}
	for _, f := range schema {
		want, ok := final[f.key]
		if !ok {
			return nil, fmt.Errorf("config: key %s has no built-in default", f.key)
		}
		if got := f.get(run); !reflect.DeepEqual(got, want.val) {
			return nil, fmt.Errorf("%s: %s: read as %s, expected %s", want.src, f.key, formatValue(got), formatValue(want.val))
		}
	}

	if run.Model.Readout == ReadoutAuto {
		run.Model.Readout = autoReadout(run.Dataset.Name, run.Dataset.CLS)
		// the resolved value is charged to whatever chose it: the dataset or the CLS setting
		final["model.readout"] = final["dataset.cls"]
	}
	if err := run.Validate(); err != nil {
		return nil, withSources(err, final)
	}
	return run, nil
}

// lookupName finds the last layer that sets a name key.
func lookupName(layers []*layer, key string) (name, src string) {
	for _, l := range layers {
		if s, ok := l.vals[key]; ok {
			name, src = s.val.(string), s.src
		}
	}
	return name, src
}

// withSources prefixes each validation problem with where its key's value came from.
func withSources(err error, final map[string]setting) error {
	var errs []error
	for _, e := range unwrapAll(err) {
		var fe *FieldError
		if errors.As(e, &fe) {
			if s, ok := final[fe.Key]; ok {
				errs = append(errs, fmt.Errorf("%s: %w", s.src, fe))
				continue
			}
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

func unwrapAll(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// defaultLayers returns the built-in layers for a dataset and model ("" for the base default).
func defaultLayers(dataset, model string) ([]*layer, error) {
	all, err := loadDefaults()
	if err != nil {
		return nil, err
	}
	family, depth, _ := datasetFamily(dataset)
	base := all["base.yaml"]
	if base == nil {
		return nil, errors.New("config: built-in defaults: base.yaml missing")
	}
	if model == "" {
		model = base.vals["model.name"].val.(string)
	}
	out := []*layer{base}
	ds := all["dataset/"+family+".yaml"]
	if ds == nil {
		return nil, fmt.Errorf("config: built-in defaults: no dataset/%s.yaml for dataset %q", family, dataset)
	}
	out = append(out, ds)
	md := all["model/"+model+".yaml"]
	if md == nil {
		return nil, fmt.Errorf("config: built-in defaults: no model/%s.yaml for model %q", model, model)
	}
	out = append(out, md)
	if family == "neighborsmatch" {
		l := newLayer("neighborsmatch depth")
		l.vals["model.layers"] = setting{val: depth + 1, src: dataset + " (model.layers = depth+1, REFERENCE §9.12)"}
		out = append(out, l)
	}
	if ov := all["override/"+family+"-"+model+".yaml"]; ov != nil {
		out = append(out, ov)
	}
	return out, nil
}

var (
	defaultsOnce sync.Once
	defaultsMap  map[string]*layer
	defaultsErr  error
)

// loadDefaults parses every embedded defaults file once, keyed by its path under defaults/.
func loadDefaults() (map[string]*layer, error) {
	defaultsOnce.Do(func() {
		defaultsMap, defaultsErr = parseDefaults(configs.Defaults, "defaults")
	})
	return defaultsMap, defaultsErr
}

// parseDefaults reads the defaults tree of fsys under root.
func parseDefaults(fsys fs.FS, root string) (map[string]*layer, error) {
	out := map[string]*layer{}
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if path.Ext(p) != ".yaml" {
			return fmt.Errorf("config: built-in defaults: %s is not a .yaml file", p)
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, root+"/")
		src := "configs/defaults/" + rel
		l, err := fileLayer(src, data)
		if err != nil {
			return err
		}
		for _, k := range []string{"dataset.name", "model.name"} {
			if s, ok := l.vals[k]; ok && rel != "base.yaml" {
				return fmt.Errorf("%s: %s belongs to the config file, not to a defaults layer", s.src, k)
			}
		}
		out[rel] = l
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// datasetFamily maps a dataset name to its defaults file name (neighborsmatch-N →
// neighborsmatch, with depth N).
func datasetFamily(name string) (family string, depth int, ok bool) {
	if rest, found := strings.CutPrefix(name, "neighborsmatch-"); found {
		n, err := strconv.Atoi(rest)
		if err != nil || n < 1 || n > NeighborsMatchMaxDepth || strconv.Itoa(n) != rest {
			return "", 0, false
		}
		return "neighborsmatch", n, true
	}
	if _, ok := datasetLevels[name]; ok {
		return name, 0, true
	}
	return "", 0, false
}

// DatasetNames lists the dataset names a config may give, NeighborsMatch as every depth.
func DatasetNames() []string {
	var out []string
	for n := range datasetLevels {
		out = append(out, n)
	}
	for d := 1; d <= NeighborsMatchMaxDepth; d++ {
		out = append(out, "neighborsmatch-"+strconv.Itoa(d))
	}
	sort.Strings(out)
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
