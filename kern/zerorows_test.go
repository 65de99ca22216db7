package kern

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSgemmNNZeroRows: sgemmNN with A's trailing zero rows left to zeroRowsProduct is the
// micro-kernel over every row, bit for bit: suffixes of every length (none, one, fewer rows
// left than a block, all), −0 in the zero rows, a bias with −0 and without a bias, and a B with
// an infinity or a NaN (no skip: 0·Inf is NaN); each micro-kernel.
func TestSgemmNNZeroRows(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(93, 94))
		negZero := float32(math.Copysign(0, -1))
		for _, sz := range [][3]int{{100, 70, 70}, {40, 16, 5}, {25, 33, 9}} {
			m, n, k := sz[0], sz[1], sz[2]
			for _, zeros := range []int{0, 1, 7, m - micro.rows, m - micro.rows + 1, m - 1, m} {
				for _, special := range []float32{0, float32(math.Inf(1)), float32(math.NaN())} {
					a, b, bias := randF32(rng, m*k), randF32(rng, k*n), randF32(rng, n)
					for i := (m - zeros) * k; i < m*k; i++ {
						a[i] = 0
						if rng.IntN(3) == 0 {
							a[i] = negZero
						}
					}
					bias[0], bias[n-1] = negZero, 0
					if special != 0 {
						b[rng.IntN(k*n)] = special
					}
					for _, bs := range [][]float32{nil, bias} {
						var got, want []float32
						for _, skip := range []bool{true, false} {
							skipZeroRows = skip
							c := make([]float32, m*n)
							for i := range c {
								c[i] = 99
							}
							sgemmNN(m, n, k, a, k, b, n, c, n, bs)
							if skip {
								got = c
							} else {
								want = c
							}
						}
						skipZeroRows = true
						for i := range want {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
								t.Fatalf("%v, %d zero rows, B special %v, bias %v: c[%d] = %v (%#x), every row by the kernel %v (%#x)",
									sz, zeros, special, bs != nil, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
							}
						}
					}
				}
			}
		}
	})
}

// TestLinearGradZeroRows: LinearGrad32 with dy's trailing zero rows left out of the products
// (dx there +0, plus the summand) is the computation over every row, bit for bit: dx with and
// without a summand (−0 in it), dw, db, suffixes of every length, −0 in dy's zero rows, and
// an infinity or a NaN in x's padding rows or in w (no skip).
func TestLinearGradZeroRows(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(95, 96))
		negZero := float32(math.Copysign(0, -1))
		for _, sz := range [][3]int{{700, 70, 70}, {300, 24, 70}, {40, 16, 17}} {
			m, a, b := sz[0], sz[1], sz[2]
			for _, zeros := range []int{0, 1, 239, 240, 241, m - micro.rows, m - micro.rows + 1, m} {
				if zeros > m {
					continue
				}
				for _, special := range []string{"", "x", "w"} {
					x, w, dy, sum := randF32(rng, m*a), randF32(rng, a*b), randF32(rng, m*b), randF32(rng, m*a)
					for i := (m - zeros) * b; i < m*b; i++ {
						dy[i] = 0
						if rng.IntN(3) == 0 {
							dy[i] = negZero
						}
					}
					for i := (m - zeros) * a; i < m*a; i++ {
						x[i] = 0
					}
					sum[m*a-1] = negZero
					switch special {
					case "x":
						x[m*a-1] = float32(math.Inf(-1))
					case "w":
						w[rng.IntN(a*b)] = float32(math.NaN())
					}
					for _, withSum := range []bool{false, true} {
						var got, want [3][]float32
						for k, skip := range []bool{true, false} {
							skipZeroRows = skip
							dx, dw, db := make([]float32, m*a), make([]float32, a*b), make([]float32, b)
							for i := range dx {
								dx[i] = 99
							}
							var s []float32
							if withSum {
								s = sum
							}
							var sc TNBuffers
							LinearGrad32(dx, dw, db, x, w, dy, s, m, a, b, &sc)
							if k == 0 {
								got = [3][]float32{dx, dw, db}
							} else {
								want = [3][]float32{dx, dw, db}
							}
						}
						skipZeroRows = true
						for q, name := range []string{"dx", "dw", "db"} {
							for i := range want[q] {
								g, w := got[q][i], want[q][i]
								if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
									t.Fatalf("%v, %d zero rows, special %q, sum %v: %s[%d] = %v (%#x), over every row %v (%#x)",
										sz, zeros, special, withSum, name, i, g, math.Float32bits(g), w, math.Float32bits(w))
								}
							}
						}
					}
				}
			}
		}
	})
}

// TestZeroAndFiniteScans: allZero and finite against the plain per-value tests, for every
// length up to 20 and a value placed at every position: ±0, the smallest subnormal (not zero),
// ±Inf, NaN, the largest finite.
func TestZeroAndFiniteScans(t *testing.T) {
	vals := []float32{0, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32, 1}
	for n := 0; n <= 20; n++ {
		for pos := 0; pos < n; pos++ {
			for _, v := range vals {
				row := make([]float32, n)
				row[pos] = v
				if got, want := allZero(row), v == 0; got != want {
					t.Fatalf("allZero(%d values, %v at %d) = %v, want %v", n, v, pos, got, want)
				}
				isFinite := !math.IsInf(float64(v), 0) && !math.IsNaN(float64(v))
				if got := finite(row, 1, n, n); got != isFinite {
					t.Fatalf("finite(%d values, %v at %d) = %v, want %v", n, v, pos, got, isFinite)
				}
			}
		}
	}
}
