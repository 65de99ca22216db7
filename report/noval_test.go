package report

import (
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/report/results"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// TestNoValidationSplitShowsDash: the runs' statistics of a setting without a validation split
// (NeighborsMatch: result.json's val_split "none", no val_metric) show "–" for the validation
// metric, not 0.000 ± 0.000; a setting with one shows its mean ± std.
func TestNoValidationSplitShowsDash(t *testing.T) {
	var runs []*results.Run
	for _, c := range []struct {
		model, valSplit string
		val             float64
	}{{"gatedgcn", "none", 0}, {"gcn", "", 0.25}} {
		for _, seed := range []int64{41, 95} {
			res := &runfiles.Result{Name: "neighborsmatch-2-" + c.model + "-adj-r2", Dataset: "neighborsmatch-2", Model: c.model, Encoding: "adj",
				R: 2, Seed: seed, Metric: runfiles.MetricAccuracy, TestMetric: 90, ValMetric: c.val, TrainMetric: 95, Epochs: 10,
				SecondsPerEpoch: 1, TotalSeconds: 10, Params: 1000, Device: "cpu", StoppedBy: runfiles.StopMaxEpochs,
				ConfigHash: protocolHash, ValSplit: c.valSplit}
			runs = append(runs, &results.Run{Dir: res.Name + "/seed", Result: res})
		}
	}
	groups, err := results.Aggregate(runs, results.Options{DefaultPlanned: 2})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := Build("table:neighborsmatch-2", groups, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	md := tb.Markdown()
	for _, want := range []string{"| gatedgcn-adj | 2 | 2/2 | – | 95.000 ± 0.000 |", "| gcn-adj | 2 | 2/2 | 0.250 ± 0.000 | 95.000 ± 0.000 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}
