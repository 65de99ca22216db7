package kern

import (
	"math"
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

// TestKernelMixInRegsIsLoop: KernelMix with each row's sums in registers (vKernelMix, on
// AVX-512) is the row loop of AxpyTo bit for bit: widths around the 16-column groups and the
// 64-column passes, one to five kernels, special values (signed zeros, infinities, NaN, values
// whose products overflow), and nothing written past out.
func TestKernelMixInRegsIsLoop(t *testing.T) {
	if !haveTailK {
		t.Skip("no AVX-512 on this CPU: KernelMix runs the row loop only")
	}
	defer func(saved bool) { tailK = saved }(tailK)
	rng := rand.New(rand.NewPCG(85, 86))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 3e38, -3e38}
	for _, kk := range []int{1, 2, 3, 5} {
		for _, m := range []int{1, 2, 7} {
			for _, d := range []int{1, 5, 15, 16, 17, 63, 64, 65, 90, 130} {
				x, w := randF32(rng, m*kk*d), randF32(rng, m*kk)
				for _, v := range [][]float32{x, w} {
					for i := range v {
						if rng.IntN(30) == 0 {
							v[i] = special[rng.IntN(len(special))]
						}
					}
				}
				var outs [2][]float32
				for k, regs := range []bool{false, true} {
					tailK = regs
					o := make([]float32, m*d+16) // 16 more, which must stay as they are
					for i := range o {
						o[i] = 12345
					}
					KernelMix(o[:m*d], x, w, m, kk, d)
					for i := m * d; i < len(o); i++ {
						if o[i] != 12345 {
							t.Fatalf("kk %d m %d d %d, registers %v: wrote past out (value %d)", kk, m, d, regs, i)
						}
					}
					outs[k] = o[:m*d]
				}
				for i := range outs[0] {
					a, b := outs[1][i], outs[0][i]
					if math.Float32bits(a) != math.Float32bits(b) && !(a != a && b != b) {
						t.Fatalf("kk %d m %d d %d: out[%d] = %v (%#x) in registers, %v (%#x) by the row loop", kk, m, d, i, a, math.Float32bits(a), b, math.Float32bits(b))
					}
				}
			}
		}
	}
}

// BenchmarkKernelMix is MoNet's kernel mix over an AQSOL-sized edge batch (20,000 rows, K = 3
// kernels of 90 columns), float32, one goroutine: the row loop, and the sums in registers.
func BenchmarkKernelMix(b *testing.B) {
	const m, kk, d = 20000, 3, 90
	rng := rand.New(rand.NewPCG(87, 88))
	x, w, out := randF32(rng, m*kk*d), randF32(rng, m*kk), make([]float32, m*d)
	defer func(saved bool) { tailK = saved }(tailK)
	for _, regs := range []bool{false, true} {
		if regs && !haveTailK {
			continue
		}
		b.Run(map[bool]string{false: "loop", true: "regs"}[regs], func(b *testing.B) {
			tailK = regs
			for b.Loop() {
				KernelMix(out, x, w, m, kk, d)
			}
		})
	}
}
