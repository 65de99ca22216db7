package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// normCase is a masked [rows, d] input with parameters and an output gradient, in float64 (the
// reference's values; the float32 runs use their float32 roundings, the reference then too).
type normCase struct {
	rows, d            int
	x, gamma, beta, dy []float64
	res                []float64
	keep               []bool
}

func newNormCase(rng *rand.Rand, rows, d int, round32 bool) normCase {
	r := func(n int, scale, shift float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64()*scale + shift
			if round32 {
				v[i] = float64(float32(v[i]))
			}
		}
		return v
	}
	c := normCase{rows: rows, d: d, x: r(rows*d, 2, 3), gamma: r(d, 1, 0), beta: r(d, 1, 0.2), dy: r(rows*d, 1, 0),
		res: r(rows*d, 1, 0), keep: make([]bool, rows)}
	for i := range c.keep {
		c.keep[i] = rng.IntN(5) != 0
	}
	return c
}

func conv[T Float](v []float64) []T {
	out := make([]T, len(v))
	for i, f := range v {
		out[i] = T(f)
	}
	return out
}

func toF64[T Float](v []T) []float64 {
	out := make([]float64, len(v))
	for i, f := range v {
		out[i] = float64(f)
	}
	return out
}

// bnReference is a batch norm's forward and backward passes as plain float64 loops over columns:
// out (with relu and res), the batch mean and biased variance, the running statistics after a
// momentum update from (0, 1), and dx, dγ, dβ.
func bnReference(c normCase, training, relu, withRes bool, eps, mom float64) (out, mean, variance, runMean, runVar, dx, dgamma, dbeta []float64) {
	rows, d := c.rows, c.d
	out, dx = make([]float64, rows*d), make([]float64, rows*d)
	mean, variance, runMean, runVar = make([]float64, d), make([]float64, d), make([]float64, d), make([]float64, d)
	dgamma, dbeta = make([]float64, d), make([]float64, d)
	for j := 0; j < d; j++ {
		n, s := 0.0, 0.0
		for r := 0; r < rows; r++ {
			if c.keep[r] {
				n++
				s += c.x[r*d+j]
			}
		}
		m := s / n
		ss := 0.0
		for r := 0; r < rows; r++ {
			if c.keep[r] {
				ss += (c.x[r*d+j] - m) * (c.x[r*d+j] - m)
			}
		}
		runMean[j], runVar[j] = mom*m, (1-mom)+mom*ss/(n-1)
		v := ss / n
		if !training {
			m, v = 0, 1 // the running statistics the pass starts from
		}
		mean[j], variance[j] = m, v
		sigma := math.Sqrt(v + eps)
		// backward sums
		s1, s2 := 0.0, 0.0
		u := make([]float64, rows)
		for r := 0; r < rows; r++ {
			i := r*d + j
			xh := (c.x[i] - m) / sigma
			y := c.gamma[j]*xh + c.beta[j]
			u[r] = c.dy[i]
			if relu && y <= 0 {
				u[r] = 0
			}
			if relu {
				y = max(y, 0)
			}
			switch {
			case !c.keep[r] && withRes:
				out[i] = c.res[i]
			case !c.keep[r]:
				out[i] = 0
			case withRes:
				out[i] = c.res[i] + y
			default:
				out[i] = y
			}
			if c.keep[r] {
				s1 += u[r]
				s2 += u[r] * xh
			}
		}
		dbeta[j], dgamma[j] = s1, s2
		for r := 0; r < rows; r++ {
			if !c.keep[r] {
				continue
			}
			i := r*d + j
			xh := (c.x[i] - m) / sigma
			if training {
				dx[i] = c.gamma[j] / sigma * (u[r] - s1/n - xh*s2/n)
			} else {
				dx[i] = c.gamma[j] / sigma * u[r]
			}
		}
	}
	return
}

// closeTo fails unless got and want agree to tol relative to 1 + |want|.
func closeTo(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if d := math.Abs(got[i]-want[i]) / (1 + math.Abs(want[i])); !(d <= tol) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

func testBatchNorm[T Float](t *testing.T, tol float64) {
	rng := rand.New(rand.NewPCG(61, 62))
	_, is32 := any(T(0)).(float32)
	for _, sz := range [][2]int{{7, 3}, {700, 13}, {1030, 16}} { // one chunk; three; five, d a multiple of 8
		c := newNormCase(rng, sz[0], sz[1], is32)
		rows, d := sz[0], sz[1]
		for _, training := range []bool{true, false} {
			for _, mode := range []string{"plain", "relu", "relu+res"} {
				t.Run(fmt.Sprintf("%dx%d/training=%v/%s", rows, d, training, mode), func(t *testing.T) {
					relu, withRes := mode != "plain", mode == "relu+res"
					wOut, wMean, wVar, wRM, wRV, wDx, wDg, wDb := bnReference(c, training, relu, withRes, 1e-5, 0.1)
					var sc BNScratch
					b := BatchNormBufs[T]{X: conv[T](c.x), Gamma: conv[T](c.gamma), Beta: conv[T](c.beta), Keep: c.keep,
						RunMean: make([]float64, d), RunVar: make([]float64, d), Out: make([]T, rows*d),
						Mean: make([]float64, d), InvStd: make([]float64, d), Scratch: &sc}
					for j := range b.RunVar {
						b.RunVar[j] = 1
					}
					if withRes {
						b.Res = conv[T](c.res)
					}
					BatchNorm(b, rows, d, training, BNOpts{Eps: 1e-5, Momentum: 0.1, Relu: relu})
					closeTo(t, "out", toF64(b.Out), wOut, tol)
					closeTo(t, "mean", b.Mean, wMean, tol)
					invStd := make([]float64, d)
					for j := range invStd {
						invStd[j] = 1 / math.Sqrt(wVar[j]+1e-5)
					}
					closeTo(t, "1/σ", b.InvStd, invStd, tol)
					if training {
						closeTo(t, "running mean", b.RunMean, wRM, tol)
						closeTo(t, "running variance", b.RunVar, wRV, tol)
					}
					dx, dg, db := make([]T, rows*d), make([]T, d), make([]T, d)
					dy := conv[T](c.dy)
					BatchNormBackward(dx, dg, db, dy, b, rows, d, training, relu, nil)
					closeTo(t, "dx", toF64(dx), wDx, tol)
					closeTo(t, "dγ", toF64(dg), wDg, tol*float64(rows))
					closeTo(t, "dβ", toF64(db), wDb, tol*float64(rows))
					// A summand is added to dx, rows the mask drops included.
					dxs := make([]T, rows*d)
					BatchNormBackward(dxs, dg, db, dy, b, rows, d, training, relu, conv[T](c.res))
					for i := range dxs {
						if want := dx[i] + T(c.res[i]); dxs[i] != want {
							t.Fatalf("dx + summand [%d] = %v, want %v", i, dxs[i], want)
						}
					}
					if relu {
						// The mask then the plain backward pass is the fused one, bit for bit.
						u, dx2, dg2, db2 := make([]T, rows*d), make([]T, rows*d), make([]T, d), make([]T, d)
						BatchNormReluMask(u, dy, b.X, b.Mean, b.InvStd, b.Gamma, b.Beta, rows, d)
						BatchNormBackward(dx2, dg2, db2, u, b, rows, d, training, false, nil)
						for _, p := range [][2][]T{{dx2, dx}, {dg2, dg}, {db2, db}} {
							if i := firstDiff(toF64(p[0]), toF64(p[1])); i >= 0 {
								t.Fatalf("mask then backward: [%d] = %v, fused %v", i, p[0][i], p[1][i])
							}
						}
					}
				})
			}
		}
	}
}

func TestBatchNormFloat64(t *testing.T) { testBatchNorm[float64](t, 1e-10) }
func TestBatchNormFloat32(t *testing.T) { testBatchNorm[float32](t, 2e-5) }

// TestBatchNormRunningStatistics: a replay leaves the running statistics alone; a calibration
// (Average k for the k-th batch) leaves the mean of the batches' means and unbiased variances.
func TestBatchNormRunningStatistics(t *testing.T) {
	rng := rand.New(rand.NewPCG(63, 64))
	const rows, d = 300, 5
	cases := []normCase{newNormCase(rng, rows, d, false), newNormCase(rng, rows, d, false), newNormCase(rng, rows, d, false)}
	var sc BNScratch
	rm, rv := make([]float64, d), make([]float64, d)
	for j := range rv {
		rm[j], rv[j] = 0.5, 2
	}
	run := func(c normCase, o BNOpts) {
		b := BatchNormBufs[float64]{X: c.x, Gamma: c.gamma, Beta: c.beta, Keep: c.keep, RunMean: rm, RunVar: rv,
			Out: make([]float64, rows*d), Mean: make([]float64, d), InvStd: make([]float64, d), Scratch: &sc}
		BatchNorm(b, rows, d, true, o)
	}
	run(cases[0], BNOpts{Eps: 1e-5, Momentum: 0.1, Replay: true})
	for j := range rm {
		if rm[j] != 0.5 || rv[j] != 2 {
			t.Fatalf("replay moved the running statistics: %v, %v", rm, rv)
		}
	}
	clear(rm)
	clear(rv)
	wm, wv := make([]float64, d), make([]float64, d)
	for k, c := range cases {
		run(c, BNOpts{Eps: 1e-5, Momentum: 0.1, Average: k + 1})
		_, m, v, _, _, _, _, _ := bnReference(c, true, false, false, 1e-5, 0.1)
		n := float64(countKept(c.keep))
		for j := range wm {
			wm[j] += m[j] / float64(len(cases))
			wv[j] += v[j] * n / (n - 1) / float64(len(cases))
		}
	}
	closeTo(t, "calibrated mean", rm, wm, 1e-12)
	closeTo(t, "calibrated variance", rv, wv, 1e-12)
}

// lnReference is a layer norm's forward and backward passes as plain float64 loops.
func lnReference(c normCase, eps float64) (out, dx, dgamma, dbeta []float64) {
	rows, d := c.rows, c.d
	out, dx, dgamma, dbeta = make([]float64, rows*d), make([]float64, rows*d), make([]float64, d), make([]float64, d)
	for r := 0; r < rows; r++ {
		if !c.keep[r] {
			continue
		}
		x, g := c.x[r*d:(r+1)*d], c.dy[r*d:(r+1)*d]
		m, v := 0.0, 0.0
		for _, f := range x {
			m += f / float64(d)
		}
		for _, f := range x {
			v += (f - m) * (f - m) / float64(d)
		}
		sigma := math.Sqrt(v + eps)
		xh := make([]float64, d)
		a1, a2 := 0.0, 0.0 // mean(γ⊙dy), mean(γ⊙dy⊙x̂)
		for j := range x {
			xh[j] = (x[j] - m) / sigma
			out[r*d+j] = c.gamma[j]*xh[j] + c.beta[j]
			dgamma[j] += g[j] * xh[j]
			dbeta[j] += g[j]
			a1 += c.gamma[j] * g[j] / float64(d)
			a2 += c.gamma[j] * g[j] * xh[j] / float64(d)
		}
		for j := range x {
			dx[r*d+j] = (c.gamma[j]*g[j] - a1 - xh[j]*a2) / sigma
		}
	}
	return
}

func testLayerNorm[T Float](t *testing.T, tol float64) {
	rng := rand.New(rand.NewPCG(65, 66))
	_, is32 := any(T(0)).(float32)
	for _, sz := range [][2]int{{1, 4}, {300, 13}} {
		rows, d := sz[0], sz[1]
		c := newNormCase(rng, rows, d, is32)
		c.keep[0] = true
		wOut, wDx, wDg, wDb := lnReference(c, 1e-5)
		b := LayerNormBufs[T]{X: conv[T](c.x), Gamma: conv[T](c.gamma), Beta: conv[T](c.beta), Keep: c.keep,
			Out: make([]T, rows*d), Xhat: make([]float64, rows*d), InvStd: make([]float64, rows)}
		LayerNorm(b, rows, d, 1e-5)
		closeTo(t, "layer norm", toF64(b.Out), wOut, tol)
		dx, dg, db := make([]T, rows*d), make([]T, d), make([]T, d)
		dy := conv[T](c.dy)
		LayerNormBackward(dx, dg, db, dy, b, rows, d)
		closeTo(t, "layer norm dx", toF64(dx), wDx, tol)
		closeTo(t, "layer norm dγ", toF64(dg), wDg, tol*float64(rows))
		closeTo(t, "layer norm dβ", toF64(db), wDb, tol*float64(rows))
		// One output at a time gives the same bits.
		one := make([]T, d)
		LayerNormBackward(nil, one, nil, dy, b, rows, d)
		if i := firstDiff(toF64(one), toF64(dg)); i >= 0 {
			t.Fatalf("dγ alone [%d] = %v, with the others %v", i, one[i], dg[i])
		}
	}
}

func TestLayerNormFloat64(t *testing.T) { testLayerNorm[float64](t, 1e-10) }
func TestLayerNormFloat32(t *testing.T) { testLayerNorm[float32](t, 2e-5) }

// TestDropout checks the generator against splitmix64's published first outputs from state 0,
// the mask's rate, the scaling and rate 0.
func TestDropout(t *testing.T) {
	for i, want := range []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f} {
		if got := Mix64(uint64(i) * 0x9e3779b97f4a7c15); got != want {
			t.Fatalf("splitmix64 output %d = %#x, want %#x", i, got, want)
		}
	}
	const n, rate, seed = 100003, 0.3, 12345
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i%97) - 40
	}
	out := make([]float32, n)
	Dropout(out, x, n, rate, seed)
	kept := 0
	scale := float32(1 / (1 - rate))
	for i := range x {
		z := Mix64(seed ^ uint64(i)*0x9e3779b97f4a7c15)
		keep := z>>11 >= uint64(math.Ceil(rate*(1<<53))) // dropout.cu's integer form
		want := float32(0)
		if keep {
			kept++
			want = x[i] * scale
		}
		if out[i] != want || keep != DropKeep(seed, i, rate) {
			t.Fatalf("dropout[%d] = %v, want %v", i, out[i], want)
		}
	}
	if f := float64(kept) / n; math.Abs(f-(1-rate)) > 0.01 {
		t.Errorf("kept %.4f of the entries at rate %v", f, rate)
	}
	Dropout(out, x, n, 0, seed)
	if i := firstDiff(widen(out), widen(x)); i >= 0 {
		t.Fatalf("rate 0 changed [%d]", i)
	}
}

// BatchNormReluMask writes dy [rows, d] = g where γ⊙x̂ + β > 0, else 0, with x̂ recomputed from
// x, mean and invStd as BatchNorm's output is: the ReLU's gradient inside BatchNormRelu, as a
// separate pass (the reference the fused form is tested against). The test is the one BatchNormBackward's fused form
// makes (with float32 on the assembly loops, the sign of the fused (x − μ)·p + β), so
// BatchNormBackward without relu on dy gives what it gives with relu on g. The CPU op uses the
// fused form.
func BatchNormReluMask[T Float](dy, g, x []T, mean, invStd []float64, gamma, beta []T, rows, d int) {
	mu, p := make([]T, d), make([]T, d)
	for j := 0; j < d; j++ {
		mu[j] = T(mean[j])
		p[j] = T(float64(gamma[j]) * invStd[j])
	}
	_, fused := f32(dy)
	beta = beta[:d]
	ParallelRange(rows, d, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			o, gr, xr := dy[r*d:(r+1)*d], g[r*d:(r+1)*d], x[r*d:(r+1)*d]
			for i, xv := range xr {
				v := xv - mu[i]
				pos := v*p[i]+beta[i] > 0
				if fused {
					pos = math.FMA(float64(v), float64(p[i]), float64(beta[i])) > 0 // the exact sign
				}
				if pos {
					o[i] = gr[i]
				} else {
					o[i] = 0
				}
			}
		}
	})
}

// TestBNScratchBytes: BNScratchBytes is what a state's scratch holds (its buffers' capacities)
// after a training pass, and after its backward pass too, in both element types, for row
// counts around the chunk size.
func TestBNScratchBytes(t *testing.T) {
	held := func(sc *BNScratch) int64 {
		n := 8 * int64(cap(sc.s1)+cap(sc.s2))
		for _, b := range []any{sc.parts, sc.cols} {
			switch b := b.(type) {
			case []float32:
				n += 4 * int64(cap(b))
			case []float64:
				n += 8 * int64(cap(b))
			}
		}
		return n
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, rows := range []int{3, BNChunk, BNChunk + 1, 3*BNChunk + 7} {
		for _, d := range []int{1, 30} {
			c := newNormCase(rng, rows, d, true)
			check := func(elem int64, run func(s *BatchNormState, grad bool)) {
				for _, grad := range []bool{false, true} {
					var s BatchNormState
					run(&s, grad)
					if got, want := held(&s.Scratch), BNScratchBytes(rows, d, elem, grad); got != want {
						t.Errorf("rows %d, d %d, %d-byte elements, grad %v: the scratch holds %d bytes, BNScratchBytes says %d", rows, d, elem, grad, got, want)
					}
				}
			}
			check(4, func(s *BatchNormState, grad bool) { bnPasses[float32](s, c, grad) })
			check(8, func(s *BatchNormState, grad bool) { bnPasses[float64](s, c, grad) })
		}
	}
}

// bnPasses runs a training batch norm of c on s, and its backward pass if grad.
func bnPasses[T Float](s *BatchNormState, c normCase, grad bool) {
	conv := func(v []float64) []T {
		o := make([]T, len(v))
		for i, x := range v {
			o[i] = T(x)
		}
		return o
	}
	x, gamma, beta := conv(c.x), conv(c.gamma), conv(c.beta)
	b := BatchNormBufs[T]{X: x, Gamma: gamma, Beta: beta, Keep: c.keep, RunMean: make([]float64, c.d),
		RunVar: make([]float64, c.d), Out: make([]T, c.rows*c.d)}
	BatchNormForward(s, b, c.rows, c.d, true, BNOpts{Eps: BNEps, Momentum: BNMomentum})
	if grad {
		dx, dg, db := make([]T, c.rows*c.d), make([]T, c.d), make([]T, c.d)
		BatchNormGrad(s, dx, dg, db, conv(c.dy), BatchNormBufs[T]{X: x, Gamma: gamma, Beta: beta, Keep: c.keep}, c.rows, c.d, true, false, nil)
	}
}
