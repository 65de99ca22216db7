package train

import (
	"math"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

func TestMeters(t *testing.T) {
	// MAE: mean over batches of the per-batch mean.
	m := NewMeter(runfiles.MetricMAE, 0)
	m.Add(0, []float64{1, 2}, &data.Batch{NumGraphs: 2, Y: []float32{0, 0}})
	m.Add(0, []float64{4}, &data.Batch{NumGraphs: 1, Y: []float32{0}})
	if got := m.Value(); got != (1.5+4)/2 {
		t.Fatalf("MAE %v", got)
	}
	// Accuracy: correct over the split, in %.
	a := NewMeter(runfiles.MetricAccuracy, 3)
	a.Add(0, []float64{0, 1, 0, 5, 0, 0}, &data.Batch{NumGraphs: 2, Labels: []int32{1, 1}})
	a.Add(0, []float64{0, 0, 1}, &data.Batch{NumGraphs: 1, Labels: []int32{2}})
	if got := a.Value(); math.Abs(got-200.0/3) > 1e-12 {
		t.Fatalf("accuracy %v", got)
	}
	// Weighted: the CLS node (label −1) is left out; balanced over the split.
	w := NewMeter(runfiles.MetricWeightedAcc, 2)
	bt := &data.Batch{Union: data.Graph{NodeLabel: []int32{0, 0, 1, -1}}}
	w.Add(0, []float64{1, 0, 0, 1, 0, 1, 9, 0}, bt)
	if got := w.Value(); got != 75 {
		t.Fatalf("weighted accuracy %v", got)
	}
	if got := w.Balanced(); got != 75 {
		t.Fatalf("balanced accuracy %v", got)
	}
}
