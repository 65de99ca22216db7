package cuda

import (
	"fmt"
	"testing"

	"github.com/rewiregnn/rewiregnn/ops"
)

// TestGPUMatMulAddGradX: dx₀ + g·wᵀ from MatMulAddGradX against dx₀ plus the CPU twin's dx of
// the same product, including an empty inner dimension (b = 0: dx stays dx₀).
func TestGPUMatMulAddGradX(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range sizes {
		a, b := sz.d, 1+(sz.d*7)%40
		t.Run(fmt.Sprintf("m%d_a%d_b%d", sz.n, a, b), func(t *testing.T) {
			tw := newTwin(t, uint64(900+i))
			xv, wv, dy, acc := tw.randn(sz.n*a), tw.randn(a*b), tw.randn(sz.n*b), tw.randn(sz.n*a)
			x, w := tw.mat("x", xv, sz.n, a), tw.mat("W", wv, a, b)
			_, grads := tw.run(tw.ok(ops.MatMul(x, w)), dy, x, w)
			want := make([]float32, len(acc))
			for j := range want {
				want[j] = acc[j] + grads[0][j]
			}
			d, k := gpu(t)
			g := dev{t, d}
			dx := g.up(acc)
			must(t, k.MatMulAddGradX(dx, g.up(wv), g.up(dy), sz.n, a, b))
			near(t, "dx₀ + g·wᵀ", g.down(dx, sz.n*a), want, reduce)

			dx = g.up(acc)
			must(t, k.MatMulAddGradX(dx, g.up(wv), g.up(dy), sz.n, a, 0))
			near(t, "dx₀ (no inner dimension)", g.down(dx, sz.n*a), acc, exact)
		})
	}
}
