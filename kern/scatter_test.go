package kern

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestScatterAddInRegsIsLoop: ScatterAddRows without weights, each destination's sums in
// registers (scatterAddInRegs, on AVX-512), is the loop over the source rows bit for bit:
// indices in any order, -1 (no destination), destinations no row reaches, widths around the 16-
// and 64-column steps, special values (signed zeros, infinities, NaN, sums that overflow); with
// weights it keeps the loop.
func TestScatterAddInRegsIsLoop(t *testing.T) {
	if !haveTailK {
		t.Skip("no AVX-512 on this CPU: ScatterAddRows runs the loop only")
	}
	defer func(saved bool) { tailK = saved }(tailK)
	rng := rand.New(rand.NewPCG(89, 90))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 3e38, -3e38}
	for _, m := range []int{0, 1, 5, 300} {
		for _, nodes := range []int{1, 7, 100} {
			for _, cols := range []int{1, 15, 16, 17, 64, 65, 90, 130} {
				src := randF32(rng, m*cols)
				for i := range src {
					if rng.IntN(25) == 0 {
						src[i] = special[rng.IntN(len(special))]
					}
				}
				idx := make([]int32, m)
				for i := range idx {
					idx[i] = int32(rng.IntN(nodes+1)) - 1 // -1: none
				}
				var outs [2][]float32
				for k, regs := range []bool{false, true} {
					tailK = regs
					o := make([]float32, nodes*cols+16) // 16 more, which must stay as they are
					for i := range o {
						o[i] = 12345
					}
					ScatterAddRows(o[:nodes*cols], src, cols, idx, nil)
					for i := nodes * cols; i < len(o); i++ {
						if o[i] != 12345 {
							t.Fatalf("m %d nodes %d cols %d, registers %v: wrote past dst (value %d)", m, nodes, cols, regs, i)
						}
					}
					outs[k] = o[:nodes*cols]
				}
				for i := range outs[0] {
					a, b := outs[1][i], outs[0][i]
					if math.Float32bits(a) != math.Float32bits(b) && !(a != a && b != b) {
						t.Fatalf("m %d nodes %d cols %d: dst[%d] = %v (%#x) in registers, %v (%#x) by the loop", m, nodes, cols, i, a, math.Float32bits(a), b, math.Float32bits(b))
					}
				}
			}
		}
	}
}

// BenchmarkScatterAdd is MoNet's message sum over an AQSOL-sized edge batch (20,000 edges of 90
// columns into 2,500 nodes, the edges in destination order as a batch has them, and shuffled),
// float32, one goroutine: the loop, and the sums in registers.
func BenchmarkScatterAdd(b *testing.B) {
	const m, nodes, cols = 20000, 2500, 90
	rng := rand.New(rand.NewPCG(91, 92))
	src, dst := randF32(rng, m*cols), make([]float32, nodes*cols)
	sorted := make([]int32, m)
	for i := range sorted {
		sorted[i] = int32(i * nodes / m)
	}
	shuffled := append([]int32(nil), sorted...)
	rng.Shuffle(m, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	defer func(saved bool) { tailK = saved }(tailK)
	for _, order := range []struct {
		name string
		idx  []int32
	}{{"sorted", sorted}, {"shuffled", shuffled}} {
		for _, regs := range []bool{false, true} {
			if regs && !haveTailK {
				continue
			}
			b.Run(order.name+"/"+map[bool]string{false: "loop", true: "regs"}[regs], func(b *testing.B) {
				tailK = regs
				for b.Loop() {
					ScatterAddRows(dst, src, cols, order.idx, nil)
				}
			})
		}
	}
}
