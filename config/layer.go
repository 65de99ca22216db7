package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// setting is one key's value in one layer and where it came from: "configs/zinc/x.yaml:4",
// "$REWIREGNN_TRAIN_BATCH_SIZE", "-set train.batch_size=64", "defaults/base.yaml:7".
type setting struct {
	val any
	src string
}

// layer is the keys one source sets, by dotted key, with values already typed and checked and
// where each came from. A layer is never merged here: viper merges the layers of a run (see
// stack.merge); the sources only point an error at the file and line, variable or -set.
type layer struct {
	name string // the file, "environment", "-set", …
	vals map[string]setting
}

func newLayer(name string) *layer { return &layer{name: name, vals: map[string]setting{}} }

// nested is the layer as a viper config map: the dotted keys as nested maps, fresh on each
// call (viper keeps the maps it is given and merges later layers into them).
func (l *layer) nested() map[string]any {
	out := map[string]any{}
	for k, s := range l.vals {
		sec, leaf, ok := strings.Cut(k, ".")
		if !ok {
			out[k] = s.val
			continue
		}
		m, _ := out[sec].(map[string]any)
		if m == nil {
			m = map[string]any{}
			out[sec] = m
		}
		m[leaf] = s.val
	}
	return out
}

var yamlLineRE = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// parseYAMLDoc parses one YAML document and returns its top-level mapping (nil for an empty
// file). Syntax errors name the file and the line of the problem (see yamlSyntaxError).
func parseYAMLDoc(src string, data []byte) (*yaml.Node, error) {
	doc, more, err := decodeTwo(data)
	if err != nil {
		return nil, yamlSyntaxError(src, data, err)
	}
	if doc == nil {
		return nil, nil
	}
	if more != nil {
		return nil, fmt.Errorf("%s:%d: a second YAML document; a config file holds one", src, more.Line)
	}
	root := doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, nil
		}
		root = root.Content[0]
	}
	root = deref(root)
	if isNull(root) {
		return nil, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: want a mapping of keys (like \"dataset:\"), got %s", src, root.Line, describe(root))
	}
	return root, nil
}

// decodeTwo decodes the first YAML document of data and, if there is one, the second (nil
// when absent). doc is nil for an empty input; err is the first syntax error.
func decodeTwo(data []byte) (doc, more *yaml.Node, err error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var first, second yaml.Node
	if err := dec.Decode(&first); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	if err := dec.Decode(&second); err != nil {
		if errors.Is(err, io.EOF) {
			return &first, nil, nil
		}
		return nil, nil, err
	}
	return &first, &second, nil
}

// yamlSyntaxError turns the YAML parser's error for data into one that names src and the line
// of the problem: the line the user must fix.
//
// The parser's message gives no such line: it names the line where the construct it was
// reading began (a mapping, a flow list), zero-based for some errors and one-based for others,
// and no line at all when that is the first. So the problem's line is found by cutting the
// file after each line: it is the first line L such that the file cut after L, and after every
// later line, fails with the same problem. A valid construct that spans several lines (a flow
// list, a quoted string) makes the cuts inside it fail too, but the cut after its last line
// parses, so it does not move L; an unclosed quote or bracket makes every cut after its line
// fail, so L is the line that opened it.
func yamlSyntaxError(src string, data []byte, err error) error {
	problem := yamlProblem(err)
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	line := max(len(lines), 1)
	for ; line > 1; line-- {
		_, _, e := decodeTwo([]byte(strings.Join(lines[:line-1], "")))
		if e == nil || yamlProblem(e) != problem {
			break
		}
	}
	return fmt.Errorf("%s:%d: YAML syntax error: %s", src, line, problem)
}

// yamlProblem is the YAML parser's error message without its "yaml: line N:" prefix.
func yamlProblem(err error) string {
	msg := strings.TrimSpace(err.Error())
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		return m[2]
	}
	return msg
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "no value"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

// runLayer reads the run-config keys of a YAML mapping (a config file, or a grid's overrides
// under prefix "overrides."). Every unknown key, duplicate key and ill-typed value is reported,
// each with its file and line.
func runLayer(src string, m *yaml.Node, keyPrefix string) (*layer, error) {
	l := newLayer(src)
	if m == nil {
		return l, nil
	}
	var errs []error
	seen := map[string]int{}
	var walk func(m *yaml.Node, section string)
	walk = func(m *yaml.Node, section string) {
		for i := 0; i+1 < len(m.Content); i += 2 {
			kn, vn := deref(m.Content[i]), deref(m.Content[i+1])
			key := strings.ToLower(kn.Value)
			if section != "" {
				key = section + "." + key
			}
			at := fmt.Sprintf("%s:%d", src, kn.Line)
			if first, dup := seen[key]; dup {
				errs = append(errs, fmt.Errorf("%s: key %q given twice (first on line %d)", at, keyPrefix+key, first))
				continue
			}
			seen[key] = kn.Line
			if kn.Kind != yaml.ScalarNode {
				errs = append(errs, fmt.Errorf("%s: a key must be a plain name, got %s", at, describe(kn)))
				continue
			}
			if section == "" && sections[key] {
				if vn.Kind != yaml.MappingNode {
					errs = append(errs, fmt.Errorf("%s: %s: want a mapping of %s keys, got %s", at, keyPrefix+key, key, describe(vn)))
					continue
				}
				walk(vn, key)
				continue
			}
			f := schemaByKey[key]
			if f == nil {
				errs = append(errs, fmt.Errorf("%s: %s", at, unknownKeyErrorIn(keyPrefix, key)))
				continue
			}
			v, err := nodeValue(f, vn)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s:%d: %s%w", src, vn.Line, keyPrefix, err))
				continue
			}
			l.vals[key] = setting{val: v, src: fmt.Sprintf("%s:%d", src, vn.Line)}
		}
	}
	walk(m, "")
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return l, nil
}

// nodeValue converts a YAML value to the key's type.
func nodeValue(f *field, n *yaml.Node) (any, error) {
	if f.kind == kindInt64List && n.Kind == yaml.SequenceNode {
		out := make([]int64, 0, len(n.Content))
		for _, item := range n.Content {
			item = deref(item)
			if item.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("%s: want a list of integers, got an item that is %s", f.key, describe(item))
			}
			x, err := strconv.ParseInt(item.Value, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %q is not an integer", f.key, item.Value)
			}
			out = append(out, x)
		}
		return out, nil
	}
	if n.Kind != yaml.ScalarNode {
		return nil, fmt.Errorf("%s: want a single value, got %s", f.key, describe(n))
	}
	if isNull(n) {
		return nil, fmt.Errorf("%s: no value (remove the key to keep the default)", f.key)
	}
	return parseScalar(f, n.Value)
}

// envLayer reads the REWIREGNN_<SECTION>_<KEY> variables of environ ("NAME=value" strings).
// Empty variables count as unset (as viper treats them). A variable that starts with a section
// (REWIREGNN_DATASET_, REWIREGNN_MODEL_, REWIREGNN_TRAIN_) but names no key is an error;
// other REWIREGNN_ variables (such as REWIREGNN_DATA) belong to other parts of the program and
// are left alone.
func envLayer(environ []string) (*layer, error) {
	l := newLayer("environment")
	byEnv := make(map[string]*field, len(schema))
	for _, f := range schema {
		byEnv[EnvName(f.key)] = f
	}
	var errs []error
	for _, kv := range environ {
		name, val, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix) || val == "" {
			continue
		}
		f := byEnv[name]
		if f == nil {
			rest := strings.TrimPrefix(name, EnvPrefix)
			sec, leaf, ok := strings.Cut(rest, "_")
			if ok && sections[strings.ToLower(sec)] {
				errs = append(errs, fmt.Errorf("$%s: %s", name, unknownKeyError(strings.ToLower(sec)+"."+strings.ToLower(leaf))))
			}
			continue
		}
		v, err := parseEnvValue(f, val)
		if err != nil {
			errs = append(errs, fmt.Errorf("$%s: %w", name, err))
			continue
		}
		l.vals[f.key] = setting{val: v, src: "$" + name}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return l, nil
}

// parseEnvValue reads an environment value the way viper reads one from the environment
// (integers in Go syntax, like 0x40; lists split at commas, no spaces), which is what these
// variables have always accepted.
func parseEnvValue(f *field, text string) (any, error) {
	if f.key == KeyRadius {
		return parseRadius(text)
	}
	switch f.kind {
	case kindInt:
		n, err := strconv.ParseInt(text, 0, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not an integer", f.key, text)
		}
		return int(n), nil
	case kindInt64List:
		out := []int64{}
		for _, part := range strings.Split(text, ",") {
			n, err := strconv.ParseInt(part, 0, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %q is not a list of integers (write it like 41,95,12,35, no spaces)", f.key, text)
			}
			out = append(out, n)
		}
		return out, nil
	}
	return parseScalar(f, text)
}

// setLayer reads -set key=value overrides, later ones winning. Keys are dotted
// (train.batch_size=64); lists are comma-separated (train.seeds=41,95).
func setLayer(sets []string) (*layer, error) {
	l := newLayer("-set")
	var errs []error
	for _, s := range sets {
		key, v, err := splitSet(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		src := "-set " + s
		f := schemaByKey[key]
		if f == nil {
			errs = append(errs, fmt.Errorf("%s: %s", src, unknownKeyError(key)))
			continue
		}
		val, err := parseScalar(f, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", src, err))
			continue
		}
		l.vals[key] = setting{val: val, src: src}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return l, nil
}

// splitSet splits one -set into its key (lower case) and its value, both trimmed. A missing '='
// or key is an error naming the -set; a key without '=' that is not a known key is named too.
func splitSet(s string) (key, val string, err error) {
	k, v, ok := strings.Cut(s, "=")
	key = strings.ToLower(strings.TrimSpace(k))
	switch {
	case key == "":
		return "", "", fmt.Errorf("-set %q: want key=value (e.g. train.batch_size=64), got an empty key", s)
	case !ok && schemaByKey[key] != nil:
		return "", "", fmt.Errorf("-set %q: want key=value, got no '=' (write %s=VALUE)", s, key)
	case !ok:
		return "", "", fmt.Errorf("-set %q: want key=value (e.g. train.batch_size=64), got no '=', and %s", s, unknownKeyError(key))
	}
	return key, strings.TrimSpace(v), nil
}
