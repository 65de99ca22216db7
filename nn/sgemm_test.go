package nn

import (
	"math/rand/v2"
	"testing"
)

func TestSgemmNN(t *testing.T) {
	if !haveKernel {
		t.Skip("no AVX2/FMA kernel on this machine")
	}
	rng := rand.New(rand.NewPCG(31, 32))
	for _, sz := range [][3]int{{70, 70, 70}, {4, 16, 1}, {3, 5, 7}, {1001, 35, 70}, {70, 70, 3000}, {130, 281, 9}} {
		m, n, k := sz[0], sz[1], sz[2]
		a := make([]float32, m*k)
		b := make([]float32, k*n)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		for i := range b {
			b[i] = float32(rng.NormFloat64())
		}
		c := make([]float32, m*n)
		for i := range c {
			c[i] = 99 // must be overwritten
		}
		if !sgemmNN(m, n, k, a, k, b, n, c, n) {
			t.Fatal("kernel refused")
		}
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				want := 0.0
				for p := 0; p < k; p++ {
					want += float64(a[i*k+p]) * float64(b[p*n+j])
				}
				if d := float64(c[i*n+j]) - want; d > 1e-3*(1+abs(want)) || d < -1e-3*(1+abs(want)) {
					t.Fatalf("%v: C[%d,%d] = %v, want %v", sz, i, j, c[i*n+j], want)
				}
			}
		}
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
