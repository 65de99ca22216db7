package kern

import (
	"math"
	"testing"
)

// TestGatedSigmoid checks σ in the gated aggregation's float32 row loop against float64 on a
// wide range of arguments.
func TestGatedSigmoid(t *testing.T) {
	var e []float32
	for x := -120.0; x <= 120; x += 0.0137 {
		e = append(e, float32(x))
	}
	e = append(e, 0, -0, 88.37, -88.37, 88.4, -88.4, float32(math.Inf(1)), float32(math.Inf(-1)), 1e-30, -1e-30, float32(math.NaN()))
	n := len(e)
	eta, num, den, b := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	GatedFwdSigRow(eta, num, den, e, b)
	for i, x := range e[:n-1] {
		want := 1 / (1 + math.Exp(-float64(x)))
		got := float64(eta[i])
		if d := math.Abs(got - want); d > 3e-7*want && d > 1e-37 {
			t.Fatalf("σ(%v) = %v, want %v", x, got, want)
		}
		if den[i] != eta[i] {
			t.Fatalf("den[%d] = %v, want σ = %v", i, den[i], eta[i])
		}
	}
	if !math.IsNaN(float64(eta[n-1])) {
		t.Errorf("σ(NaN) = %v", eta[n-1])
	}
}
