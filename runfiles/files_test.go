package runfiles

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestReadResultErrors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "result.json")
	cases := []struct {
		body string
		want string
	}{
		{`{"name":"x"`, "unexpected EOF"},
		{`{"name":"x","bogus":1}`, `unknown field "bogus"`},
		{`{"name":"x","dataset":"zinc","model":"gatedgcn","r":1,"epochs":3,"metric":"mse","stopped_by":"min_lr"}`, `"metric" is "mse"`},
		{`{"name":"x","dataset":"zinc","model":"gatedgcn","r":1,"epochs":0,"metric":"mae","stopped_by":"min_lr"}`, `"epochs" is 0`},
		{`{"name":"x","dataset":"zinc","model":"gatedgcn","r":1,"epochs":-1,"metric":"mae","stopped_by":"signal"}`, `"epochs" is -1`},
		{`{"dataset":"zinc"}`, `"name" is missing`},
		{`{"name":"x","dataset":"zinc","model":"gatedgcn","r":1,"epochs":3,"metric":"mae","stopped_by":"tired"}`, `"stopped_by" is "tired"`},
	}
	for _, c := range cases {
		os.WriteFile(p, []byte(c.body), 0o644)
		_, err := ReadResult(p)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: got %v, want an error naming the file and %q", c.body, err, c.want)
		}
	}
}

func TestReadMetrics(t *testing.T) {
	p := filepath.Join(t.TempDir(), "metrics.jsonl")
	os.WriteFile(p, []byte(`{"epoch":0,"lr":0.001,"val_loss":1}`+"\n"+`{"epoch":1,"lr":0.001,"val_loss":0.5}`+"\n"), 0o644)
	e, err := ReadMetrics(p)
	if err != nil || len(e) != 2 || e[1].ValLoss != 0.5 {
		t.Fatalf("%v %+v", err, e)
	}
	os.WriteFile(p, []byte(`{"epoch":0}`+"\n"+`{"epoch":1,`+"\n"), 0o644)
	if _, err := ReadMetrics(p); err == nil || !strings.Contains(err.Error(), p+":2:") {
		t.Errorf("got %v, want the line named", err)
	}
}

// TestFilesRoundTrip writes a result, metrics and a checkpoint and reads them back; the
// metrics reader refuses epochs out of order and the checkpoint reader a damaged file.
func TestFilesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	res := &Result{Name: "x", Dataset: "zinc", Model: "gatedgcn", R: 1, Seed: 41, Metric: MetricMAE,
		TestMetric: 0.5, Epochs: 2, StoppedBy: StopMinLR, ConfigHash: strings.Repeat("ab", 32),
		Departures: []Departure{{Key: "dataset.subset", Protocol: "0", Used: "10"}},
		Reductions: []Reduction{{Key: "train.max_time", Default: "12h", Configured: "10m"}}}
	if err := WriteResult(filepath.Join(dir, ResultFile), res); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadResult(filepath.Join(dir, ResultFile)); err != nil || !reflect.DeepEqual(got, res) {
		t.Fatalf("result read back %+v (%v), want %+v", got, err, res)
	}
	eps := []Epoch{{Epoch: 0, LR: 1e-3}, {Epoch: 1, LR: 5e-4, ValLoss: 0.25, ConfigHash: res.ConfigHash, Departures: res.Departures}}
	mp := filepath.Join(dir, MetricsFile)
	if err := WriteMetrics(mp, eps); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadMetrics(mp); err != nil || len(got) != 2 || !reflect.DeepEqual(got[1], eps[1]) {
		t.Fatalf("metrics read back %+v (%v)", got, err)
	}
	if err := WriteMetrics(mp, eps[1:]); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadMetrics(mp); err == nil || !strings.Contains(err.Error(), mp+":1: epoch 1, want 0") {
		t.Errorf("out-of-order epochs: got %v", err)
	}

	type state struct {
		Step  uint64
		Names []string
	}
	cp := filepath.Join(dir, CheckpointFile)
	if err := WriteCheckpoint(cp, &state{Step: 7, Names: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	var back state
	if err := ReadCheckpoint(cp, &back); err != nil || back.Step != 7 || len(back.Names) != 2 {
		t.Fatalf("checkpoint read back %+v (%v)", back, err)
	}
	b, _ := os.ReadFile(cp)
	b[len(b)/2] ^= 0xff
	os.WriteFile(cp, b, 0o644)
	if err := ReadCheckpoint(cp, &back); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Errorf("a damaged checkpoint: got %v", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 3 {
		t.Errorf("%d entries in the run directory, want 3", len(ents))
	}
}

// TestResultInterruptedInFirstEpoch: a run stopped by a signal inside its first epoch records 0
// epochs; its result verifies (the sweep then resumes it instead of reporting a broken file).
func TestResultInterruptedInFirstEpoch(t *testing.T) {
	p := filepath.Join(t.TempDir(), ResultFile)
	res := &Result{Name: "x", Dataset: "zinc", Model: "gatedgcn", R: 1, Seed: 41, Metric: MetricMAE, StoppedBy: StopSignal,
		ConfigHash: strings.Repeat("ab", 32)}
	if err := WriteResult(p, res); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadResult(p); err != nil || got.Epochs != 0 {
		t.Errorf("read back %+v, %v", got, err)
	}
}

// TestDivergedResultHasNoMetrics: a run that diverged in its first epoch writes a result.json
// that says so (stopped_by nan) and holds no metric keys, and it reads back as a valid, diverged
// result; an older diverged file's figures are dropped on reading.
func TestDivergedResultHasNoMetrics(t *testing.T) {
	p := filepath.Join(t.TempDir(), ResultFile)
	res := &Result{Name: "x", Dataset: "zinc", Model: "gatedgcn", R: 1, Seed: 41, Metric: MetricMAE,
		TestMetric: 0.5, ValMetric: 0.25, Epochs: 0, StoppedBy: StopNaN}
	if err := WriteResult(p, res); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	for _, k := range []string{`"test_metric"`, `"val_metric"`, `"train_metric"`} {
		if strings.Contains(string(b), k) {
			t.Errorf("a diverged result.json holds %s:\n%s", k, b)
		}
	}
	if !strings.Contains(string(b), `"stopped_by": "nan"`) {
		t.Errorf("no stopped_by nan:\n%s", b)
	}
	got, err := ReadResult(p)
	if err != nil {
		t.Fatalf("a diverged result does not read back: %v", err)
	}
	if !got.Diverged() || got.TestMetric != 0 || got.Epochs != 0 || !strings.HasPrefix(got.Reportable(), "diverged") {
		t.Errorf("read back %+v, reason %q", got, got.Reportable())
	}
	os.WriteFile(p, []byte(`{"name":"x","dataset":"zinc","model":"gatedgcn","r":1,"epochs":3,"metric":"mae","test_metric":0.7,"stopped_by":"nan"}`), 0o644)
	if got, err := ReadResult(p); err != nil || got.TestMetric != 0 {
		t.Errorf("an older diverged file: %+v, %v", got, err)
	}
	res.StoppedBy = StopMinLR
	if err := WriteResult(p, res); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); !strings.Contains(string(b), `"test_metric": 0.5`) {
		t.Errorf("a finished result lost its metric:\n%s", b)
	}
}

// TestPredictionsValues: the outputs of a multi-target or multi-label task round-trip, and
// ragged rows are refused.
func TestPredictionsValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), PredictionsFile)
	p := &Predictions{Run: "x", Dataset: "peptides-func", Seed: 1, BatchSize: 2, Values: [][]float32{{0.5, -1}, {2, 3}}}
	if err := WritePredictions(path, p); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadPredictions(path); err != nil || !reflect.DeepEqual(got, p) {
		t.Fatalf("read back %+v (%v), want %+v", got, err, p)
	}
	p.Values[1] = p.Values[1][:1]
	if err := WritePredictions(path, p); err == nil || !strings.Contains(err.Error(), "test graph 1 has 1 outputs, graph 0 has 2") {
		t.Errorf("ragged outputs: %v", err)
	}
	res := &Result{Name: "x", Dataset: "d", Model: "gatedgcn", R: 1, Seed: 41, Metric: MetricAP, TestMetric: 0.6,
		Epochs: 2, StoppedBy: StopMinLR, ConfigHash: strings.Repeat("ab", 32)}
	if err := WriteResult(filepath.Join(t.TempDir(), ResultFile), res); err != nil {
		t.Errorf("a result scored by AP: %v", err)
	}
}
