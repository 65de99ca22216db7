package config

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// kind is the type of a config key's value.
type kind int

const (
	kindString kind = iota
	kindInt
	kindFloat
	kindBool
	kindDuration
	kindInt64List
)

// field is one key of the run config: its dotted name ("train.batch_size") and the path of
// struct field indices that reach it in a Run, or for a model's own key its name in Model.Own.
type field struct {
	key   string
	kind  kind
	index []int
	own   string
}

// schema lists every key of a Run in struct order; schemaByKey finds them by dotted name.
var (
	schema      = buildSchema()
	schemaByKey = func() map[string]*field {
		m := make(map[string]*field, len(schema))
		for _, f := range schema {
			m[f.key] = f
		}
		return m
	}()
	// sections are the keys that hold a nested mapping (dataset, model, train).
	sections = func() map[string]bool {
		m := map[string]bool{}
		for _, f := range schema {
			if i := strings.IndexByte(f.key, '.'); i > 0 {
				m[f.key[:i]] = true
			}
		}
		return m
	}()
)

var durationType = reflect.TypeOf(time.Duration(0))

func buildSchema() []*field {
	var out []*field
	var walk func(t reflect.Type, prefix string, index []int)
	walk = func(t reflect.Type, prefix string, index []int) {
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			tag := sf.Tag.Get("mapstructure")
			if tag == "" || tag == "-" || strings.HasPrefix(tag, ",") { // ",remain": Model.Own
				continue
			}
			idx := append(append([]int(nil), index...), i)
			key := prefix + tag
			ft := sf.Type
			var k kind
			switch {
			case ft == durationType:
				k = kindDuration
			case ft.Kind() == reflect.Struct:
				walk(ft, key+".", idx)
				continue
			case ft.Kind() == reflect.String:
				k = kindString
			case ft.Kind() == reflect.Int:
				k = kindInt
			case ft.Kind() == reflect.Float64:
				k = kindFloat
			case ft.Kind() == reflect.Bool:
				k = kindBool
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Int64:
				k = kindInt64List
			default:
				panic(fmt.Sprintf("config: field %s has an unsupported type %s", key, ft))
			}
			out = append(out, &field{key: key, kind: k, index: idx})
		}
	}
	walk(reflect.TypeOf(Run{}), "", nil)
	own := ownKeys()
	for _, f := range own {
		for _, g := range out {
			if g.key == f.key {
				panic(fmt.Sprintf("config: a model spec declares %s, a key every model has", f.key))
			}
		}
	}
	return layoutOrder(append(out, own...))
}

// layoutOrder orders the keys as config files are written: the keys of layoutV1 in its order,
// and each other key after the last key of its section (top-level keys: after the last
// top-level key), in the order given.
func layoutOrder(fs []*field) []*field {
	rank := map[string]int{}
	for i, k := range layoutV1 {
		rank[k] = 2 * i * len(fs)
	}
	section := func(k string) string {
		if i := strings.IndexByte(k, '.'); i > 0 {
			return k[:i]
		}
		return ""
	}
	last := map[string]int{}
	for _, k := range layoutV1 {
		last[section(k)] = rank[k]
	}
	end := 2 * len(layoutV1) * len(fs) // a section layoutV1 lacks (gpu) goes after all of it
	for i, f := range fs {
		if _, ok := rank[f.key]; ok {
			continue
		}
		if l, ok := last[section(f.key)]; ok {
			rank[f.key] = l + 1 + i
		} else {
			rank[f.key] = end + i
		}
	}
	out := append([]*field(nil), fs...)
	sort.SliceStable(out, func(i, j int) bool { return rank[out[i].key] < rank[out[j].key] })
	return out
}

// Keys lists every dotted config key in the order YAML writes them.
func Keys() []string {
	ks := make([]string, len(schema))
	for i, f := range schema {
		ks[i] = f.key
	}
	return ks
}

// EnvName is the environment variable that overrides a config key:
// REWIREGNN_<SECTION>_<KEY>, e.g. REWIREGNN_TRAIN_BATCH_SIZE for train.batch_size.
func EnvName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// EnvPrefix starts every environment variable that overrides a config key.
const EnvPrefix = "REWIREGNN_"

// unknownKeyError names a key that is not in the schema, with the closest known key when one is
// near enough to be a typo.
func unknownKeyError(key string) string { return unknownKeyErrorIn("", key) }

// unknownKeyErrorIn is unknownKeyError for a key under prefix (a grid's "overrides."). A key
// that names a section, or that goes below a key holding a single value (dataset.r.x), is told
// so instead; a suggestion is never the key itself.
func unknownKeyErrorIn(prefix, key string) string {
	if sections[key] {
		return sectionError(prefix, key)
	}
	if parent := valueKeyAbove(key); parent != "" {
		return fmt.Sprintf("unknown key %q: %s holds a single value and has no keys under it (give %s=VALUE)", prefix+key, prefix+parent, prefix+parent)
	}
	msg := fmt.Sprintf("unknown key %q", prefix+key)
	if s := suggest(key); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", prefix+s)
	}
	return msg
}

// sectionError tells that key names a section (a mapping of keys), not a key with a value, and
// lists the section's keys.
func sectionError(prefix, key string) string {
	keys := sectionKeys(key)
	for i := range keys {
		keys[i] = prefix + keys[i]
	}
	return fmt.Sprintf("%s%s is a section, not a key with a value; set one of its keys: %s", prefix, key, strings.Join(keys, ", "))
}

// sectionKeys lists the keys of section sec in schema order (dataset → dataset.name, …).
func sectionKeys(sec string) []string {
	var out []string
	for _, f := range schema {
		if strings.HasPrefix(f.key, sec+".") {
			out = append(out, f.key)
		}
	}
	return out
}

// valueKeyAbove is the known key that key goes below (dataset.r for dataset.r.x), or "".
func valueKeyAbove(key string) string {
	for k := key; ; {
		i := strings.LastIndexByte(k, '.')
		if i < 0 {
			return ""
		}
		k = k[:i]
		if schemaByKey[k] != nil {
			return k
		}
	}
}

// suggest returns the known key or section closest to key in edit distance (never key itself),
// or "" if none is close.
func suggest(key string) string {
	best, bestD := "", 3
	consider := func(cand string) {
		if d := editDistance(key, cand); cand != key && d < bestD {
			best, bestD = cand, d
		}
	}
	for _, f := range schema {
		consider(f.key)
	}
	for _, s := range sortedKeys(sections) {
		consider(s)
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// parseScalar converts the text of one value to the key's type. The error names the key and
// the value; the caller adds where the value came from.
func parseScalar(f *field, text string) (any, error) {
	if f.key == KeyRadius {
		return parseRadius(text)
	}
	switch f.kind {
	case kindString:
		return text, nil
	case kindInt:
		n, err := strconv.ParseInt(text, 10, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not an integer", f.key, text)
		}
		return int(n), nil
	case kindFloat:
		x, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%s: %q is not a finite number", f.key, text)
		}
		return x, nil
	case kindBool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not true or false", f.key, text)
		}
		return b, nil
	case kindDuration:
		d, err := time.ParseDuration(text)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a duration (write it like 12h, 90m or 1h30m)", f.key, text)
		}
		return d, nil
	case kindInt64List:
		return parseInt64List(f, text)
	}
	panic("config: unknown kind")
}

// parseRadius reads dataset.r: a whole number ≥ 1, or auto (RAuto).
func parseRadius(text string) (any, error) {
	if strings.TrimSpace(text) == RadiusAuto {
		return RAuto, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(text), 0, 0)
	if err != nil || n < 0 { // 0 reaches Validate's message; negatives would alias RAuto
		return nil, fmt.Errorf("%s: %q: the rewiring radius must be at least 1 (a whole number) or %s (the paper's density rule)", KeyRadius, text, RadiusAuto)
	}
	return int(n), nil
}

// parseInt64List reads "41,95,12" (brackets and spaces allowed: "[41, 95]"); "" and "[]" are
// the empty list.
func parseInt64List(f *field, text string) ([]int64, error) {
	t := strings.TrimSpace(text)
	t = strings.TrimSuffix(strings.TrimPrefix(t, "["), "]")
	out := []int64{}
	if strings.TrimSpace(t) == "" {
		return out, nil
	}
	for _, part := range strings.Split(t, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(part), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a list of integers (write it like 41,95,12,35)", f.key, text)
		}
		out = append(out, n)
	}
	return out, nil
}

// formatDuration writes a duration the short way: 12h, 90m → 1h30m, 10m, 45s.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// get reads the value of a key from a Run; a model's own key the run lacks reads as its zero
// value.
func (f *field) get(r *Run) any {
	if f.own != "" {
		if v, ok := r.Model.Own[f.own]; ok {
			return v
		}
		return zeroOf(f.kind)
	}
	return reflect.ValueOf(r).Elem().FieldByIndex(f.index).Interface()
}

// sortedKeys returns the keys of m sorted.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// HParamKeys are the config keys a run's TensorBoard hparams summary records, with its seed:
// the keys the paper's grids vary. A sweep's experiment summary names those of them its grid
// varies.
var HParamKeys = []string{"dataset.name", "dataset.r", "dataset.encoding", "dataset.cls", "model.name", "model.layers",
	"model.hidden", "train.batch_size", "train.lr"}

// Value is the value of a config key in the run (a string, bool, int, int64, float64, duration
// or list, by the key's kind); false for a key that does not exist.
func (r *Run) Value(key string) (any, bool) {
	f := schemaByKey[key]
	if f == nil {
		return nil, false
	}
	return f.get(r), true
}
