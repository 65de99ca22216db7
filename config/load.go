package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"

	"github.com/rewiregnn/rewiregnn/configs"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
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
// Each layer is read and checked on its own (unknown keys, types and values, each error naming
// the file and line, the environment variable or the -set, and the key); viper then merges the
// layers, each one config map, and unmarshals the result. The dataset and model names (which
// choose the defaults) are read from layers 2–4 first. model.readout "auto" is resolved, and the
// result validated; a validation error names the key and where its value came from.
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

// resolve stacks the built-in defaults chosen by the dataset and model names under the user
// layers, the environment and the -set layer, has viper merge them (see merge), resolves
// model.readout "auto" and validates the result.
func resolve(user []*layer, env, set *layer) (*Run, error) {
	upper := stack(append(append([]*layer{}, user...), env, set))
	// the names choose the default layers, so they are read before the merge
	ds, _ := upper.top("dataset.name")
	dsName, _ := ds.val.(string)
	if dsName == "" {
		return nil, fmt.Errorf("dataset.name is not set: give it in the config file or with -set dataset.name=NAME (known: %s)", strings.Join(data.DatasetNames(), ", "))
	}
	if _, _, ok := datasetFamily(dsName); !ok {
		return nil, fmt.Errorf("%s: dataset.name: unknown dataset %q (known: %s)", ds.src, dsName, strings.Join(data.DatasetNames(), ", "))
	}
	model, _ := upper.top("model.name")
	modelName, _ := model.val.(string)
	if modelName != "" && !contains(ModelNames, modelName) {
		return nil, fmt.Errorf("%s: model.name: unknown model %q (known: %s)", model.src, modelName, strings.Join(ModelNames, ", "))
	}
	defs, err := defaultLayers(dsName, modelName)
	if err != nil {
		return nil, err
	}
	layers := append(stack(defs), upper...)
	run, err := layers.merge()
	if err != nil {
		return nil, err
	}
	run.prov = budgetProvenance(stack(defs), append(append(stack{}, defs...), user...))
	run.Model.dropForeignZeros()
	chargedTo := map[string]string{}
	if run.Model.Readout == ReadoutAuto {
		run.Model.Readout = autoReadout(run.Dataset.Name, run.Dataset.CLS)
		// the resolved value is charged to whatever chose it: the dataset or the CLS setting
		chargedTo["model.readout"] = "dataset.cls"
	}
	if err := run.Validate(); err != nil {
		return nil, layers.withSources(err, chargedTo)
	}
	run.GPU.canonical()
	return run, nil
}

// stack is the layers of one run, lowest first: each later layer overrides the keys it sets.
type stack []*layer

// merge is the one merge of the layers: viper merges their config maps in order (later wins)
// and unmarshals the result into a Run, rejecting any key the Run lacks. The values are already
// typed by the pass that read each layer (and checked there, with their file and line), so
// viper's decoding only copies them.
func (s stack) merge() (*Run, error) {
	v := viper.New()
	for _, l := range s {
		if err := v.MergeConfigMap(l.nested()); err != nil {
			return nil, fmt.Errorf("%s: %w", l.name, err)
		}
	}
	run := new(Run)
	if err := v.UnmarshalExact(run); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return run, nil
}

// top is the value of key in the topmost layer that sets it, and where it comes from.
func (s stack) top(key string) (setting, bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if st, ok := s[i].vals[key]; ok {
			return st, true
		}
	}
	return setting{}, false
}

// withSources prefixes each validation problem with where its key's value came from, or, for a
// key in chargedTo, where the key that decided its value came from.
func (s stack) withSources(err error, chargedTo map[string]string) error {
	var errs []error
	for _, e := range unwrapAll(err) {
		var fe *FieldError
		if errors.As(e, &fe) {
			key := fe.Key
			if k, ok := chargedTo[key]; ok {
				key = k
			}
			if st, ok := s.top(key); ok {
				errs = append(errs, fmt.Errorf("%s: %w", st.src, fe))
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
		if ds, err = registeredDefaults(family); err != nil {
			return nil, err
		}
	}
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
		l.vals["model.layers"] = setting{val: depth + 1, src: dataset + " (model.layers = depth+1, docs/protocol.md §\"GatedGCN configuration\")"}
		out = append(out, l)
	}
	if ov := all["override/"+family+"-"+model+".yaml"]; ov != nil {
		out = append(out, ov)
	}
	return out, nil
}

// registeredDefaults is the defaults layer a dataset registered beside the built-ins brings
// (data.Dataset.Defaults); nil for a dataset without them, or not registered.
func registeredDefaults(name string) (*layer, error) {
	d, _, ok := data.LookupDataset(name)
	if !ok || d.Defaults == "" {
		return nil, nil
	}
	src := "data.RegisterDataset(" + name + ").Defaults"
	doc, err := parseYAMLDoc(src, []byte(d.Defaults))
	if err != nil {
		return nil, err
	}
	return runLayer(src, doc, "")
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
		doc, err := parseYAMLDoc(src, data)
		if err != nil {
			return err
		}
		model, isModel := strings.CutPrefix(strings.TrimSuffix(rel, ".yaml"), "model/")
		if isModel && doc != nil { // its keys: and rules: sections are the model's spec (spec.go)
			var kept []*yaml.Node
			for i := 0; i+1 < len(doc.Content); i += 2 {
				if !specSections[doc.Content[i].Value] {
					kept = append(kept, doc.Content[i], doc.Content[i+1])
				}
			}
			doc.Content = kept
		}
		l, err := runLayer(src, doc, "")
		if err != nil {
			return err
		}
		if isModel && specs[model] != nil {
			for _, k := range specs[model].Keys {
				if _, ok := l.vals["model."+k.Name]; !ok {
					return fmt.Errorf("%s: the model's own key model.%s has no default (give it under model:)", src, k.Name)
				}
			}
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
	// base.yaml gives every shared key but dataset.name, and each model's file its own keys
	// (checked above), so no key of a run is left at its zero value because no layer gave it;
	// base.yaml gives no model's own key (each model has its own default)
	if base := out["base.yaml"]; base != nil {
		for _, f := range schema {
			_, ok := base.vals[f.key]
			switch {
			case f.own == "" && !ok && f.key != "dataset.name":
				return nil, fmt.Errorf("config: key %s has no built-in default", f.key)
			case f.own != "" && ok:
				return nil, fmt.Errorf("configs/defaults/base.yaml: %s is a %s setting: its default belongs in model/<name>.yaml", f.key, owners(f.own))
			}
		}
	}
	return out, nil
}

// datasetFamily maps a dataset name to its defaults file name, the name of its entry in data's
// registry (neighborsmatch-N → neighborsmatch, with depth N).
func datasetFamily(name string) (family string, depth int, ok bool) {
	d, depth, ok := data.LookupDataset(name)
	return d.Name, depth, ok
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// dropForeignZeros removes from Own the keys of other models given at their zero value (the
// config.yaml of earlier runs lists every model's keys), so that a run is the same whichever
// way it was written; Own is nil when the model has no own keys.
func (m *Model) dropForeignZeros() {
	s := specs[m.Name]
	for k, v := range m.Own {
		if (s == nil || s.Key(k) == nil) && isZero(v) {
			delete(m.Own, k)
		}
	}
	if len(m.Own) == 0 {
		m.Own = nil
	}
}
