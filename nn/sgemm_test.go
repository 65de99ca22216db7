package nn

import (
	"math/rand/v2"
	"testing"
)

func randF32(rng *rand.Rand, n int) []float32 {
	a := make([]float32, n)
	for i := range a {
		a[i] = float32(rng.NormFloat64())
	}
	return a
}

// checkProduct compares C [m, n] with Σ_p A(i,p)·B(p,j) in float64.
func checkProduct(t *testing.T, what string, m, n, k int, at func(i, p int) float32, b, c []float32) {
	t.Helper()
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			want := 0.0
			for p := 0; p < k; p++ {
				want += float64(at(i, p)) * float64(b[p*n+j])
			}
			if d := float64(c[i*n+j]) - want; d > 1e-3*(1+abs(want)) || d < -1e-3*(1+abs(want)) {
				t.Fatalf("%s: C[%d,%d] = %v, want %v", what, i, j, c[i*n+j], want)
			}
		}
	}
}

var gemmSizes = [][3]int{{70, 70, 70}, {6, 16, 1}, {7, 17, 3}, {3, 5, 7}, {1001, 35, 70}, {70, 70, 3000}, {130, 281, 9}, {12, 32, 600}, {5, 70, 9}, {70, 1, 9}}

func TestSgemmNN(t *testing.T) {
	if !haveKernel {
		t.Skip("no AVX2/FMA kernel on this machine")
	}
	rng := rand.New(rand.NewPCG(31, 32))
	for _, sz := range gemmSizes {
		m, n, k := sz[0], sz[1], sz[2]
		a, b := randF32(rng, m*k), randF32(rng, k*n)
		c := make([]float32, m*n)
		for i := range c {
			c[i] = 99 // must be overwritten
		}
		if !sgemmNN(m, n, k, a, k, b, n, c, n) {
			if m >= mr && n >= nr {
				t.Fatalf("%v: kernel refused", sz)
			}
			continue
		}
		checkProduct(t, "A·B", m, n, k, func(i, p int) float32 { return a[i*k+p] }, b, c)
	}
}

func TestSgemmTN(t *testing.T) {
	if !haveKernel {
		t.Skip("no AVX2/FMA kernel on this machine")
	}
	rng := rand.New(rand.NewPCG(33, 34))
	var sc tnBuffers
	for _, sz := range append(gemmSizes, [3]int{70, 70, 15000}, [3]int{8, 20, 0}, [3]int{1, 70, 9000}, [3]int{4, 70, 3001}) {
		m, n, k := sz[0], sz[1], sz[2]
		x, g := randF32(rng, k*m), randF32(rng, k*n)
		c := make([]float32, m*n)
		for i := range c {
			c[i] = 99
		}
		if !sgemmTN(m, n, k, x, m, g, n, c, n, &sc) {
			if n >= nr {
				t.Fatalf("%v: kernel refused", sz)
			}
			continue
		}
		checkProduct(t, "Xᵀ·G", m, n, k, func(i, p int) float32 { return x[p*m+i] }, g, c)
	}
}

func BenchmarkSgemmNN(b *testing.B) {
	m, n, k := 6000, 70, 70
	x, w, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
	for i := range x {
		x[i] = float32(i%7) * 0.1
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sgemmNN(m, n, k, x, k, w, n, c, n)
	}
	b.ReportMetric(float64(2*m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
}

func BenchmarkSgemmTN(b *testing.B) {
	m, n, k := 70, 70, 15000
	x, g, c := make([]float32, k*m), make([]float32, k*n), make([]float32, m*n)
	for i := range x {
		x[i] = float32(i%7) * 0.1
	}
	var sc tnBuffers
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sgemmTN(m, n, k, x, m, g, n, c, n, &sc)
	}
	b.ReportMetric(float64(2*m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
}
