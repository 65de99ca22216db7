package kern

import (
	"math/rand/v2"
	"testing"
)

// TestMatMulFloat32 compares the float32 kernels (the AVX2 path where available) of the
// forward product and both gradients with float64.
func TestMatMulFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	m, k, n := 5003, 70, 37
	randv := func(n int) ([]float64, []float32) {
		a, b := make([]float64, n), make([]float32, n)
		for i := range a {
			b[i] = float32(rng.NormFloat64())
			a[i] = float64(b[i])
		}
		return a, b
	}
	x64, x32 := randv(m * k)
	w64, w32 := randv(k * n)
	g64, g32 := randv(m * n)
	compare := func(what string, got []float32, want []float64) {
		t.Helper()
		for i := range want {
			if d := (float64(got[i]) - want[i]) / (1 + abs(want[i])); d > 1e-4 || d < -1e-4 {
				t.Fatalf("%s[%d]: float32 %v, float64 %v", what, i, got[i], want[i])
			}
		}
	}
	y64, y32 := make([]float64, m*n), make([]float32, m*n)
	MatMulNN(y64, x64, w64, nil, m, k, n)
	MatMulNN(y32, x32, w32, nil, m, k, n)
	compare("x·w", y32, y64)
	var s64, s32 Scratch
	dx64, dx32 := make([]float64, m*k), make([]float32, m*k)
	MatMulNT(&s64, dx64, g64, w64, m, n, k)
	MatMulNT(&s32, dx32, g32, w32, m, n, k)
	compare("g·wᵀ", dx32, dx64)
	dw64, dw32 := make([]float64, k*n), make([]float32, k*n)
	MatMulTN(&s64, dw64, x64, g64, m, k, n)
	MatMulTN(&s32, dw32, x32, g32, m, k, n)
	compare("xᵀ·g", dw32, dw64)
}

// TestParallelKernelsMatchSerial checks the row- and column-split kernels on sizes above the
// parallel threshold against the serial loops.
func TestParallelKernelsMatchSerial(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 40))
	const rows, cols, n = 5000, 13, 900
	src := make([]float64, n*cols)
	x := make([]float64, rows*cols)
	for i := range src {
		src[i] = rng.NormFloat64()
	}
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	idx := make([]int32, rows)
	w := make([]float64, rows)
	for i := range idx {
		idx[i], w[i] = int32(rng.IntN(n+1)-1), rng.Float64()
	}
	par, ser := make([]float64, rows*cols), make([]float64, rows*cols)
	GatherRows(par, src, cols, idx, w)
	gatherRows(ser, src, cols, idx, w)
	equal(t, "gather", par, ser)
	sp, ss := make([]float64, n*cols), make([]float64, n*cols)
	ScatterAddRows(sp, x, cols, idx, w)
	scatterAddCols(ss, x, cols, idx, w, 0, cols)
	equal(t, "scatter", sp, ss)
	b := src[:cols]
	AddBias(par, x, b)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			ser[r*cols+c] = x[r*cols+c] + b[c]
		}
	}
	equal(t, "bias", par, ser)
	cs, cw := make([]float64, cols), make([]float64, cols)
	ColSum(cs, x)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			cw[c] += x[r*cols+c]
		}
	}
	equal(t, "column sum", cs, cw)
}

func equal(t *testing.T, what string, got, want []float64) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s[%d] = %v, serial %v", what, i, got[i], want[i])
		}
	}
}

// TestMatMulBiasFloat32 compares the float32 product with bias (on the kernel where there is
// one) with float64.
func TestMatMulBiasFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(55, 56))
	m, k, n := 1003, 70, 70
	x32, w32, b32 := randF32(rng, m*k), randF32(rng, k*n), randF32(rng, n)
	y32 := make([]float32, m*n)
	MatMulNN(y32, x32, w32, b32, m, k, n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			want := float64(b32[j])
			for p := 0; p < k; p++ {
				want += float64(x32[i*k+p]) * float64(w32[p*n+j])
			}
			if d := float64(y32[i*n+j]) - want; d > 1e-4*(1+abs(want)) || d < -1e-4*(1+abs(want)) {
				t.Fatalf("[%d,%d] = %v, want %v", i, j, y32[i*n+j], want)
			}
		}
	}
}

func TestSegmentSoftmaxValues(t *testing.T) {
	src := []float64{1, 1000, 2, 1001, 5, 0, 3, 0}
	seg := []int32{0, 0, 1, -1}
	dst := make([]float64, len(src))
	SegmentSoftmaxRows(dst, src, 2, seg, make([]float64, 2*2))
	e := 1 / (1 + 2.718281828459045)
	want := []float64{e, e, 1 - e, 1 - e, 1, 1, 0, 0}
	for i := range want {
		if d := dst[i] - want[i]; d > 1e-12 || d < -1e-12 {
			t.Fatalf("softmax[%d] = %v, want %v", i, dst[i], want[i])
		}
	}
}

func abs(x float64) float64 { return max(x, -x) }
