package config

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// structKeys walks a resolved Run by reflection, independently of the schema: every exported
// field by its mapstructure tag (sections as "section.key"), and the model's own keys from
// Model.Own (the ",remain" field) as "model.<name>".
func structKeys(r *Run) []string {
	var out []string
	var walk func(prefix string, v reflect.Value)
	walk = func(prefix string, v reflect.Value) {
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("mapstructure")
			if tag == ",remain" {
				for k := range v.Field(i).Interface().(map[string]any) {
					out = append(out, prefix+k)
				}
				continue
			}
			if f.Type.Kind() == reflect.Struct && f.Type.String() != "time.Duration" {
				walk(prefix+tag+".", v.Field(i))
				continue
			}
			out = append(out, prefix+tag)
		}
	}
	walk("", reflect.ValueOf(r).Elem())
	sort.Strings(out)
	return out
}

// yamlKeys are the leaf keys of a YAML document, as "section.key".
func yamlKeys(t *testing.T, doc []byte) map[string]bool {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			for sk := range sub {
				out[k+"."+sk] = true
			}
			continue
		}
		out[k] = true
	}
	return out
}

// TestYAMLHoldsEveryKey: the config.yaml of a run holds every key of its resolved config, those
// at their default included (dataset.rw_steps 16, train.precision fp32), for every model and
// for the rwse encoding; the gpu section's keys only away from their default.
func TestYAMLHoldsEveryKey(t *testing.T) {
	var cases [][]string
	for _, m := range ModelNames {
		cases = append(cases, []string{"model.name=" + m})
	}
	cases = append(cases, []string{"dataset.encoding=rwse"}, []string{"dataset.rw_steps=8"}, []string{"train.precision=tf32"})
	file := writeTemp(t, "c.yaml", zincFile)
	for _, sets := range cases {
		r := mustLoad(t, file, sets...)
		y, err := r.YAML()
		if err != nil {
			t.Fatal(err)
		}
		got := yamlKeys(t, y)
		keys := structKeys(r)
		if len(keys) < 35 {
			t.Fatalf("%v: the walk found %d keys", sets, len(keys))
		}
		var missing []string
		for _, k := range keys {
			if _, gpu := gpuKeyDefaults[k]; gpu {
				continue // written only away from the default: TestYAMLWritesGPUKeysAwayFromDefault
			}
			if !got[k] {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			t.Errorf("%v: config.yaml lacks %s:\n%s", sets, strings.Join(missing, ", "), y)
		}
	}
}

// TestRunNameTellsRWStepsApart: two configs that differ only in dataset.rw_steps get different
// run names, the default's the name it had before the key existed; every key left out of the
// hash at its default is one RunName names when it is not.
func TestRunNameTellsRWStepsApart(t *testing.T) {
	file := writeTemp(t, "c.yaml", "dataset:\n  name: peptides-func\n  encoding: rwse\n  r: 1\n")
	seen := map[string]int{}
	for _, k := range []int{16, 8, 32, 1} {
		r := mustLoad(t, file, "dataset.rw_steps="+itoa(k))
		if prev, dup := seen[r.RunName()]; dup {
			t.Errorf("rw_steps %d and %d share the run name %s", prev, k, r.RunName())
		}
		seen[r.RunName()] = k
	}
	if _, ok := seen["peptides-func-gatedgcn-rwse-r1"]; !ok {
		t.Errorf("the default's run name changed: %v", seen)
	}
	named := map[string]bool{}
	for _, s := range nameSuffixes {
		named[s.key] = true
	}
	for k := range leftOutAtDefault {
		if !named[k] {
			t.Errorf("%s is left out of the hash at its default but not named by RunName otherwise", k)
		}
	}
}
