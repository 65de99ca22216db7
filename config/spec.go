package config

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rewiregnn/rewiregnn/configs"
)

// ModelSpec is what config knows of one model: its name and its own keys (those under model.
// that only it reads), with their types and checks, and the rules that tie its keys to the rest
// of the run. It is read from the model's defaults file, configs/defaults/model/<name>.yaml:
// the file's model: section gives the defaults (of the shared keys it changes and of every own
// key), its keys: section the own keys and its rules: section the rules. Specs are data, so
// the result side (cmd/sweep) checks a run's model keys without linking any network; package
// models pairs each spec with the network builder of the same name (docs/design.md
// §"Adding a model").
type ModelSpec struct {
	Name  string
	Keys  []*KeySpec // the model's own keys, by name
	Rules []*Rule
}

// KeySpec is one of a model's own keys: model.<Name>.
type KeySpec struct {
	Name  string   `yaml:"-"`
	Type  string   `yaml:"type"`   // int | float | bool | string
	Min   *float64 `yaml:"min"`    // numbers: the smallest value allowed
	OneOf []string `yaml:"one_of"` // strings: the values allowed ("" among them: may be left out)
	What  string   `yaml:"what"`   // what a value is, for one_of's message ("norm": unknown norm "x")
	Msg   string   `yaml:"msg"`    // min's message, with {key} placeholders (see Rule.Msg)
	// InName appends "+<value>" to the model's name in run names and setting files when the
	// key is set (transformer+learned).
	InName bool   `yaml:"in_name"`
	Doc    string `yaml:"doc"` // one line: what the key does
	kind   kind
}

// Rule ties keys together: when every key of If has one of its values, every key of Then must
// have one of its values (and Key, when MultipleOf is given, must be a multiple of that key's
// value); otherwise Msg is reported as an error of Key. Values are compared as a config file
// writes them (true, 6, adj). Msg may name keys in braces, {dataset.encoding}, replaced by their
// values. Only the first broken rule of a key is reported, and a rule that reads a key already
// reported is skipped.
type Rule struct {
	Key        string              `yaml:"key"`
	If         map[string][]string `yaml:"if"`
	Then       map[string][]string `yaml:"then"`
	MultipleOf string              `yaml:"multiple_of"`
	Msg        string              `yaml:"msg"`
}

var (
	// specs are the models' specs, from the embedded defaults, by name.
	specs = mustParseSpecs(configs.Defaults, "defaults")
	// ModelNames are the models a config may name, sorted: one per model defaults file.
	ModelNames = func() []string {
		out := make([]string, 0, len(specs))
		for n := range specs {
			out = append(out, n)
		}
		sort.Strings(out)
		return out
	}()
)

// Spec returns the spec of the model called name, or nil.
func Spec(name string) *ModelSpec { return specs[name] }

// Key returns the model's own key called name (without "model."), or nil.
func (s *ModelSpec) Key(name string) *KeySpec {
	for _, k := range s.Keys {
		if k.Name == name {
			return k
		}
	}
	return nil
}

// specSections are the top-level sections of a model defaults file that hold its spec rather
// than run-config keys.
var specSections = map[string]bool{"keys": true, "rules": true}

func mustParseSpecs(fsys fs.FS, root string) map[string]*ModelSpec {
	out, err := parseSpecs(fsys, root)
	if err != nil {
		panic(err) // the built-in defaults are part of the program: TestSpecs reports it
	}
	return out
}

// parseSpecs reads the spec of every model/<name>.yaml under root.
func parseSpecs(fsys fs.FS, root string) (map[string]*ModelSpec, error) {
	files, err := fs.Glob(fsys, root+"/model/*.yaml")
	if err != nil {
		return nil, err
	}
	out := map[string]*ModelSpec{}
	types := map[string]*KeySpec{} // the first spec's declaration of each key name
	for _, p := range files {
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(path.Base(p), ".yaml")
		s, err := parseSpec(name, "configs/"+p, data)
		if err != nil {
			return nil, err
		}
		for _, k := range s.Keys {
			if first, ok := types[k.Name]; ok && first.Type != k.Type {
				return nil, fmt.Errorf("configs/%s: keys: %s is a %s here and a %s in another model: one key has one type", p, k.Name, k.Type, first.Type)
			}
			types[k.Name] = k
		}
		out[name] = s
	}
	return out, nil
}

// specFile is the spec part of a model defaults file.
type specFile struct {
	Keys  yaml.Node `yaml:"keys"`
	Rules []*Rule   `yaml:"rules"`
}

var kindOfType = map[string]kind{"int": kindInt, "float": kindFloat, "bool": kindBool, "string": kindString}

func parseSpec(name, src string, data []byte) (*ModelSpec, error) {
	root, err := parseYAMLDoc(src, data)
	if err != nil {
		return nil, err
	}
	s := &ModelSpec{Name: name}
	if root == nil {
		return s, nil
	}
	var f specFile
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if !specSections[k.Value] {
			continue
		}
		b, err := yaml.Marshal(&yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{k, v}})
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", src, k.Line, err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&f); err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %w", src, k.Line, k.Value, err)
		}
	}
	if f.Keys.Kind != 0 && f.Keys.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: keys: want a mapping of key names", src, f.Keys.Line)
	}
	for i := 0; i+1 < len(f.Keys.Content); i += 2 {
		kn, vn := f.Keys.Content[i], f.Keys.Content[i+1]
		ks := &KeySpec{}
		b, _ := yaml.Marshal(vn)
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(ks); err != nil {
			return nil, fmt.Errorf("%s:%d: keys: %s: %w", src, kn.Line, kn.Value, err)
		}
		ks.Name = kn.Value
		k, ok := kindOfType[ks.Type]
		if !ok {
			return nil, fmt.Errorf("%s:%d: keys: %s: type %q, want int, float, bool or string", src, kn.Line, ks.Name, ks.Type)
		}
		ks.kind = k
		if ks.Min != nil && k != kindInt && k != kindFloat {
			return nil, fmt.Errorf("%s:%d: keys: %s: min is for numbers, the key is a %s", src, kn.Line, ks.Name, ks.Type)
		}
		if ks.OneOf != nil && k != kindString {
			return nil, fmt.Errorf("%s:%d: keys: %s: one_of is for strings, the key is a %s", src, kn.Line, ks.Name, ks.Type)
		}
		if ks.Name == "" || strings.ContainsAny(ks.Name, ". ") {
			return nil, fmt.Errorf("%s:%d: keys: %q is not a key name (a word under model.)", src, kn.Line, ks.Name)
		}
		s.Keys = append(s.Keys, ks)
	}
	for i, r := range f.Rules {
		if r.Key == "" || r.Msg == "" || (len(r.Then) == 0 && r.MultipleOf == "") {
			return nil, fmt.Errorf("%s: rules[%d]: a rule needs key, msg and then or multiple_of", src, i)
		}
	}
	s.Rules = f.Rules
	return s, nil
}

// ownKeys are every model's own keys as config fields (model.<name>), in the order the models
// (sorted) declare them; one field per name, whichever models declare it.
func ownKeys() []*field {
	var out []*field
	seen := map[string]bool{}
	for _, n := range ModelNames {
		for _, k := range specs[n].Keys {
			if seen[k.Name] {
				continue
			}
			seen[k.Name] = true
			out = append(out, &field{key: "model." + k.Name, kind: k.kind, own: k.Name})
		}
	}
	return out
}

// owners names the models that have the own key name, as "transformer" or "monet or gin".
func owners(name string) string {
	var out []string
	for _, n := range ModelNames {
		if specs[n].Key(name) != nil {
			out = append(out, n)
		}
	}
	return orList(out)
}

// validateModel checks the model section against the model's spec: another model's key may not
// be set (away from its zero value), so that no setting is silently ignored; the model's own
// keys must pass their checks and the rules must hold.
func (r *Run) validateModel(bad func(key, format string, args ...any)) {
	m := &r.Model
	s := specs[m.Name]
	failed := map[string]bool{}
	fail := func(key, format string, args ...any) {
		failed[key] = true
		bad(key, format, args...)
	}
	for _, k := range sortedKeys(m.Own) {
		if s.Key(k) == nil && !isZero(m.Own[k]) {
			fail("model."+k, "is a %s setting; model.name is %s (leave it out)", owners(k), m.Name)
		}
	}
	for _, k := range s.Keys {
		key := "model." + k.Name
		v := schemaByKey[key].get(r)
		switch {
		case k.Min != nil && toFloat(v) < *k.Min:
			msg := k.Msg
			if msg == "" {
				msg = fmt.Sprintf("want at least %s, got {%s}", formatValue(*k.Min), key)
			}
			fail(key, "%s", r.expand(msg))
		case k.OneOf != nil && !contains(k.OneOf, v.(string)):
			allowed, tail := []string{}, ""
			for _, o := range k.OneOf {
				if o == "" {
					tail = ", or leave it out"
				} else {
					allowed = append(allowed, o)
				}
			}
			fail(key, "unknown %s %q (want %s%s)", k.What, v, orList(allowed), tail)
		}
	}
	for _, rule := range s.Rules {
		if failed[rule.Key] || r.readsFailed(rule, failed) || !r.holdsAll(rule.If) {
			continue
		}
		ok := r.holdsAll(rule.Then)
		if ok && rule.MultipleOf != "" {
			d, x := schemaByKey[rule.MultipleOf], schemaByKey[rule.Key]
			ok = d != nil && x != nil && toFloat(d.get(r)) != 0 && int(toFloat(x.get(r)))%int(toFloat(d.get(r))) == 0
		}
		if !ok {
			fail(rule.Key, "%s", r.expand(rule.Msg))
		}
	}
}

// readsFailed reports whether rule reads a key already reported.
func (r *Run) readsFailed(rule *Rule, failed map[string]bool) bool {
	if failed[rule.MultipleOf] {
		return true
	}
	for _, m := range []map[string][]string{rule.If, rule.Then} {
		for k := range m {
			if failed[k] {
				return true
			}
		}
	}
	return false
}

// holdsAll reports whether every key of conds has one of its values.
func (r *Run) holdsAll(conds map[string][]string) bool {
	for k, vals := range conds {
		f := schemaByKey[k]
		if f == nil || !contains(vals, formatBare(f.get(r))) {
			return false
		}
	}
	return true
}

// expand replaces each {key} of msg by the key's value.
func (r *Run) expand(msg string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(msg, '{')
		j := strings.IndexByte(msg[i+1:], '}')
		if i < 0 || j < 0 {
			b.WriteString(msg)
			return b.String()
		}
		b.WriteString(msg[:i])
		key := msg[i+1 : i+1+j]
		if f := schemaByKey[key]; f != nil {
			b.WriteString(formatBare(f.get(r)))
		} else {
			b.WriteString(msg[i : i+2+j])
		}
		msg = msg[i+2+j:]
	}
}

// formatBare writes a value as formatValue does, whole floats without ".0" (a message's 3, not
// 3.0).
func formatBare(v any) string {
	s := formatValue(v)
	if _, ok := v.(float64); ok {
		s = strings.TrimSuffix(s, ".0")
	}
	return s
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

// isZero reports whether v is its type's zero value (how another model's key may be given: the
// config.yaml of earlier runs lists every key).
func isZero(v any) bool {
	switch x := v.(type) {
	case int:
		return x == 0
	case float64:
		return x == 0
	case bool:
		return !x
	case string:
		return x == ""
	}
	return v == nil
}

// zeroOf is the zero value of a kind: an own key's value for the models without it.
func zeroOf(k kind) any {
	switch k {
	case kindInt:
		return 0
	case kindFloat:
		return 0.0
	case kindBool:
		return false
	}
	return ""
}
