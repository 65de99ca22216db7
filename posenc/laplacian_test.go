package posenc

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/randgraph"
)

// refLaplacian builds I − D^-1/2 A D^-1/2 independently: symmetrised adjacency, in-degrees
// clipped at 1.
func refLaplacian(g *data.Graph) *mat.SymDense {
	n := g.N
	a := mat.NewDense(max(n, 1), max(n, 1), nil)
	for m := range g.Src {
		a.Set(int(g.Src[m]), int(g.Dst[m]), 1)
		a.Set(int(g.Dst[m]), int(g.Src[m]), 1)
	}
	l := mat.NewSymDense(max(n, 1), nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			di, dj := math.Max(mat.Sum(a.RowView(i)), 1), math.Max(mat.Sum(a.RowView(j)), 1)
			v := -a.At(i, j) / math.Sqrt(di*dj)
			if i == j {
				v++
			}
			l.SetSym(i, j, v)
		}
	}
	return l
}

func TestLaplacianEigenpairs(t *testing.T) {
	var lap Laplacian
	for gi, g := range randgraph.Suite(3) {
		if g.N == 0 {
			continue
		}
		ref := refLaplacian(g)
		var eig mat.EigenSym
		if !eig.Factorize(ref, false) {
			t.Fatal("reference decomposition failed")
		}
		vals := eig.Values(nil)
		for _, q := range []int{1, 3, 8, 40} {
			out := make([]float32, g.N*q)
			if err := lap.Encode(g.N, g.Src, g.Dst, q, out); err != nil {
				t.Fatalf("graph %d q=%d: %v", gi, q, err)
			}
			cols := min(q, g.N-1)
			for j := 0; j < q; j++ {
				v := mat.NewVecDense(g.N, nil)
				for u := 0; u < g.N; u++ {
					v.SetVec(u, float64(out[u*q+j]))
				}
				if j >= cols {
					if mat.Norm(v, 2) != 0 {
						t.Fatalf("graph %d (n=%d) q=%d: padding column %d is not zero", gi, g.N, q, j)
					}
					continue
				}
				// Unit norm, orthogonal to the other columns (float32 storage).
				if d := math.Abs(mat.Norm(v, 2) - 1); d > 1e-5 {
					t.Fatalf("graph %d q=%d col %d: norm off by %g", gi, q, j, d)
				}
				for k := 0; k < j; k++ {
					var dot float64
					for u := 0; u < g.N; u++ {
						dot += float64(out[u*q+j]) * float64(out[u*q+k])
					}
					if math.Abs(dot) > 1e-5 {
						t.Fatalf("graph %d q=%d: columns %d and %d have dot %g", gi, q, j, k, dot)
					}
				}
				// L v = λ v with λ the (j+1)-th smallest reference eigenvalue.
				lambda := vals[j+1]
				var lv mat.VecDense
				lv.MulVec(ref, v)
				lv.AddScaledVec(&lv, -lambda, v)
				if res := mat.Norm(&lv, math.Inf(1)); res > 2e-5 {
					t.Fatalf("graph %d (n=%d) q=%d col %d: ‖Lv − λv‖ = %g (λ=%g)", gi, g.N, q, j, res, lambda)
				}
				// Sign convention: the first entry of (nearly) largest magnitude is positive.
				best := 0.0
				for u := 0; u < g.N; u++ {
					best = math.Max(best, math.Abs(v.AtVec(u)))
				}
				for u := 0; u < g.N; u++ {
					if x := v.AtVec(u); math.Abs(x) >= best-1e-6 {
						if x < 0 {
							t.Fatalf("graph %d col %d: first largest entry %g is negative", gi, j, x)
						}
						break
					}
				}
			}
		}
	}
	if lap.Fallbacks() != 0 {
		t.Logf("%d graphs used the dense fallback", lap.Fallbacks())
	}
}

// A path graph has known spectrum: the normalised Laplacian of P_n has eigenvalues
// 1 − cos(πk/(n−1)), k = 0..n−1.
func TestLaplacianPathSpectrum(t *testing.T) {
	const n = 9
	var src, dst []int32
	for i := 0; i+1 < n; i++ {
		src = append(src, int32(i), int32(i+1))
		dst = append(dst, int32(i+1), int32(i))
	}
	var w eigenWork
	var lap Laplacian
	lap.build(n, src, dst)
	vals, vecs := make([]float64, n), make([]float64, n*n)
	if err := w.smallestEigen(lap.a, n, n, vals, vecs); err != nil {
		t.Fatal(err)
	}
	for k := 0; k < n; k++ {
		want := 1 - math.Cos(math.Pi*float64(k)/float64(n-1))
		if math.Abs(vals[k]-want) > 1e-12 {
			t.Errorf("λ_%d = %.15f, want %.15f", k, vals[k], want)
		}
	}
}

func TestLaplacianDeterministicAndPadded(t *testing.T) {
	// Two nodes, one edge: one non-trivial eigenvector, the rest padding.
	var lap Laplacian
	out := make([]float32, 2*4)
	if err := lap.Encode(2, []int32{0, 1}, []int32{1, 0}, 4, out); err != nil {
		t.Fatal(err)
	}
	s := float32(1 / math.Sqrt2)
	want := []float32{s, 0, 0, 0, -s, 0, 0, 0}
	for i := range want {
		if math.Abs(float64(out[i]-want[i])) > 1e-6 {
			t.Fatalf("got %v, want %v", out, want)
		}
	}
	again := make([]float32, len(out))
	var other Laplacian
	if err := other.Encode(2, []int32{0, 1}, []int32{1, 0}, 4, again); err != nil {
		t.Fatal(err)
	}
	for i := range out {
		if out[i] != again[i] {
			t.Fatal("not deterministic")
		}
	}
}

func TestLaplacianRejectsBadInput(t *testing.T) {
	var lap Laplacian
	if err := lap.Encode(3, []int32{0}, []int32{1}, 0, nil); err == nil {
		t.Error("q = 0 accepted")
	}
	if err := lap.Encode(3, []int32{0}, []int32{5}, 2, make([]float32, 6)); err == nil {
		t.Error("edge past n accepted")
	}
	if err := lap.Encode(3, []int32{0}, []int32{1}, 2, make([]float32, 5)); err == nil {
		t.Error("short output accepted")
	}
}

func TestFlipSigns(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pe := []float32{1, 2, 3, 4, 5, 6} // 3 nodes × 2 columns
	orig := append([]float32(nil), pe...)
	seen := map[[2]float32]bool{}
	for i := 0; i < 200; i++ {
		copy(pe, orig)
		signs := FlipSigns(pe, 2, rng)
		seen[[2]float32{signs[0], signs[1]}] = true
		for k := range pe {
			if pe[k] != orig[k]*signs[k%2] {
				t.Fatalf("entry %d: %v with signs %v", k, pe[k], signs)
			}
		}
	}
	if len(seen) != 4 {
		t.Fatalf("saw sign patterns %v, want all four", seen)
	}
}
