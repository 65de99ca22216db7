package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestReductionsIndependentOfThreads runs every kernel that sums over a long dimension (the
// products' xᵀ·g, the fused linear gradient, column and scatter sums, in float32 and float64,
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
