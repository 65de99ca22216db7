package train

import (
	"testing"

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
		{runfiles.Result{Metric: "mae", StoppedBy: runfiles.StopNaN}, "diverged (non-finite training loss): no metrics"},
	} {
		if got := Scores(&c.res); got != c.want {
			t.Errorf("Scores = %q, want %q", got, c.want)
		}
	}
}
