package metric

import (
	"math"
	"strings"
	"testing"
)

var nan = float32(math.NaN())

// Hand cases of one task's average precision, AP = Σ_n (R_n − R_{n−1})·P_n over the distinct
// scores in decreasing order.
func TestTaskAP(t *testing.T) {
	cases := []struct {
		name   string
		scores []float64
		pos    []bool
		want   float64
	}{
		// a perfect ranking: the first threshold reaches R = 1 at P = 1
		{"perfect", []float64{0.9, 0.8, 0.1}, []bool{true, true, false}, 1},
		// the worst: 0.9 (−): R 0; 0.8 (+): R 1/2, P 1/2; 0.1 (+): R 1, P 2/3
		// → 1/2·1/2 + 1/2·2/3 = 1/4 + 1/3 = 7/12
		{"reversed", []float64{0.9, 0.8, 0.1}, []bool{false, true, true}, 7.0 / 12},
		// ties: P = 3. 0.9 (+): tp 1 of 1 seen, R 1/3, P 1 → 1/3;
		// 0.8 ×2 (one +): tp 2 of 3 seen, R 2/3, P 2/3 → 1/3·2/3 = 2/9;
		// 0.3 (−): R unchanged → 0; 0.1 (+): tp 3 of 5, R 1, P 3/5 → 1/3·3/5 = 1/5.
		// AP = 1/3 + 2/9 + 1/5 = 34/45 (0.8 entries entering one at a time would give
		// 1/3 + 0 + 1/3·2/3 or 1/3 + 1/3·1 + 0 + …, so the grouping matters)
		{"ties", []float64{0.9, 0.8, 0.8, 0.3, 0.1}, []bool{true, false, true, false, true}, 34.0 / 45},
		// all scores equal: one threshold, R 1, P 1/3
		{"all tied", []float64{0.5, 0.5, 0.5}, []bool{true, false, false}, 1.0 / 3},
	}
	for _, c := range cases {
		if got := TaskAP(c.scores, c.pos); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("%s: AP %.17g, want %.17g", c.name, got, c.want)
		}
	}
	if got := TaskAP([]float64{1, 2}, []bool{false, false}); !math.IsNaN(got) {
		t.Errorf("no positive: AP %g, want NaN", got)
	}
}

// TestAveragePrecision: the mean over the tasks that have a positive and a negative labelled
// entry, each over its labelled entries only.
func TestAveragePrecision(t *testing.T) {
	// 5 graphs × 4 tasks, row-major.
	//   task 0: the "ties" case of TestTaskAP: 34/45.
	//   task 1: no positive (0, 0, NaN, 0, 0): skipped.
	//   task 2: scores 0.2, 0.7, 0.4, 0.9, 0.6, labels 1, NaN, 0, 0, 1. The labelled entries
	//     in decreasing score: 0.9 (−), 0.6 (+), 0.4 (−), 0.2 (+), P = 2:
	//     0.9: R 0 → 0; 0.6: R 1/2, P 1/2 → 1/4; 0.4: → 0; 0.2: R 1, P 2/4 → 1/4; AP = 1/2.
	//     (Counting the NaN row at 0.7 as a negative would give 1/2·1/3 + 1/2·2/5 = 11/30.)
	//   task 3: no negative (1, 1, NaN, 1, 1): skipped.
	// Mean over tasks 0 and 2: (34/45 + 1/2)/2 = 113/180.
	scores := []float64{
		0.9, 0.3, 0.2, 5,
		0.8, 0.1, 0.7, 4,
		0.8, 0.6, 0.4, 3,
		0.3, 0.2, 0.9, 2,
		0.1, 0.9, 0.6, 1,
	}
	labels := []float32{
		1, 0, 1, 1,
		0, 0, nan, 1,
		1, nan, 0, nan,
		0, 0, 0, 1,
		1, 0, 1, 1,
	}
	got, err := AveragePrecision(scores, labels, 4)
	if err != nil {
		t.Fatal(err)
	}
	if want := 113.0 / 180; math.Abs(got-want) > 1e-15 {
		t.Errorf("AP %.17g, want %.17g", got, want)
	}

	for _, c := range []struct {
		name   string
		scores []float64
		labels []float32
		cols   int
		want   string
	}{
		{"no task qualifies", []float64{1, 2, 3, 4}, []float32{1, 0, 1, nan}, 2, "none of the 2 tasks"},
		{"a label that is not binary", []float64{1, 2}, []float32{1, 0.5}, 1, "row 1, task 0: label 0.5"},
		{"a NaN score", []float64{1, math.NaN()}, []float32{1, 0}, 1, "row 1, task 0: the score is NaN"},
		{"lengths", []float64{1, 2, 3}, []float32{1, 0}, 1, "3 scores and 2 labels"},
		{"ragged", []float64{1, 2, 3}, []float32{1, 0, 1}, 2, "in 2 columns"},
	} {
		if _, err := AveragePrecision(c.scores, c.labels, c.cols); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// TestMAE: the mean over every entry of a multi-target prediction.
func TestMAE(t *testing.T) {
	// |1 − 1.5| + |2 − 2| + |3 − 0| + |4 − 4| + |5 − 5| + |6 − 7| = 4.5 over 6 entries
	if got := MAE([]float64{1, 2, 3, 4, 5, 6}, []float32{1.5, 2, 0, 4, 5, 7}); got != 0.75 {
		t.Errorf("MAE %g, want 0.75", got)
	}
}
