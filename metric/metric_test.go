package metric

import (
	"math"
	"testing"
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
