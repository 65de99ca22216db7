package kern

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
)

// narrowNN is gonum's float32 GEMM bit for bit (it replaced it for n < nr, so the products of
// runs begun before keep their numbers): n = 6 (its own loop), other widths, k over gonum's
// blocks of 64, zeros in a (left out by both), and rows in parallel chunks; on vNarrow8 (n ≤ 8)
// and without it; nothing past the product is written.
func TestNarrowNNIsGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 48))
	for _, sz := range [][3]int{{10000, 48, 6}, {7, 3, 1}, {300, 130, 15}, {5, 70, 8}, {1000, 30, 6}, {2, 200, 6}, {4000, 90, 3}, {3000, 2, 2}} {
		m, k, n := sz[0], sz[1], sz[2]
		a, b := randF32(rng, m*k), randF32(rng, k*n)
		for i := range a {
			if i%5 == 0 {
				a[i] = 0
			}
		}
		b[0] = float32(math.Inf(1)) // a zero's term would be NaN: left out
		a[0] = 0
		for i := (m - m/3) * k; i < m*k; i++ { // trailing zero rows, as a batch's padding
			a[i] = float32(math.Copysign(0, float64(i%2)-0.5))
		}
		want := make([]float32, m*n)
		gemm(blas.NoTrans, blas.NoTrans, m, n, k, a, k, b, n, want, n)
		for _, kernel := range []bool{true, false} { // vNarrow8, and the Go loops
			saved := haveKernel
			haveKernel = haveKernel && kernel
			got := make([]float32, m*n+8) // 8 more, which must stay as they are
			for i := range got {
				got[i] = 12345 // the product must overwrite its part
			}
			MatMulNN(got[:m*n], a, b, nil, m, k, n)
			haveKernel = saved
			for i := m * n; i < len(got); i++ {
				if got[i] != 12345 {
					t.Fatalf("%v, kernel %v: wrote past the product's end (value %d)", sz, kernel, i)
				}
			}
			got = got[:m*n]
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
					t.Fatalf("%v, kernel %v: value %d: %v, gonum %v", sz, kernel, i, got[i], want[i])
				}
			}
		}
	}
}

// The Transformer's per-head score product, E × 48 × 6 (gonum: 4.2–6.2 ms on this machine's
// one thread, 2026-12-02).
func BenchmarkNarrowNN(bb *testing.B) { benchNarrow(bb, 10000, 48, 6) }

// MoNet's kernel weights, E × 90 × 3.
func BenchmarkNarrowNN3(bb *testing.B) { benchNarrow(bb, 10000, 90, 3) }

func benchNarrow(bb *testing.B, m, k, n int) {
	a, b, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
	for i := range a {
		a[i] = float32(i%7) - 3
	}
	for bb.Loop() {
		narrowNN(c, a, b, m, k, n)
	}
}

// MoNet's kernel weights at a real batch's size and cold in cache (40,000 edges, four sets of
// 14 MB in turn), as a training step meets them.
func BenchmarkNarrowNNCold(bb *testing.B) {
	const m, k, n, sets = 40000, 90, 3, 4
	as, cs := make([][]float32, sets), make([][]float32, sets)
	b := make([]float32, k*n)
	for s := range as {
		as[s], cs[s] = make([]float32, m*k), make([]float32, m*n)
		for i := range as[s] {
			as[s][i] = float32((i+s)%7) - 3
		}
	}
	i := 0
	for bb.Loop() {
		narrowNN(cs[i%sets], as[i%sets], b, m, k, n)
		i++
	}
}
