package bitcheck

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/runfiles"
	"github.com/rewiregnn/rewiregnn/train"
)

// fakeRun is a run folder's contents, made up for the comparer's tests.
type fakeRun struct {
	config string
	epochs []runfiles.Epoch
	result runfiles.Result
	ck     *train.Checkpoint
}

func newFakeRun() *fakeRun {
	r := &fakeRun{config: "name: zinc-gatedgcn-adj-r1\ndataset:\n  name: zinc\n  r: 1\n"}
	for e := range 3 {
		r.epochs = append(r.epochs, runfiles.Epoch{Epoch: e, LR: 0.001, TrainLoss: 1.5 - 0.1*float64(e), TrainMetric: 1.5,
			ValLoss: 1.25, ValMetric: 1.25, TestMetric: 1.4, Seconds: 0.5, EvalSeconds: 0.1, Elapsed: 1 + float64(e),
			ConfigHash: "abc", Departures: []runfiles.Departure{{Key: "dataset.subset", Protocol: "0", Used: "192"}}})
	}
	r.result = runfiles.Result{Name: "zinc-gatedgcn-adj-r1", Dataset: "zinc", Model: "gatedgcn", Encoding: "adj", R: 1, Seed: 41,
		Metric: "mae", TestMetric: 1.4, ValMetric: 1.25, TrainMetric: 1.3, Epochs: 3, SecondsPerEpoch: 0.5, TotalSeconds: 4,
		PreprocessSecs: 0.3, TrainGraphs: 192, Params: 6, Device: "cpu (1 threads)", StoppedBy: "max_epochs", FinalLR: 0.001}
	last := r.epochs[2]
	r.ck = &train.Checkpoint{Run: "zinc-gatedgcn-adj-r1", Seed: 41,
		Params:    map[string][]float64{"a.W": {0, 2, 3, 4}, "b.b": {0.5, -0.25}},
		Shapes:    map[string][]int{"a.W": {2, 2}, "b.b": {2}},
		BNMean:    map[string][]float64{"bn0": {0.1, 0.2}},
		BNVar:     map[string][]float64{"bn0": {1, 1.5}},
		DropSeeds: map[string]uint64{"d0": 7},
		Step:      18,
		Adam: nn.AdamState{Step: 18, M: map[string][]float64{"a.W": {0.1, 0.2, 0.3, 0.4}, "b.b": {0.01, 0.02}},
			V: map[string][]float64{"a.W": {1e-3, 2e-3, 3e-3, 4e-3}, "b.b": {1e-4, 2e-4}}},
		Loop: train.Loop{Epoch: 3, EpochSecs: 0.2, Elapsed: 4, TrainSecs: 1.5, Preprocess: 0.3,
			Plateau: train.Plateau{LR: 0.001, Factor: 0.5, Patience: 10, Best: 1.25}, RNG: []byte{1, 2, 3, 4, 5}, Last: &last},
		Config: []byte(r.config)}
	return r
}

// write writes the run into dir/out/<name>/seed41 and returns that folder.
func (r *fakeRun) write(t *testing.T, dir string) string {
	t.Helper()
	run := filepath.Join(dir, "out", r.result.Name, "seed41")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	var m bytes.Buffer
	for _, e := range r.epochs {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		m.Write(append(b, '\n'))
	}
	res, err := json.MarshalIndent(r.result, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for f, b := range map[string][]byte{runfiles.ConfigFile: []byte(r.config), runfiles.MetricsFile: m.Bytes(), runfiles.ResultFile: res} {
		if err := os.WriteFile(filepath.Join(run, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := runfiles.WriteCheckpoint(filepath.Join(run, runfiles.CheckpointFile), r.ck); err != nil {
		t.Fatal(err)
	}
	return run
}

func up(x float64) float64 { return math.Nextafter(x, math.Inf(1)) }

// TestCompareFindsEachDifference changes one thing in the second of two otherwise equal runs
// and expects exactly one difference, reported with its file, place and both values; changes to
// timing fields alone are no difference.
func TestCompareFindsEachDifference(t *testing.T) {
	cases := []struct {
		name    string
		change  func(r *fakeRun)
		threads bool
		want    string // the formatted difference; "" for none
	}{
		{"nothing", func(*fakeRun) {}, false, ""},
		{"timing fields only", func(r *fakeRun) {
			for i := range r.epochs {
				r.epochs[i].Seconds, r.epochs[i].EvalSeconds, r.epochs[i].Elapsed = 9, 9, 99
			}
			r.result.SecondsPerEpoch, r.result.TotalSeconds, r.result.PreprocessSecs = 9, 99, 9
			r.ck.Loop.EpochSecs, r.ck.Loop.Elapsed, r.ck.Loop.TrainSecs, r.ck.Loop.Preprocess = 9, 99, 9, 9
			r.ck.Loop.Last.Seconds, r.ck.Loop.Last.EvalSeconds, r.ck.Loop.Last.Elapsed = 9, 9, 99
		}, false, ""},
		{"metrics value by one ulp", func(r *fakeRun) { r.epochs[1].ValLoss = up(r.epochs[1].ValLoss) },
			false, "metrics.jsonl: epoch 1 (line 2): val_loss: base 1.25, head 1.2500000000000002"},
		{"metrics line missing", func(r *fakeRun) { r.epochs = r.epochs[:2] },
			false, `metrics.jsonl: line 3: base epoch 2: {"epoch":2,`},
		{"metrics departure", func(r *fakeRun) { r.epochs[0].Departures[0].Used = "24" },
			false, `metrics.jsonl: epoch 0 (line 1): departures[0].used: base "192", head "24"`},
		{"result metric", func(r *fakeRun) { r.result.TestMetric = 1.375 },
			false, "result.json: test_metric: base 1.4, head 1.375"},
		{"result device", func(r *fakeRun) { r.result.Device = "cpu (2 threads)" },
			false, `result.json: device: base "cpu (1 threads)", head "cpu (2 threads)"`},
		{"result device across thread counts", func(r *fakeRun) { r.result.Device = "cpu (2 threads)" }, true, ""},
		{"result metric across thread counts", func(r *fakeRun) { r.result.ValMetric = 1 },
			true, "result.json: val_metric: base 1.25, head 1"},
		{"parameter by one ulp", func(r *fakeRun) { r.ck.Params["b.b"][1] = up(-0.25) },
			false, `checkpoint.bin: Params["b.b"][1]: base -0.25, head -0.24999999999999997`},
		{"parameter sign of zero", func(r *fakeRun) { r.ck.Params["a.W"][0] = math.Copysign(0, -1) },
			false, `checkpoint.bin: Params["a.W"][0]: base 0, head -0`},
		{"parameter only in head", func(r *fakeRun) { r.ck.Params["c.W"] = []float64{1} },
			false, `checkpoint.bin: Params["c.W"]: base absent, head length 1`},
		{"Adam second moment", func(r *fakeRun) { r.ck.Adam.V["a.W"][3] = 5e-3 },
			false, `checkpoint.bin: Adam.V["a.W"][3]: base 0.004, head 0.005`},
		{"batch-norm variance", func(r *fakeRun) { r.ck.BNVar["bn0"][0] = 2 },
			false, `checkpoint.bin: BNVar["bn0"][0]: base 1, head 2`},
		{"generator state", func(r *fakeRun) { r.ck.Loop.RNG[4] = 6 },
			false, `checkpoint.bin: Loop.RNG[4]: base 5, head 6`},
		{"plateau", func(r *fakeRun) { r.ck.Loop.Plateau.Bad = 1 },
			false, `checkpoint.bin: Loop.Plateau.Bad: base 0, head 1`},
		{"last epoch record", func(r *fakeRun) { r.ck.Loop.Last.TestMetric = 2 },
			false, `checkpoint.bin: Loop.Last.TestMetric: base 1.4, head 2`},
		{"checkpoint config", func(r *fakeRun) { r.ck.Config = []byte(strings.Replace(r.config, "r: 1", "r: 2", 1)) },
			false, `checkpoint.bin: Config line 4: base "  r: 1", head "  r: 2"`},
		{"config.yaml", func(r *fakeRun) { r.config = strings.Replace(r.config, "zinc\n", "aqsol\n", 1) },
			false, `config.yaml: line 3: base "  name: zinc", head "  name: aqsol"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			newFakeRun().write(t, filepath.Join(dir, "base"))
			r := newFakeRun()
			c.change(r)
			r.write(t, filepath.Join(dir, "head"))
			o := Options{A: "base", B: "head", Threads: c.threads}
			rep, err := CompareTrees(filepath.Join(dir, "base"), filepath.Join(dir, "head"), o)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Runs != 1 || rep.Files != 4 {
				t.Errorf("compared %d runs, %d files; want 1, 4", rep.Runs, rep.Files)
			}
			var got []string
			for _, d := range rep.Diffs {
				got = append(got, d.Format(o))
			}
			switch {
			case c.want == "" && len(got) > 0:
				t.Errorf("differences where there are none:\n%s", strings.Join(got, "\n"))
			case c.want != "" && len(got) != 1:
				t.Errorf("%d differences, want 1 (%s):\n%s", len(got), c.want, strings.Join(got, "\n"))
			case c.want != "" && !strings.HasPrefix(got[0], "out/zinc-gatedgcn-adj-r1/seed41: "+c.want):
				t.Errorf("got  %s\nwant out/zinc-gatedgcn-adj-r1/seed41: %s…", got[0], c.want)
			}
		})
	}
}

// TestCompareCountsAndSections: a difference that runs through a file is reported once, at its
// first place, with the count of the others and the parts of the file they lie in.
func TestCompareCountsAndSections(t *testing.T) {
	dir := t.TempDir()
	newFakeRun().write(t, filepath.Join(dir, "a"))
	r := newFakeRun()
	for _, p := range r.ck.Params {
		for i := range p {
			p[i] = up(p[i])
		}
	}
	r.ck.Adam.M["b.b"][0] = 1
	r.write(t, filepath.Join(dir, "b"))
	rep, err := CompareTrees(filepath.Join(dir, "a"), filepath.Join(dir, "b"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Diffs) != 1 {
		t.Fatalf("diffs %+v, want one", rep.Diffs)
	}
	want := `out/zinc-gatedgcn-adj-r1/seed41: checkpoint.bin: Params["a.W"][0]: A 0, B 5e-324 (and 6 more differing values; in Params, Adam.M)`
	if got := rep.Diffs[0].Format(Options{}); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestCompareUnreadableAndMissing: a checkpoint with one byte changed fails its checksum and is
// reported as unreadable; a file or a run folder on one side only is reported as such.
func TestCompareUnreadableAndMissing(t *testing.T) {
	dir := t.TempDir()
	newFakeRun().write(t, filepath.Join(dir, "a"))
	run := newFakeRun().write(t, filepath.Join(dir, "b"))
	ck := filepath.Join(run, runfiles.CheckpointFile)
	b, err := os.ReadFile(ck)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(ck, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(run, runfiles.ResultFile)); err != nil {
		t.Fatal(err)
	}
	other := newFakeRun()
	other.result.Name = "zinc-monet-adj-r1"
	other.write(t, filepath.Join(dir, "b"))

	var out, errs bytes.Buffer
	code := Main([]string{"-a", "base", "-b", "head", filepath.Join(dir, "a"), filepath.Join(dir, "b")}, &out, &errs)
	if code != 1 {
		t.Errorf("exit status %d, want 1; stderr %s", code, errs.String())
	}
	for _, want := range []string{
		"DIFFERS out/zinc-gatedgcn-adj-r1/seed41: result.json: base has it, head lacks it\n",
		"DIFFERS out/zinc-gatedgcn-adj-r1/seed41: checkpoint.bin: unreadable: base readable, head unreadable (checksum mismatch",
		"DIFFERS out/zinc-monet-adj-r1/seed41: base lacks it, head has it\n",
		"bitcmp: base against head: 1 run, 3 files compared, 3 differ\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestMainExitStatus: 0 and a summary for identical trees, 2 for a missing tree or bad usage.
func TestMainExitStatus(t *testing.T) {
	dir := t.TempDir()
	newFakeRun().write(t, filepath.Join(dir, "a"))
	newFakeRun().write(t, filepath.Join(dir, "b"))
	var out, errs bytes.Buffer
	if code := Main([]string{filepath.Join(dir, "a"), filepath.Join(dir, "b")}, &out, &errs); code != 0 ||
		out.String() != "bitcmp: A against B: 1 run, 4 files identical\n" {
		t.Errorf("identical trees: exit %d, output %q, stderr %q", code, out.String(), errs.String())
	}
	for _, args := range [][]string{{filepath.Join(dir, "a")}, {"-x", "a", "b"}, {filepath.Join(dir, "a"), filepath.Join(dir, "none")}} {
		out.Reset()
		errs.Reset()
		if code := Main(args, &out, &errs); code != 2 || errs.Len() == 0 {
			t.Errorf("%q: exit %d, want 2 with a message; stderr %q", args, code, errs.String())
		}
	}
}

// TestTimingFieldsExist keeps the timing lists in step with runfiles and train: every listed
// field exists, and every field of runfiles.Epoch and runfiles.Result whose JSON key names
// seconds, and every float field of train.Loop, is either listed or known not to be timing.
func TestTimingFieldsExist(t *testing.T) {
	keys := func(v any) map[string]reflect.Kind {
		m := map[string]reflect.Kind{}
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			m[strings.Split(rt.Field(i).Tag.Get("json"), ",")[0]] = rt.Field(i).Type.Kind()
		}
		return m
	}
	for _, c := range []struct {
		file   string
		keys   map[string]reflect.Kind
		timing []string
	}{{"metrics.jsonl", keys(runfiles.Epoch{}), EpochTiming}, {"result.json", keys(runfiles.Result{}), ResultTiming}} {
		for _, k := range c.timing {
			if c.keys[k] != reflect.Float64 && c.keys[k] != reflect.Int64 {
				t.Errorf("%s: timing key %q is not a number field of its type", c.file, k)
			}
		}
		for k := range c.keys {
			if strings.Contains(k, "second") && !slices.Contains(c.timing, k) {
				t.Errorf("%s: key %q looks like timing but is compared", c.file, k)
			}
		}
	}
	ck := reflect.TypeOf(train.Checkpoint{})
	for _, p := range CheckpointTiming {
		rt := ck
		for _, name := range strings.Split(p, ".") {
			if rt.Kind() == reflect.Pointer {
				rt = rt.Elem()
			}
			f, ok := rt.FieldByName(name)
			if !ok {
				t.Fatalf("checkpoint timing field %s: train.Checkpoint has no %s", p, name)
			}
			rt = f.Type
		}
		if rt.Kind() != reflect.Float64 && rt.Kind() != reflect.Int64 {
			t.Errorf("checkpoint timing field %s is a %s", p, rt)
		}
	}
	loop := reflect.TypeOf(train.Loop{})
	for i := range loop.NumField() {
		f := loop.Field(i)
		if f.Type.Kind() == reflect.Float64 && !slices.Contains(CheckpointTiming, "Loop."+f.Name) {
			t.Errorf("train.Loop.%s is a float compared by bitcheck: list it in CheckpointTiming if it is a clock", f.Name)
		}
	}
}

// TestConfigNewZeroKey checks that a key one revision adds to config.yaml at its zero value is
// not a difference, and that a changed value, a new key away from zero and a key dropped away
// from zero still are.
func TestConfigNewZeroKey(t *testing.T) {
	base := "model:\n  name: transformer\n  score_scale: \"\"\ntrain:\n  lr: 0.001\n"
	same := []string{
		"model:\n  name: transformer\n  ffn_activation: \"\"\n  score_scale: \"\"\ntrain:\n  lr: 0.001\n",
		"model:\n  name: transformer\n  score_scale: \"\"\n  layers_extra: 0\n  flag: false\n  list: []\ntrain:\n  lr: 0.001\n",
	}
	for _, b := range same {
		if d := CompareText([]byte(base), []byte(b)); d != nil {
			t.Errorf("a new key at zero reported: %+v", d)
		}
		if d := CompareText([]byte(b), []byte(base)); d != nil {
			t.Errorf("a key dropped at zero reported: %+v", d)
		}
	}
	differ := []string{
		"model:\n  name: transformer\n  ffn_activation: gelu\n  score_scale: \"\"\ntrain:\n  lr: 0.001\n",
		"model:\n  name: transformer\n  score_scale: head\ntrain:\n  lr: 0.001\n",
		"model:\n  name: transformer\n  score_scale: \"\"\ntrain:\n  lr: 0\n",
	}
	for _, b := range differ {
		if d := CompareText([]byte(base), []byte(b)); d == nil {
			t.Errorf("%q against the base: no difference reported", b)
		}
	}
}
