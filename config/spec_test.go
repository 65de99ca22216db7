package config

import (
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

// TestSpecs: every model defaults file gives a spec, every key of the frozen layout is still a
// key, and each model's own keys have a default in its file.
func TestSpecs(t *testing.T) {
	if len(ModelNames) < 3 {
		t.Fatalf("models %v", ModelNames)
	}
	for _, k := range layoutV1 {
		if schemaByKey[k] == nil {
			t.Errorf("%s is in layoutV1 but no longer a key: earlier runs' hashes need it", k)
		}
	}
	for _, n := range ModelNames {
		r, err := Load("", []string{"dataset.name=zinc", "model.name=" + n})
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		for _, k := range Spec(n).Keys {
			if _, ok := r.Model.Own[k.Name]; !ok {
				t.Errorf("%s: own key %s missing from the loaded run", n, k.Name)
			}
		}
	}
}

// TestOwnKeys: another model's key is refused naming its owner unless it is at its zero value
// (as the config.yaml of earlier runs lists it), and the loaded run is the same either way.
func TestOwnKeys(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"dataset: {name: zinc}\nmodel: {eps: 0.5}\n", `x.yaml:2: model.eps: is a gin setting; model.name is gatedgcn (leave it out)`},
		{"dataset: {name: zinc}\nmodel: {name: gin, heads: 2}\n", `model.heads: is a gat or transformer setting; model.name is gin`},
		{"dataset: {name: zinc}\nmodel: {name: gin, eps: -1}\n", `model.eps: want ε ≥ 0, got -1`},
		{"dataset: {name: zinc}\nmodel: {name: gin, epss: 1}\n", `unknown key "model.epss" (did you mean "model.eps"?)`},
		{"dataset: {name: zinc}\nmodel: {name: gin, eps: x}\n", `model.eps: "x" is not a finite number`},
		{"dataset: {name: zinc, encoding: short}\nmodel: {name: transformer, relative: sinusoid, sp_encoder: linear}\n", `model.sp_encoder: must be table with model.relative`},
		{"dataset: {name: zinc, encoding: lp}\nmodel: {name: transformer, relative: sinusoid}\n", `model.relative: needs a pairwise encoding (dataset.encoding short or adj), got lp`},
		{"dataset: {name: zinc}\nmodel: {name: transformer, relative: absolute}\n", `model.relative: unknown variant "absolute" (want learned or sinusoid, or leave it out)`},
	} {
		_, err := Load(writeTemp(t, "x.yaml", tc.file), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %s", tc.file, err, tc.want)
		}
		if err != nil && strings.Count(err.Error(), "model.relative:") > 1 {
			t.Errorf("%q: one problem reported twice: %v", tc.file, err)
		}
	}
	plain := mustLoad(t, writeTemp(t, "a.yaml", "dataset: {name: zinc}\nmodel: {name: gin}\n"))
	listed := mustLoad(t, writeTemp(t, "b.yaml", "dataset: {name: zinc}\nmodel: {name: gin, heads: 0, kernels: 0, norm: \"\", relative: \"\"}\n"))
	if plain.Hash() != listed.Hash() || !reflect.DeepEqual(values(plain), values(listed)) {
		t.Errorf("zero keys of other models changed the run: %v and %v", plain.Model.Own, listed.Model.Own)
	}
	if plain.RunName() != "zinc-gin-none-r1" {
		t.Errorf("run name %s", plain.RunName())
	}
	eps := mustLoad(t, writeTemp(t, "c.yaml", "dataset: {name: zinc}\nmodel: {name: gin, eps: 0.5}\n"))
	if eps.Hash() == plain.Hash() || eps.Model.Float("eps") != 0.5 {
		t.Errorf("model.eps 0.5: hash unchanged or value %v", eps.Model.Own)
	}
	y, err := eps.YAML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("config.yaml", y, nil)
	if err != nil || !reflect.DeepEqual(values(back), values(eps)) || back.Hash() != eps.Hash() {
		t.Errorf("a gin run's YAML does not load back: %v\n%s", err, y)
	}
}

// TestSpecErrors: a malformed spec is reported with its file and key.
func TestSpecErrors(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"keys:\n  k: {type: complex}\n", `type "complex"`},
		{"keys:\n  k: {type: string, min: 1}\n", "min is for numbers"},
		{"keys:\n  k: {type: int, mni: 1}\n", "field mni not found"},
		{"rules:\n  - {key: model.k}\n", "a rule needs key, msg and then or multiple_of"},
	} {
		fsys := fstest.MapFS{"d/model/m.yaml": {Data: []byte(tc.file)}}
		_, err := parseSpecs(fsys, "d")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "configs/d/model/m.yaml") {
			t.Errorf("%q: got %v, want %s", tc.file, err, tc.want)
		}
	}
	two := fstest.MapFS{"d/model/a.yaml": {Data: []byte("keys:\n  k: {type: int}\n")}, "d/model/b.yaml": {Data: []byte("keys:\n  k: {type: bool}\n")}}
	if _, err := parseSpecs(two, "d"); err == nil || !strings.Contains(err.Error(), "one key has one type") {
		t.Errorf("one key, two types: %v", err)
	}
}
