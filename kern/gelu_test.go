package kern

import (
	"math"
	"testing"
)

// TestGeluMatchesDefinition checks gelu against values of PyTorch's tanh form and its
// derivative against central differences.
func TestGeluMatchesDefinition(t *testing.T) {
	for _, c := range []struct{ x, want float64 }{{0, 0}, {1, 0.8411919906082768}, {-1, -0.15880800939172324}, {3, 2.996362607918227}} {
		if got := gelu(c.x); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("gelu(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	for _, x := range []float64{-4, -1.3, -0.2, 0, 0.7, 2.5} {
		const h = 1e-6
		num := (gelu(x+h) - gelu(x-h)) / (2 * h)
		if got := geluGrad(x); math.Abs(got-num) > 1e-8 {
			t.Errorf("gelu'(%v) = %v, central difference %v", x, got, num)
		}
	}
	x := []float32{-2, -0.5, 0, 0.5, 2}
	out, dx := make([]float32, 5), make([]float32, 5)
	Gelu(out, x)
	GeluGrad(dx, x, []float32{1, 1, 1, 1, 1})
	for i := range x {
		if out[i] != float32(gelu(float64(x[i]))) || dx[i] != float32(geluGrad(float64(x[i]))) {
			t.Errorf("float32 gelu at %v: %v, %v", x[i], out[i], dx[i])
		}
	}
}
