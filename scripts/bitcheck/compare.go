package bitcheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rewiregnn/rewiregnn/runfiles"
	"github.com/rewiregnn/rewiregnn/train"
)

// EpochTiming are the keys of a metrics.jsonl line (runfiles.Epoch) that hold wall-clock
// time, and the peak memory measured with it: never equal between two runs, so left out of
// the comparison.
var EpochTiming = []string{"seconds", "eval_seconds", "elapsed_seconds", "peak_bytes"}

// ResultTiming are the keys of result.json (runfiles.Result) that hold wall-clock time.
var ResultTiming = []string{"seconds_per_epoch", "total_seconds", "preprocess_seconds"}

// CheckpointTiming are the fields of train.Checkpoint, as paths from it, that hold wall-clock
// time (the loop's clocks and the last epoch's record's timings).
var CheckpointTiming = []string{"Loop.EpochSecs", "Loop.Elapsed", "Loop.TrainSecs", "Loop.Preprocess",
	"Loop.Last.Seconds", "Loop.Last.EvalSeconds", "Loop.Last.Elapsed", "Loop.Last.PeakBytes"}

// ThreadKey is the result.json key that names the thread count ("cpu (2 threads)"), left out
// when Options.Threads is set.
const ThreadKey = "device"

// Files are the files of a run folder that are compared, in this order.
var Files = []string{runfiles.ConfigFile, runfiles.MetricsFile, runfiles.ResultFile, runfiles.CheckpointFile}

// Options are a comparison's settings.
type Options struct {
	A, B string // the two trees' names in messages ("A" and "B" when empty)
	// Threads says the trees ran at different GOMAXPROCS by design: result.json's ThreadKey is
	// not compared.
	Threads bool
}

func (o Options) labels() (string, string) {
	a, b := o.A, o.B
	if a == "" {
		a = "A"
	}
	if b == "" {
		b = "B"
	}
	return a, b
}

// Diff is the first difference found in one file of one run (or a run or file present on one
// side only, or a file that could not be read).
type Diff struct {
	Run   string // the run folder, relative to the trees
	File  string // the file's name; "" for the run folder as a whole
	Where string // epoch and key, field, parameter and index, or line; "" for the file as a whole
	A, B  string // the values on either side
	More  int    // how many more values of the file differ
	// Sections are the parts of the file that differ, in the order of their first difference:
	// JSON keys, checkpoint fields (Params, Adam.M, Loop.RNG), "lines".
	Sections []string
}

// Format renders d with the trees' names.
func (d Diff) Format(o Options) string {
	la, lb := o.labels()
	var s strings.Builder
	s.WriteString(d.Run)
	if d.File != "" {
		s.WriteString(": " + d.File)
	}
	if d.Where != "" {
		s.WriteString(": " + d.Where)
	}
	fmt.Fprintf(&s, ": %s %s, %s %s", la, d.A, lb, d.B)
	if d.More > 0 {
		fmt.Fprintf(&s, " (and %d more differing %s", d.More, plural(d.More, "value", "values"))
		if len(d.Sections) > 1 {
			fmt.Fprintf(&s, "; in %s", strings.Join(d.Sections, ", "))
		}
		s.WriteString(")")
	}
	return s.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Report is the outcome of CompareTrees.
type Report struct {
	Runs  int    // run folders compared (present on both sides)
	Files int    // file pairs compared
	Diffs []Diff // at most one per file, runs in path order
}

// CompareTrees compares every run folder under dirA with the one at the same relative path
// under dirB. An error means a tree could not be read at all; differences, including
// unreadable files, are in the report.
func CompareTrees(dirA, dirB string, o Options) (*Report, error) {
	runsA, err := findRuns(dirA)
	if err != nil {
		return nil, err
	}
	runsB, err := findRuns(dirB)
	if err != nil {
		return nil, err
	}
	if len(runsA) == 0 && len(runsB) == 0 {
		return nil, fmt.Errorf("no run folders (with %s, %s or %s) under %s or %s", runfiles.MetricsFile, runfiles.ResultFile, runfiles.CheckpointFile, dirA, dirB)
	}
	all := map[string]bool{}
	for _, r := range runsA {
		all[r] = true
	}
	for _, r := range runsB {
		all[r] = true
	}
	names := make([]string, 0, len(all))
	for r := range all {
		names = append(names, r)
	}
	sort.Strings(names)
	inA, inB := set(runsA), set(runsB)
	rep := &Report{}
	for _, run := range names {
		if !inA[run] || !inB[run] {
			rep.Diffs = append(rep.Diffs, Diff{Run: run, A: presence(inA[run]), B: presence(inB[run])})
			continue
		}
		rep.Runs++
		n, diffs := CompareRun(filepath.Join(dirA, run), filepath.Join(dirB, run), o)
		rep.Files += n
		for _, d := range diffs {
			d.Run = run
			rep.Diffs = append(rep.Diffs, d)
		}
	}
	return rep, nil
}

func set(xs []string) map[string]bool {
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func presence(ok bool) string {
	if ok {
		return "has it"
	}
	return "lacks it"
}

// findRuns lists the run folders under dir, relative to it, sorted.
func findRuns(dir string) ([]string, error) {
	if st, err := os.Stat(dir); err != nil {
		return nil, err
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a folder", dir)
	}
	var runs []string
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() {
			return nil
		}
		for _, f := range []string{runfiles.MetricsFile, runfiles.ResultFile, runfiles.CheckpointFile} {
			if _, err := os.Stat(filepath.Join(path, f)); err == nil {
				rel, err := filepath.Rel(dir, path)
				if err != nil {
					return err
				}
				runs = append(runs, filepath.ToSlash(rel))
				break
			}
		}
		return nil
	})
	sort.Strings(runs)
	return runs, err
}

// CompareRun compares the Files of two run folders and returns how many pairs it compared
// and the first difference of each file that differs (Run left empty). A file on one side
// only is a difference; a file on neither side is skipped.
func CompareRun(a, b string, o Options) (int, []Diff) {
	n := 0
	var diffs []Diff
	for _, f := range Files {
		ba, errA := os.ReadFile(filepath.Join(a, f))
		bb, errB := os.ReadFile(filepath.Join(b, f))
		missA, missB := errors.Is(errA, fs.ErrNotExist), errors.Is(errB, fs.ErrNotExist)
		switch {
		case missA && missB:
			continue
		case missA || missB:
			diffs = append(diffs, Diff{File: f, A: presence(!missA), B: presence(!missB)})
			continue
		case errA != nil || errB != nil:
			diffs = append(diffs, Diff{File: f, Where: "unreadable", A: errText(errA), B: errText(errB)})
			continue
		}
		n++
		var d *Diff
		switch f {
		case runfiles.MetricsFile:
			d = CompareMetrics(ba, bb)
		case runfiles.ResultFile:
			d = CompareResult(ba, bb, o.Threads)
		case runfiles.CheckpointFile:
			d = CompareCheckpoint(ba, bb)
		default:
			d = CompareText(ba, bb)
		}
		if d != nil {
			d.File = f
			diffs = append(diffs, *d)
		}
	}
	return n, diffs
}

func errText(err error) string {
	if err == nil {
		return "readable"
	}
	return "unreadable (" + err.Error() + ")"
}

// differ keeps the first difference and counts the rest.
type differ struct {
	where, a, b string
	n           int
	sections    []string // the parts of the file that differ, in order of their first difference
}

func (d *differ) add(where, a, b string) {
	if d.n == 0 {
		d.where, d.a, d.b = where, a, b
	}
	d.n++
	if s := section(where); !slices.Contains(d.sections, s) {
		d.sections = append(d.sections, s)
	}
}

// section names the part of a file a difference lies in: the key of a JSON line (less the
// epoch), the checkpoint's field (Params, Adam.M, Loop.RNG), or "lines".
func section(where string) string {
	if i := strings.LastIndex(where, ": "); i >= 0 {
		where = where[i+2:]
	}
	switch {
	case strings.HasPrefix(where, "line "):
		return "lines"
	case strings.HasPrefix(where, "Config line "):
		return "Config"
	}
	if i := strings.IndexByte(where, '['); i >= 0 {
		where = where[:i]
	}
	if parts := strings.SplitN(where, ".", 3); len(parts) > 2 {
		where = parts[0] + "." + parts[1]
	}
	return where
}

func (d *differ) diff() *Diff {
	if d.n == 0 {
		return nil
	}
	return &Diff{Where: d.where, A: d.a, B: d.b, More: d.n - 1, Sections: d.sections}
}

// CompareText compares two config files line by line, less the keys one of them adds at their
// zero value (dropNewZeroKeys); the first differing line is reported.
func CompareText(a, b []byte) *Diff {
	if bytes.Equal(a, b) {
		return nil
	}
	d := &differ{}
	textLines(d, "line", a, b)
	return d.diff()
}

func textLines(d *differ, prefix string, a, b []byte) {
	la, lb := lines(a), lines(b)
	la, lb = dropNewZeroKeys(la, lb), dropNewZeroKeys(lb, la)
	for i := range max(len(la), len(lb)) {
		va, vb := "absent", "absent"
		if i < len(la) {
			va = strconv.Quote(la[i])
		}
		if i < len(lb) {
			vb = strconv.Quote(lb[i])
		}
		if va != vb {
			d.add(fmt.Sprintf("%s %d", prefix, i+1), va, vb)
		}
	}
}

// zeroKey matches a YAML line that sets a key to its zero value: `  ffn_activation: ""`, `x: 0`,
// `flag: false`, `list: []`.
var zeroKey = regexp.MustCompile(`^\s*[A-Za-z_][A-Za-z0-9_]*: (""|0|false|\[\])$`)

// dropNewZeroKeys returns xs less the lines that set a key to its zero value and are absent from
// other: a key one revision adds to config.yaml at its zero value. Config hashes keys added since
// its first layout only away from zero, and a model reads zero as the behaviour from before the
// key, so such a line changes nothing a run computes. A key whose value changed still differs:
// the other revision's line with the old value stays.
func dropNewZeroKeys(xs, other []string) []string {
	in := set(other)
	out := xs[:0:0]
	for _, x := range xs {
		if !in[x] && zeroKey.MatchString(x) {
			continue
		}
		out = append(out, x)
	}
	return out
}

func lines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// CompareMetrics compares two metrics.jsonl files epoch by epoch, less EpochTiming.
func CompareMetrics(a, b []byte) *Diff {
	la, lb := lines(a), lines(b)
	d := &differ{}
	for i := range max(len(la), len(lb)) {
		where := fmt.Sprintf("line %d", i+1)
		if i >= len(la) || i >= len(lb) {
			va, vb := "absent", "absent"
			if i < len(la) {
				va = epochLabel(la[i]) + " " + clip(la[i])
			} else {
				vb = epochLabel(lb[i]) + " " + clip(lb[i])
			}
			d.add(where, va, vb)
			continue
		}
		ma, errA := decodeObject([]byte(la[i]), EpochTiming)
		mb, errB := decodeObject([]byte(lb[i]), EpochTiming)
		if errA != nil || errB != nil {
			d.add(where+" unreadable", errText(errA), errText(errB))
			continue
		}
		if e, ok := ma["epoch"]; ok {
			where = fmt.Sprintf("epoch %v (line %d)", e, i+1)
		}
		compareJSON(d, where+":", ma, mb, append(topKeys([]byte(la[i])), topKeys([]byte(lb[i]))...)...)
	}
	return d.diff()
}

// epochLabel names a metrics line by its epoch.
func epochLabel(line string) string {
	m, err := decodeObject([]byte(line), nil)
	if err != nil {
		return "unreadable"
	}
	return fmt.Sprintf("epoch %v:", m["epoch"])
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}

// CompareResult compares two result.json files key by key, less ResultTiming, and less
// ThreadKey when threads is set.
func CompareResult(a, b []byte, threads bool) *Diff {
	skip := ResultTiming
	if threads {
		skip = append(slices.Clone(skip), ThreadKey)
	}
	ma, errA := decodeObject(a, skip)
	mb, errB := decodeObject(b, skip)
	if errA != nil || errB != nil {
		return &Diff{Where: "unreadable", A: errText(errA), B: errText(errB)}
	}
	d := &differ{}
	compareJSON(d, "", ma, mb, append(topKeys(a), topKeys(b)...)...)
	return d.diff()
}

// decodeObject decodes one JSON object, numbers as json.Number, and drops the keys in skip.
func decodeObject(b []byte, skip []string) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("not a JSON object")
	}
	for _, k := range skip {
		delete(m, k)
	}
	return m, nil
}

// compareJSON compares decoded JSON values; numbers are equal when their float64 bits are (or
// their texts, for numbers beyond float64). An object's keys are compared in the order given
// (the file's: topKeys), then in sorted order.
func compareJSON(d *differ, path string, a, b any, order ...string) {
	switch va := a.(type) {
	case map[string]any:
		vb, ok := b.(map[string]any)
		if !ok {
			d.add(path, show(a), show(b))
			return
		}
		keys := map[string]bool{}
		for k := range va {
			keys[k] = true
		}
		for k := range vb {
			keys[k] = true
		}
		var sorted []string
		for _, k := range order {
			if keys[k] {
				sorted = append(sorted, k)
				delete(keys, k)
			}
		}
		rest := make([]string, 0, len(keys))
		for k := range keys {
			rest = append(rest, k)
		}
		sort.Strings(rest)
		for _, k := range append(sorted, rest...) {
			p := joinKey(path, k)
			xa, okA := va[k]
			xb, okB := vb[k]
			switch {
			case !okA:
				d.add(p, "absent", show(xb))
			case !okB:
				d.add(p, show(xa), "absent")
			default:
				compareJSON(d, p, xa, xb)
			}
		}
	case []any:
		vb, ok := b.([]any)
		if !ok || len(va) != len(vb) {
			d.add(path, show(a), show(b))
			return
		}
		for i := range va {
			compareJSON(d, fmt.Sprintf("%s[%d]", path, i), va[i], vb[i])
		}
	case json.Number:
		vb, ok := b.(json.Number)
		if !ok {
			d.add(path, show(a), show(b))
			return
		}
		if va == vb {
			return
		}
		fa, errA := strconv.ParseFloat(string(va), 64)
		fb, errB := strconv.ParseFloat(string(vb), 64)
		if errA != nil || errB != nil || math.Float64bits(fa) != math.Float64bits(fb) {
			d.add(path, string(va), string(vb))
		}
	default:
		if !reflect.DeepEqual(a, b) {
			d.add(path, show(a), show(b))
		}
	}
}

// topKeys lists the keys of a JSON object in the order they are written.
func topKeys(b []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		k, _ := t.(string)
		keys = append(keys, k)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return keys
		}
	}
	return keys
}

func joinKey(path, k string) string {
	switch {
	case path == "":
		return k
	case strings.HasSuffix(path, ":"):
		return path + " " + k
	}
	return path + "." + k
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return clip(string(b))
}

// CompareCheckpoint decodes two checkpoint.bin files as train.Checkpoint (checking the
// container's magic and CRC) and compares every field, less CheckpointTiming. Config (the
// resolved config.yaml) is compared line by line, other byte slices byte by byte.
func CompareCheckpoint(a, b []byte) *Diff {
	if bytes.Equal(a, b) {
		return nil
	}
	var ca, cb train.Checkpoint
	errA := runfiles.DecodeCheckpoint(a, &ca)
	errB := runfiles.DecodeCheckpoint(b, &cb)
	if errA != nil || errB != nil {
		return &Diff{Where: "unreadable", A: errText(errA), B: errText(errB)}
	}
	skip := set(CheckpointTiming)
	d := &differ{}
	walk(d, skip, "", reflect.ValueOf(ca), reflect.ValueOf(cb))
	return d.diff()
}

// walk compares two values of one type field by field; floats by their bits.
func walk(d *differ, skip map[string]bool, path string, a, b reflect.Value) {
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				d.add(path, nilness(a), nilness(b))
			}
			return
		}
		walk(d, skip, path, a.Elem(), b.Elem())
	case reflect.Struct:
		t := a.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			p := f.Name
			if path != "" {
				p = path + "." + f.Name
			}
			if skip[p] {
				continue
			}
			walk(d, skip, p, a.Field(i), b.Field(i))
		}
	case reflect.Map:
		keys := map[string]reflect.Value{}
		for _, k := range a.MapKeys() {
			keys[fmt.Sprint(k.Interface())] = k
		}
		for _, k := range b.MapKeys() {
			keys[fmt.Sprint(k.Interface())] = k
		}
		names := make([]string, 0, len(keys))
		for n := range keys {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			k := keys[n]
			p := fmt.Sprintf("%s[%s]", path, mapKey(k))
			va, vb := a.MapIndex(k), b.MapIndex(k)
			switch {
			case !va.IsValid():
				d.add(p, "absent", describe(vb))
			case !vb.IsValid():
				d.add(p, describe(va), "absent")
			default:
				walk(d, skip, p, va, vb)
			}
		}
	case reflect.Slice, reflect.Array:
		if a.Kind() == reflect.Slice && a.Type().Elem().Kind() == reflect.Uint8 {
			if path == "Config" {
				textLines(d, "Config line", a.Bytes(), b.Bytes())
				return
			}
		}
		if a.Len() != b.Len() {
			d.add(path, describe(a), describe(b))
			return
		}
		if a.Kind() == reflect.Slice && (a.IsNil() != b.IsNil()) {
			d.add(path, nilness(a), nilness(b))
			return
		}
		for i := range a.Len() {
			walk(d, skip, fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i))
		}
	case reflect.Float32, reflect.Float64:
		fa, fb := a.Float(), b.Float()
		if math.Float64bits(fa) != math.Float64bits(fb) {
			sa, sb := formatFloat(fa, a.Kind()), formatFloat(fb, a.Kind())
			if sa == sb {
				sa += fmt.Sprintf(" (bits %#x)", math.Float64bits(fa))
				sb += fmt.Sprintf(" (bits %#x)", math.Float64bits(fb))
			}
			d.add(path, sa, sb)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if a.Int() != b.Int() {
			d.add(path, strconv.FormatInt(a.Int(), 10), strconv.FormatInt(b.Int(), 10))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if a.Uint() != b.Uint() {
			d.add(path, strconv.FormatUint(a.Uint(), 10), strconv.FormatUint(b.Uint(), 10))
		}
	case reflect.String:
		if a.String() != b.String() {
			d.add(path, strconv.Quote(a.String()), strconv.Quote(b.String()))
		}
	case reflect.Bool:
		if a.Bool() != b.Bool() {
			d.add(path, strconv.FormatBool(a.Bool()), strconv.FormatBool(b.Bool()))
		}
	default:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			d.add(path, fmt.Sprint(a.Interface()), fmt.Sprint(b.Interface()))
		}
	}
}

func formatFloat(x float64, k reflect.Kind) string {
	if k == reflect.Float32 {
		return strconv.FormatFloat(x, 'g', -1, 32)
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

func mapKey(k reflect.Value) string {
	if k.Kind() == reflect.String {
		return strconv.Quote(k.String())
	}
	return fmt.Sprint(k.Interface())
}

func nilness(v reflect.Value) string {
	if v.IsNil() {
		return "nil"
	}
	return "set"
}

// describe names a value that has no counterpart: its length for slices and maps.
func describe(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map, reflect.String:
		return fmt.Sprintf("length %d", v.Len())
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "nil"
		}
		return describe(v.Elem())
	}
	return fmt.Sprint(v.Interface())
}
