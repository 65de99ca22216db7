package kern

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMatMulFloat32Fallback runs the float32 product checks with the assembly kernel switched
// off, as on CPUs without AVX2/FMA.
func TestMatMulFloat32Fallback(t *testing.T) {
	saved := haveKernel
	haveKernel = false
	defer func() { haveKernel = saved }()
	TestMatMulFloat32(t)
}

// TestKern12WholeRow checks that one kern12x16 call over cols columns computes, bit for bit,
// what one call per block of 16 columns computes (nnRows makes the first for a whole row block
// and the second for the last, overlapping one), with and without bias and accumulation, and
// writes nothing past column cols of a row (C's rows are longer, ldc > cols).
func TestKern12WholeRow(t *testing.T) {
	if !haveTailK || !haveKernel {
		t.Skip("no AVX-512 kernel on this machine")
	}
	rng := rand.New(rand.NewPCG(51, 52))
	for _, n := range []int{1, 5, 15, 16, 17, 31, 32, 33, 48, 70, 100} {
		for _, k := range []int{1, 7, 70} {
			for _, acc := range []int{0, 1} {
				for _, withBias := range []bool{false, true} {
					ldb, ldc := n+3, n+5
					a, b := randF32(rng, 12*k), randF32(rng, k*ldb)
					var bias []float32
					if withBias {
						bias = randF32(rng, n)
					}
					c0 := randF32(rng, 12*ldc)
					whole, blocks := append([]float32(nil), c0...), append([]float32(nil), c0...)
					kern12x16(a, k, 1, b, ldb, whole, ldc, k, acc, bias, n)
					for j := 0; j < n; j += nr {
						cols := min(nr, n-j)
						var bj []float32
						if withBias {
							bj = bias[j : j+cols]
						}
						kern12x16(a, k, 1, b[j:], ldb, blocks[j:], ldc, k, acc, bj, cols)
					}
					for i := range whole {
						if math.Float32bits(whole[i]) != math.Float32bits(blocks[i]) {
							t.Fatalf("n=%d k=%d acc=%d bias=%v: C[%d,%d] = %v in one call, %v block by block", n, k, acc, withBias, i/ldc, i%ldc, whole[i], blocks[i])
						}
						if i%ldc >= n && whole[i] != c0[i] {
							t.Fatalf("n=%d k=%d: C[%d,%d] past the columns was written", n, k, i/ldc, i%ldc)
						}
					}
				}
			}
		}
	}
}
