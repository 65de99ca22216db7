package main

import (
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/rewiregnn/rewiregnn/runfiles"
	"github.com/rewiregnn/rewiregnn/train"
)

// The comparisons of two run directories the tests share.

// epochsOf reads the epochs of runs a and b (metrics.jsonl) and fails unless they have as many.
func epochsOf(t *testing.T, a, b string) (ea, eb []runfiles.Epoch) {
	t.Helper()
	var err error
	if ea, err = runfiles.ReadMetrics(filepath.Join(a, runfiles.MetricsFile)); err != nil {
		t.Fatal(err)
	}
	if eb, err = runfiles.ReadMetrics(filepath.Join(b, runfiles.MetricsFile)); err != nil {
		t.Fatal(err)
	}
	if len(ea) != len(eb) {
		t.Fatalf("%s: %d epochs, %s: %d", a, len(ea), b, len(eb))
	}
	return ea, eb
}

// sameTimelessEpochs fails unless every epoch of ea equals eb's, timings left out.
func sameTimelessEpochs(t *testing.T, ea, eb []runfiles.Epoch) {
	t.Helper()
	for i := range ea {
		x, y := ea[i], eb[i]
		x.Seconds, x.EvalSeconds, x.Elapsed, x.PeakBytes = 0, 0, 0, 0
		y.Seconds, y.EvalSeconds, y.Elapsed, y.PeakBytes = 0, 0, 0, 0
		if !reflect.DeepEqual(x, y) {
			t.Fatalf("epoch %d differs:\n%+v\n%+v", i, x, y)
		}
	}
}

// resultsOf reads the results of runs a and b (result.json).
func resultsOf(t *testing.T, a, b string) (ra, rb *runfiles.Result) {
	t.Helper()
	var err error
	if ra, err = runfiles.ReadResult(filepath.Join(a, runfiles.ResultFile)); err != nil {
		t.Fatal(err)
	}
	if rb, err = runfiles.ReadResult(filepath.Join(b, runfiles.ResultFile)); err != nil {
		t.Fatal(err)
	}
	return ra, rb
}

// sameParams fails unless the checkpoints of runs a and b hold the same parameters, bit for bit.
func sameParams(t *testing.T, a, b string) {
	t.Helper()
	ca, err := train.ReadCheckpoint(filepath.Join(a, runfiles.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	cb, err := train.ReadCheckpoint(filepath.Join(b, runfiles.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(ca.Params) == 0 || len(ca.Params) != len(cb.Params) {
		t.Fatalf("%d and %d parameters", len(ca.Params), len(cb.Params))
	}
	for name, v := range ca.Params {
		if !slices.Equal(v, cb.Params[name]) {
			t.Fatalf("parameter %s differs", name)
		}
	}
}
