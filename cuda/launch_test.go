package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/tensor"
)

// TestRowMajorGemm runs the cuBLAS arguments that rowMajorGemm produces through a plain
// column-major GEMM (BLAS semantics) and compares with a row-major product, for every
// transpose combination: the mapping that MatMul and its gradients rely on.
func TestRowMajorGemm(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ta := range []bool{false, true} {
		for _, tb := range []bool{false, true} {
			m, n, k := 5, 3, 4
			a := randSlice(rng, m*k)
			b := randSlice(rng, k*n)
			at := func(i, l int) float32 { // op(A)[i, l]
				if ta {
					return a[l*m+i]
				}
				return a[i*k+l]
			}
			bt := func(l, j int) float32 {
				if tb {
					return b[j*k+l]
				}
				return b[l*n+j]
			}
			g, err := rowMajorGemm(ta, tb, m, n, k, 1, 2)
			if err != nil {
				t.Fatal(err)
			}
			mem := map[DevPtr][]float32{1: a, 2: b}
			c := colMajorSgemm(g.ta, g.tb, int(g.m), int(g.n), int(g.k), mem[g.a], int(g.lda), mem[g.b], int(g.ldb), int(g.ldc))
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					var want float32
					for l := 0; l < k; l++ {
						want += at(i, l) * bt(l, j)
					}
					if got := c[i*n+j]; math.Abs(float64(got-want)) > 1e-5 {
						t.Fatalf("transA %v transB %v: C[%d,%d] = %v, want %v", ta, tb, i, j, got, want)
					}
				}
			}
		}
	}
}

// colMajorSgemm is C = op(A)·op(B) in column-major storage, as BLAS defines sgemm.
func colMajorSgemm(ta, tb int32, m, n, k int, a []float32, lda int, b []float32, ldb, ldc int) []float32 {
	c := make([]float32, ldc*n)
	for j := 0; j < n; j++ {
		for i := 0; i < m; i++ {
			var s float32
			for l := 0; l < k; l++ {
				var av, bv float32
				if ta == cudalib.CublasOpT {
					av = a[l+i*lda]
				} else {
					av = a[i+l*lda]
				}
				if tb == cudalib.CublasOpT {
					bv = b[j+l*ldb]
				} else {
					bv = b[l+j*ldb]
				}
				s += av * bv
			}
			c[i+j*ldc] = s
		}
	}
	return c
}

func randSlice(rng *rand.Rand, n int) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(rng.NormFloat64())
	}
	return xs
}

func TestDropoutKeep(t *testing.T) {
	const n = 200000
	for _, p := range []float64{0, 0.1, 0.5} {
		kept := 0
		for i := int64(0); i < n; i++ {
			if ops.DropKeep(42, int(i), p) {
				kept++
			}
		}
		if f := float64(kept) / n; math.Abs(f-(1-p)) > 0.005 {
			t.Errorf("p = %v: kept fraction %.4f", p, f)
		}
	}
	same := 0
	for i := int64(0); i < 1000; i++ {
		if ops.DropKeep(1, int(i), 0.5) == ops.DropKeep(2, int(i), 0.5) {
			same++
		}
	}
	if same > 600 || same < 400 {
		t.Errorf("masks of seeds 1 and 2 agree on %d of 1000 elements", same)
	}
}

func TestArgs(t *testing.T) {
	if a := aI(math.MaxInt32 + 1); a.bad == "" {
		t.Error("an int above 2³¹−1 was accepted as a kernel argument")
	}
	if a := aI(-1); a.v != 0xffffffff {
		t.Errorf("aI(-1) = %#x", a.v)
	}
	if a := aF(1); a.v != 0x3f800000 {
		t.Errorf("aF(1) = %#x", a.v)
	}
}

func TestRoundSize(t *testing.T) {
	for _, c := range [][2]int{{1, 512}, {512, 512}, {513, 1024}, {65536, 65536}, {65537, 131072}, {64 << 20, 64 << 20}, {64<<20 + 1, 72 << 20}} {
		if got := roundSize(c[0]); got != c[1] {
			t.Errorf("roundSize(%d) = %d, want %d", c[0], got, c[1])
		}
	}
}

// TestDropoutKeepMatchesNN checks that the mask the GPU's dropout kernel is given (the step seed
// and rate, drawn by ops.DropKeep, dropout.cu's CPU twin) is the mask a dropout site applies:
// for several sites, steps and rates, element i is kept by DropKeep(site.StepSeed(), i, rate)
// exactly when nn keeps it.
func TestDropoutKeepMatchesNN(t *testing.T) {
	p, err := nn.NewParams(tensor.Float32, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, rate := range []float64{0, 1e-9, 0.1, 0.5, 0.9, 1 - 1e-12} {
		st := p.DropState(fmt.Sprintf("site%v", rate), rate)
		for _, step := range []uint64{0, 1, 2, 1000, 1 << 40} {
			p.Step = step
			seed := st.StepSeed()
			kept := 0
			for i := 0; i < 50000; i++ {
				want := st.Keep(i)
				if got := ops.DropKeep(seed, int(i), rate); got != want {
					t.Fatalf("rate %v, step %d, element %d: GPU mask %t, nn %t", rate, step, i, got, want)
				}
				if want {
					kept++
				}
			}
			if rate == 0.5 && (kept < 24000 || kept > 26000) {
				t.Errorf("rate 0.5, step %d: %d of 50000 kept", step, kept)
			}
		}
	}
	if DropoutThreshold(0) != 0 || DropoutThreshold(0.5) != 1<<52 {
		t.Errorf("thresholds %d, %d", DropoutThreshold(0), DropoutThreshold(0.5))
	}
}
