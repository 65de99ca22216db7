package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestReductionsIndependentOfThreads runs every kernel that sums over a long dimension (the
// products' xᵀ·g, the fused linear gradient, column and scatter sums, batch norm's statistics
// and gradients, layer norm's parameter gradients, in float32 and float64,
// on the assembly kernel and off it) with 1, 2, 3, 4 and 8 goroutines, on sizes with many
// chunks, and requires the same bits each time.
func TestReductionsIndependentOfThreads(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewPCG(51, 52))
	const m, a, b, narrow = 20011, 70, 37, 9
	x, w, dy := randF32(rng, m*a), randF32(rng, a*b), randF32(rng, m*b)
	x64, dy64 := widen(x), widen(dy)
	idx := make([]int32, m)
	for i := range idx {
		idx[i] = int32(rng.IntN(3000))
	}
	keep := make([]bool, m)
	for i := range keep {
		keep[i] = rng.IntN(7) != 0
	}
	gamma, beta := randF32(rng, b), randF32(rng, b)
	run := func() map[string][]float64 {
		out := map[string][]float64{}
		var sc, sc64 Scratch
		dw := make([]float32, a*b)
		MatMulTN(&sc, dw, x, dy, m, a, b)
		out["xᵀ·g float32"] = widen(dw)
		dn := make([]float32, a*narrow)
		MatMulTN(&sc, dn, x, dy[:m*narrow], m, a, narrow) // n < nr: the generic path
		out["xᵀ·g float32 narrow"] = widen(dn)
		d64 := make([]float64, a*b)
		MatMulTN(&sc64, d64, x64, dy64, m, a, b)
		out["xᵀ·g float64"] = d64
		var tn TNBuffers
		dx, dwl, db := make([]float32, m*a), make([]float32, a*b), make([]float32, b)
		if LinearGrad32(dx, dwl, db, x, w, dy, nil, m, a, b, &tn) {
			out["linear dx"], out["linear dw"], out["linear db"] = widen(dx), widen(dwl), widen(db)
		}
		cs := make([]float32, b)
		ColSum(cs, dy)
		out["column sum"] = widen(cs)
		sa := make([]float64, 3000*b)
		ScatterAddRows(sa, dy64, b, idx, nil)
		out["scatter"] = sa
		for _, relu := range []bool{false, true} {
			var bs BNScratch
			bn := BatchNormBufs[float32]{X: dy, Gamma: gamma, Beta: beta, Keep: keep, RunMean: make([]float64, b),
				RunVar: make([]float64, b), Out: make([]float32, m*b), Mean: make([]float64, b), InvStd: make([]float64, b), Scratch: &bs}
			BatchNorm(bn, m, b, true, BNOpts{Eps: 1e-5, Momentum: 0.1, Relu: relu})
			name := fmt.Sprintf("batch norm relu=%v ", relu)
			out[name+"out"], out[name+"mean"], out[name+"1/σ"] = widen(bn.Out), bn.Mean, bn.InvStd
			out[name+"running"] = append(bn.RunMean, bn.RunVar...)
			bdx, bdg, bdb := make([]float32, m*b), make([]float32, b), make([]float32, b)
			BatchNormBackward(bdx, bdg, bdb, x[:m*b], bn, m, b, true, relu, nil)
			out[name+"dx"], out[name+"dγ"], out[name+"dβ"] = widen(bdx), widen(bdg), widen(bdb)
			bn64 := BatchNormBufs[float64]{X: widen(dy), Gamma: widen(gamma), Beta: widen(beta), Keep: keep, RunMean: make([]float64, b),
				RunVar: make([]float64, b), Out: make([]float64, m*b), Mean: make([]float64, b), InvStd: make([]float64, b), Scratch: &bs}
			BatchNorm(bn64, m, b, true, BNOpts{Eps: 1e-5, Momentum: 0.1, Relu: relu})
			ddx, ddg, ddb := make([]float64, m*b), make([]float64, b), make([]float64, b)
			BatchNormBackward(ddx, ddg, ddb, x64[:m*b], bn64, m, b, true, relu, nil)
			out[name+"float64"] = append(append(append(bn64.Mean, bn64.InvStd...), ddg...), ddb...)
		}
		ln := LayerNormBufs[float32]{X: dy, Gamma: gamma, Beta: beta, Keep: keep, Out: make([]float32, m*b),
			Xhat: make([]float64, m*b), InvStd: make([]float64, m)}
		LayerNorm(ln, m, b, 1e-5)
		lg, lb := make([]float32, b), make([]float32, b)
		LayerNormBackward(nil, lg, lb, x[:m*b], ln, m, b)
		out["layer norm dγ"], out["layer norm dβ"] = widen(lg), widen(lb)
		return out
	}
	runtime.GOMAXPROCS(1)
	want := run()
	for _, procs := range []int{2, 3, 4, 8} {
		runtime.GOMAXPROCS(procs)
		for rep := 0; rep < 3; rep++ {
			got := run()
			for name, v := range want {
				if i := firstDiff(got[name], v); i >= 0 {
					t.Fatalf("%s with %d goroutines (repeat %d): [%d] = %v, with one %v", name, procs, rep, i, got[name][i], v[i])
				}
			}
		}
	}
	if testing.Verbose() {
		fmt.Println("kernels compared:", len(want))
	}
}

func widen(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, f := range v {
		out[i] = float64(f)
	}
	return out
}

// firstDiff is the first index where a and b differ in bits (or in length, then 0), else −1.
func firstDiff(a, b []float64) int {
	if len(a) != len(b) {
		return 0
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return i
		}
	}
	return -1
}
