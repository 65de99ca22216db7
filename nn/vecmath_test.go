package nn

import (
	"math"
	"testing"
)

func TestSigmoidFloat32(t *testing.T) {
	var src []float32
	for x := -120.0; x <= 120; x += 0.0137 {
		src = append(src, float32(x))
	}
	src = append(src, 0, -0, 88.37, -88.37, 88.4, -88.4, float32(math.Inf(1)), float32(math.Inf(-1)), 1e-30, -1e-30)
	dst := make([]float32, len(src))
	sigmoidInto(dst, src)
	for i, x := range src {
		want := 1 / (1 + math.Exp(-float64(x)))
		got := float64(dst[i])
		if d := math.Abs(got - want); d > 3e-7*want && d > 1e-37 {
			t.Fatalf("σ(%v) = %v, want %v", x, got, want)
		}
	}
	nan := []float32{float32(math.NaN()), 1, 2, 3, 4, 5, 6, 7}
	sigmoidInto(nan, nan)
	if !math.IsNaN(float64(nan[0])) {
		t.Errorf("σ(NaN) = %v", nan[0])
	}
}
