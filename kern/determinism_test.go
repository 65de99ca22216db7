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

// matMulTNDots is MatMulTN's generic path as it was written before 2026-12-02 (both operands
// transposed, then dot over each block of columns), the reference its row-by-row form must
// equal bit for bit.
func matMulTNDots[T Float](out, x, g []T, m, k, n int) {
	xT, gT := make([]T, m*k), make([]T, m*n)
	Transpose(xT, x, m, k)
	Transpose(gT, g, m, n)
	nb := (m + tnBlock - 1) / tnBlock
	np := Parts(nb)
	parts := make([][]T, np)
	for p := range parts {
		acc := make([]T, k*n)
		lo, hi := PartChunks(p, np, nb)
		for b := lo; b < hi; b++ {
			r0 := b * tnBlock
			l := min(tnBlock, m-r0)
			for i := 0; i < k; i++ {
				for j := 0; j < n; j++ {
					acc[i*n+j] += dot(xT[i*m+r0:i*m+r0+l], gT[j*m+r0:j*m+r0+l])
				}
			}
		}
		parts[p] = acc
	}
	copy(out, parts[0])
	for _, p := range parts[1:] {
		AddTo(out, p)
	}
}

// TestMatMulTNRowsIsDots checks MatMulTN's generic path (n below the kernel's 16 columns, and
// float64) against matMulTNDots bit for bit, on row counts around the block and the 4-row step.
func TestMatMulTNRowsIsDots(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 54))
	for _, m := range []int{1, 3, 4, 7, 2048, 2051, 4097, 20011} {
		for _, kn := range [][2]int{{30, 6}, {48, 6}, {70, 9}, {5, 1}} {
			k, n := kn[0], kn[1]
			x, g := randF32(rng, m*k), randF32(rng, m*n)
			var sc Scratch
			got, want := make([]float32, k*n), make([]float32, k*n)
			MatMulTN(&sc, got, x, g, m, k, n)
			matMulTNDots(want, x, g, m, k, n)
			x64, g64 := widen(x), widen(g)
			got64, want64 := make([]float64, k*n), make([]float64, k*n)
			var sc64 Scratch
			MatMulTN(&sc64, got64, x64, g64, m, k, n)
			matMulTNDots(want64, x64, g64, m, k, n)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float64bits(got64[i]) != math.Float64bits(want64[i]) {
					t.Fatalf("m=%d k=%d n=%d: out[%d] = %v (float64 %v), by transposed dots %v (%v)", m, k, n, i, got[i], got64[i], want[i], want64[i])
				}
			}
		}
	}
}
