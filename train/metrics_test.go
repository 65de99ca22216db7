package train

import (
	"math"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// Hand cases of the per-batch SBM accuracy.
func TestSBMAccuracy(t *testing.T) {
	cases := []struct {
		y, p []int32
		want float64
	}{
		// all right, two classes: recalls 1, 1
		{[]int32{0, 1, 1, 0}, []int32{0, 1, 1, 0}, 100},
		// class 0: 1 of 2 right; class 1: 2 of 2 → (0.5 + 1)/2
		{[]int32{0, 0, 1, 1}, []int32{0, 1, 1, 1}, 75},
		// a predicted class (2) with no target joins the set: K = 3, rec_2 = 0 → (1 + 1 + 0)/3
		{[]int32{0, 1, 1}, []int32{0, 1, 2}, 100 * (1 + 0.5 + 0) / 3},
		// labels {1, 2} only: positions 0, 1 hold labels 1, 2; r = 0 has no target equal to 0
		// (rec 0) and r = 1 compares CM[1][1] (label 2 predicted 2: 1) with #{y = 1} = 2,
		// as the reference code does: (0 + 0.5)/2
		{[]int32{1, 1, 2}, []int32{1, 2, 2}, 100 * (0 + 0.5) / 2},
	}
	for i, c := range cases {
		if got := SBMAccuracy(c.y, c.p); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("case %d: %v, want %v", i, got, c.want)
		}
	}
}

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
