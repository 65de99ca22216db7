package kern

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkKernelMixDW is MoNet's kernel-mix weight gradient over an AQSOL-sized edge batch
// (20,000 rows, K = 3 kernels of 90 columns), float32, one goroutine.
func BenchmarkKernelMixDW(b *testing.B) {
	const m, kk, d = 20000, 3, 90
	rng := rand.New(rand.NewPCG(83, 84))
	x, g, dw := randF32(rng, m*kk*d), randF32(rng, m*d), make([]float32, m*kk)
	for b.Loop() {
		KernelMixBackward(nil, dw, x, nil, g, m, kk, d)
	}
}
