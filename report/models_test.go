package report

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/report/paper"
	"github.com/rewiregnn/rewiregnn/report/results"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// TestModelTable renders hand-made groups: GIN on ZINC at r = 1 (two seeds) and rewired with CLS
// at r = 4 (one, capped), GCN at r = 1 only, each beside its literature row where the paper has one.
func TestModelTable(t *testing.T) {
	f, err := paper.Load()
	if err != nil {
		t.Fatal(err)
	}
	res, _ := f.Table("table:results")
	var runs []*results.Run
	add := func(model string, cls bool, r int, seed int64, v float64, stop string) {
		rr := &runfiles.Result{Name: "zinc-" + model, Dataset: "zinc", Model: model, Encoding: "adj", CLS: cls, R: r, Seed: seed,
			Metric: runfiles.MetricMAE, TestMetric: v, ValMetric: v, TrainMetric: v, Epochs: 100 * r, Params: 91351 + 100*r,
			StoppedBy: stop, ConfigHash: protocolHash}
		runs = append(runs, &results.Run{Dir: filepath.Join("runs", model, string(rune('0'+r)), string(rune('0'+seed%10))), Result: rr})
	}
	add("gin", false, 1, 41, 0.30, runfiles.StopMinLR)
	add("gin", false, 1, 95, 0.34, runfiles.StopMinLR)
	add("gin", true, 4, 41, 0.16, runfiles.StopMaxTime)
	add("gcn", false, 1, 41, 0.40, runfiles.StopMinLR)
	groups, err := results.Aggregate(runs, results.Options{TableOf: func(*results.Run) string { return "table:results" }})
	if err != nil {
		t.Fatal(err)
	}
	md := (&ModelTable{Paper: res, Groups: groups}).Markdown()
	for _, want := range []string{
		"### ZINC (test mae, lower is better)",
		"| gin | 91451 / 91751 | 0.387 ± 0.015 (GIN(100K)) | 0.320 ± 0.020 (n = 2) †2/4 | 100, min_lr ×2 | 0.160 (n = 1) †1/4 ‡1, r = 4 + CLS | 400, max_time ×1 | -50.0% (better) |",
		"| gcn | 91451 | – | 0.400 (n = 1) †1/4 | 100, min_lr ×1 | – | – | – |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in\n%s", want, md)
		}
	}
	if strings.Index(md, "| gin |") > strings.Index(md, "| gcn |") {
		t.Errorf("rows out of order:\n%s", md)
	}
}
