package kern

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

// eachKernel runs f with every micro-kernel this CPU has.
func eachKernel(t *testing.T, f func(t *testing.T)) {
	if len(kernels) == 0 || !haveKernel {
		t.Skip("no assembly kernel on this machine")
	}
	saved := micro
	defer func() { micro = saved }()
	for _, k := range kernels {
		micro = k
		t.Run(k.name, f)
	}
}

func TestSgemmNN(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(31, 32))
		for _, sz := range append(gemmSizes, [3]int{11, 16, 5}, [3]int{13, 40, 2}) {
			m, n, k := sz[0], sz[1], sz[2]
			a, b, bias := randF32(rng, m*k), randF32(rng, k*n), randF32(rng, n)
			for _, withBias := range []bool{false, true} {
				c := make([]float32, m*n)
				for i := range c {
					c[i] = 99 // must be overwritten
				}
				var bs []float32
				if withBias {
					bs = bias
				}
				if !sgemmNN(m, n, k, a, k, b, n, c, n, bs) {
					if m >= micro.rows && n >= nr && k > 0 {
						t.Fatalf("%v: kernel refused", sz)
					}
					continue
				}
				if withBias {
					for i := 0; i < m; i++ {
						for j := 0; j < n; j++ {
							c[i*n+j] -= bias[j]
						}
					}
				}
				checkProduct(t, "A·B", m, n, k, func(i, p int) float32 { return a[i*k+p] }, b, c)
			}
		}
	})
}

func TestSgemmTN(t *testing.T) {
	eachKernel(t, testSgemmTN)
}

func testSgemmTN(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	var sc TNBuffers
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
	b.Logf("kernel %s", micro.name)
	m, n, k := 15310, 70, 70
	x, w, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
	for i := range x {
		x[i] = float32(i%7) * 0.1
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sgemmNN(m, n, k, x, k, w, n, c, n, nil)
	}
	b.ReportMetric(float64(2*m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
}

func BenchmarkSgemmTN(b *testing.B) {
	m, n, k := 70, 70, 15000
	x, g, c := make([]float32, k*m), make([]float32, k*n), make([]float32, m*n)
	for i := range x {
		x[i] = float32(i%7) * 0.1
	}
	var sc TNBuffers
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sgemmTN(m, n, k, x, m, g, n, c, n, &sc)
	}
	b.ReportMetric(float64(2*m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
}

func TestLinearGrad32(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(35, 36))
		var sc TNBuffers
		for _, sz := range [][3]int{{3001, 70, 70}, {241, 16, 17}, {12, 70, 35}, {4805, 24, 70}, {250, 70, 16}} {
			m, a, b := sz[0], sz[1], sz[2]
			x, w, dy := randF32(rng, m*a), randF32(rng, a*b), randF32(rng, m*b)
			for _, full := range []bool{true, false} {
				dx, dw, db := make([]float32, m*a), make([]float32, a*b), make([]float32, b)
				for i := range dx {
					dx[i] = 99
				}
				dxa, dba := dx, db
				if !full {
					dxa, dba = nil, nil
				}
				if !LinearGrad32(dxa, dw, dba, x, w, dy, nil, m, a, b, &sc) {
					if m >= micro.rows && a >= max(micro.rows, nr) && b >= nr {
						t.Fatalf("%v: refused", sz)
					}
					continue
				}
				checkProduct(t, "xᵀ·dy", a, b, m, func(i, p int) float32 { return x[p*a+i] }, dy, dw)
				if !full {
					if dx[0] != 99 {
						t.Fatalf("%v: dx written though not asked for", sz)
					}
					continue
				}
				wT := make([]float32, b*a)
				Transpose(wT, w, a, b)
				checkProduct(t, "dy·wᵀ", m, a, b, func(i, p int) float32 { return dy[i*b+p] }, wT, dx)
				sum, dx2 := randF32(rng, m*a), make([]float32, m*a)
				LinearGrad32(dx2, dw, dba, x, w, dy, sum, m, a, b, &sc)
				for i := range dx2 {
					if d := dx2[i] - sum[i] - dx[i]; d > 1e-4 || d < -1e-4 {
						t.Fatalf("%v: dx with summand [%d] = %v, want %v + %v", sz, i, dx2[i], dx[i], sum[i])
					}
				}
				ones := make([]float32, m)
				for i := range ones {
					ones[i] = 1
				}
				checkProduct(t, "Σ dy", 1, b, m, func(_, p int) float32 { return ones[p] }, dy, db)
			}
		}
	})
}

// BenchmarkSgemmNNCold is BenchmarkSgemmNN at an AQSOL r = 8 edge batch's size (40,245 rows)
// with each micro-kernel, its operands cold in cache as in a training step: it rotates through 8
// sets of X and C (11 MB each), so each product reads X from memory and writes C there.
func BenchmarkSgemmNNCold(b *testing.B) {
	m, n, k, sets := 40245, 70, 70, 8
	w := make([]float32, k*n)
	for i := range w {
		w[i] = float32(i%5) * 0.01
	}
	xs, cs := make([][]float32, sets), make([][]float32, sets)
	for s := range xs {
		xs[s], cs[s] = make([]float32, m*k), make([]float32, m*n)
		for i := range xs[s] {
			xs[s][i] = float32((i+s)%7) * 0.1
		}
	}
	saved := micro
	defer func() { micro = saved }()
	for _, mk := range kernels {
		micro = mk
		b.Run(mk.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				sgemmNN(m, n, k, xs[i%sets], k, w, n, cs[i%sets], n, nil)
			}
			b.ReportMetric(float64(2*m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
		})
	}
}
