package train

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// TestScoresShowOnlyTheSplitsRun: no val figure without a validation split, and a test figure
// measured on the training split says so; a diverged run shows no figure.
func TestScoresShowOnlyTheSplitsRun(t *testing.T) {
	for _, c := range []struct {
		res  runfiles.Result
		want string
	}{
		{runfiles.Result{Metric: "mae", TestMetric: 0.25, ValMetric: 0.5, TrainMetric: 0.125},
			"test mae 0.2500, val 0.5000, train 0.1250"},
		{runfiles.Result{Metric: "accuracy", TestMetric: 0.75, TrainMetric: 1, ValSplit: "none"},
			"test accuracy 0.7500, train 1.0000"},
		{runfiles.Result{Metric: "accuracy", TestMetric: 1, ValMetric: 0.5, TrainMetric: 1, TestSplit: "train"},
			"test (on train) accuracy 1.0000, val 0.5000, train 1.0000"},
		{runfiles.Result{Metric: "mae", StoppedBy: runfiles.StopNaN}, "diverged (non-finite loss): no metrics"},
	} {
		if got := Scores(&c.res); got != c.want {
			t.Errorf("Scores = %q, want %q", got, c.want)
		}
	}
}

// TestDivergedInFirstEpoch: a run whose loss is not finite in epoch 0 writes a result.json that
// reads back as diverged (epochs 0, no metric key) and its summary line shows no metric; its
// error names no checkpoint (none was written) but what the folder holds and the way out.
func TestDivergedInFirstEpoch(t *testing.T) {
	c := nm2(t, "train.batch_size=16", "train.max_epochs=3")
	var log bytes.Buffer
	o := Options{Run: c, Seed: 12, Dir: c.Dir(12), Workers: 1, Log: &log,
		AfterBatch: func(e, b int, p *nn.Params) { p.T[p.Names[0]].Float32s()[0] = float32(math.NaN()) }}
	_, err := Train(context.Background(), o)
	if !errors.Is(err, ErrNaN) {
		t.Fatalf("error %v, want ErrNaN", err)
	}
	// no checkpoint to speak of: the error says what the folder holds and how to start afresh
	for _, part := range []string{"nothing is resumable", "no checkpoint was written", "config.yaml", "result.json with stopped_by nan", "add `-set train.lr=0.0001 -restart`"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("the error does not say %q: %v", part, err)
		}
	}
	if s := err.Error() + log.String(); strings.Contains(s, "epoch -1") || strings.Contains(s, "last good checkpoint") {
		t.Errorf("a checkpoint that does not exist is named: %s", s)
	}
	p := filepath.Join(c.Dir(12), runfiles.ResultFile)
	res, err := runfiles.ReadResult(p)
	if err != nil || !res.Diverged() || res.Epochs != 0 {
		t.Fatalf("result %+v (%v)", res, err)
	}
	if b, _ := os.ReadFile(p); strings.Contains(string(b), "test_metric") {
		t.Errorf("result.json holds a metric:\n%s", b)
	}
	if s := log.String(); !strings.Contains(s, "diverged") || strings.Contains(s, "test accuracy") {
		t.Errorf("log:\n%s", s)
	}
}
