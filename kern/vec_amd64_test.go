package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestVecKernels runs every element-wise loop with the assembly kernels and with the plain Go
// loops on lengths around the 8-lane step, and checks that they agree, that nothing past the
// length is written and that no input changes; those without FMA bit for bit. Where the CPU has
// AVX-512 it runs the assembly with both forms of the last masked step (tailK), which must agree
// with each other bit for bit.
func TestVecKernels(t *testing.T) {
	if !haveKernel {
		t.Skip("no AVX2/FMA kernels on this machine")
	}
	loops := map[string]struct {
		args, outs int // slices, of which the first outs are written
		f          func(s [][]float32)
	}{
		"AddTo":         {2, 1, func(s [][]float32) { AddTo(s[0], s[1]) }},
		"Add2":          {3, 1, func(s [][]float32) { Add2(s[0], s[1], s[2]) }},
		"Add3":          {4, 1, func(s [][]float32) { Add3(s[0], s[1], s[2], s[3]) }},
		"relu":          {2, 1, func(s [][]float32) { Relu(s[0], s[1]) }},
		"reluGrad":      {3, 1, func(s [][]float32) { ReluGrad(s[0], s[1], s[2]) }},
		"gatedBwd":      {6, 2, func(s [][]float32) { GatedBwdRow(s[0], s[1], s[2], s[3], s[4], s[5]) }},
		"stats":         {4, 2, func(s [][]float32) { StatsRow(s[0], s[1], s[2], s[3]) }},
		"stats2":        {5, 2, func(s [][]float32) { Stats2Row(s[0], s[1], s[2], s[3], s[4]) }},
		"affine":        {5, 1, func(s [][]float32) { AffineRow(s[0], s[1], s[2], s[3], s[4]) }},
		"bnBack":        {7, 1, func(s [][]float32) { BNBackRow(s[0], s[1], s[2], s[3], s[4], s[5], s[6]) }},
		"affineRelu":    {5, 1, func(s [][]float32) { AffineReluRow(s[0], s[1], s[2], s[3], s[4]) }},
		"affineReluAdd": {6, 1, func(s [][]float32) { AffineReluAddRow(s[0], s[1], s[2], s[3], s[4], s[5]) }},
		"statsRelu":     {7, 2, func(s [][]float32) { StatsReluRow(s[0], s[1], s[2], s[3], s[4], s[5], s[6]) }},
		"gatedFwdSig":   {5, 3, func(s [][]float32) { GatedFwdSigRow(s[0], s[1], s[2], s[3], s[4]) }},
		"bnBackRelu":    {9, 1, func(s [][]float32) { BNBackReluRow(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8]) }},
		"scale":         {2, 1, func(s [][]float32) { ScaleTo(s[0], s[1], -0.7391) }},
		"axpy":          {2, 1, func(s [][]float32) { AxpyTo(s[0], s[1], 1.3717) }},
	}
	exact := map[string]bool{"scale": true, "axpy": true} // no FMA in either: bit for bit the Go loop
	rng := rand.New(rand.NewPCG(41, 42))
	for name, l := range loops {
		for n := 0; n <= 41; n++ {
			if n > 20 && n != 41 && n != 33 {
				continue
			}
			const pad = 9
			base := make([][]float32, l.args)
			for i := range base {
				base[i] = make([]float32, n+pad)
				for j := range base[i] {
					base[i][j] = float32(rng.NormFloat64())
				}
			}
			run := func(asm, k bool) [][]float32 {
				s := make([][]float32, l.args)
				for i := range s {
					s[i] = append([]float32(nil), base[i]...)
				}
				saved, savedK := haveKernel, tailK
				haveKernel, tailK = asm, k
				defer func() { haveKernel, tailK = saved, savedK }()
				args := make([][]float32, l.args)
				for i := range args {
					args[i] = s[i][:n]
				}
				l.f(args)
				return s
			}
			modes := tailModes()
			got, want := run(true, modes[0]), run(false, false)
			for _, k := range modes[1:] {
				other := run(true, k)
				for i := range got {
					for j := range got[i] {
						if math.Float32bits(other[i][j]) != math.Float32bits(got[i][j]) {
							t.Fatalf("%s n=%d: slice %d[%d] = %v with the AVX-512 tail, %v with AVX2's", name, n, i, j, other[i][j], got[i][j])
						}
					}
				}
			}
			for i := range got {
				for j := range got[i] {
					if i >= l.outs || j >= n {
						if got[i][j] != base[i][j] {
							t.Fatalf("%s n=%d: slice %d[%d] changed", name, n, i, j)
						}
						continue
					}
					if exact[name] && math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
						t.Fatalf("%s n=%d: out %d[%d] = %v, Go loop %v: not bit for bit", name, n, i, j, got[i][j], want[i][j])
					}
					if d := math.Abs(float64(got[i][j] - want[i][j])); d > 1e-5*(1+math.Abs(float64(want[i][j]))) {
						t.Fatalf("%s n=%d: out %d[%d] = %v, Go loop %v", name, n, i, j, got[i][j], want[i][j])
					}
				}
			}
		}
	}
}

// BenchmarkVecRowTail runs AddTo and GatedFwdSigRow row by row, as the GatedGCN layers do, on
// rows of 64, 70 (the hidden width of the AQSOL and ZINC GatedGCN) and 72 values, with the last
// len mod 8 values under AVX2's VMASKMOVPS and, where the CPU has AVX-512, under a mask register.
func BenchmarkVecRowTail(b *testing.B) {
	if !haveKernel {
		b.Skip("no AVX2/FMA kernels on this machine")
	}
	saved := tailK
	defer func() { tailK = saved }()
	const rows = 4096
	for _, k := range tailModes() {
		tailK = k
		mode := map[bool]string{false: "vmaskmov", true: "k-mask"}[k]
		for _, n := range []int{64, 70, 72} {
			d, s := make([]float32, rows*n), make([]float32, rows*n)
			eta, num, den, bb := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
			b.Run(fmt.Sprintf("AddTo/%s/%d", mode, n), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					for r := 0; r < rows; r++ {
						AddTo(d[r*n:(r+1)*n], s[r*n:(r+1)*n])
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
			})
			b.Run(fmt.Sprintf("GatedFwdSig/%s/%d", mode, n), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					for r := 0; r < rows; r++ {
						GatedFwdSigRow(eta, num, den, s[r*n:(r+1)*n], bb)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
			})
		}
	}
}

// tailModes are the values of tailK this CPU can run.
func tailModes() []bool {
	if haveTailK {
		return []bool{false, true}
	}
	return []bool{false}
}

// TestGatedSig16IsGatedSig8 checks the 16-lane sigmoid loop against the 8-lane one bit for bit
// (η, and num and den updated from non-zero starts) on every 997th float32 bit pattern, which
// covers both signs, subnormals, the clamp at ±88.38, the infinities and NaNs, and on the
// values around the clamp. (Run once on all 2³² patterns on 2026-12-02: none differs.)
func TestGatedSig16IsGatedSig8(t *testing.T) {
	if !haveTailK {
		t.Skip("no AVX-512 on this machine")
	}
	var e []float32
	for u := uint64(0); u < 1<<32; u += 997 {
		e = append(e, math.Float32frombits(uint32(u)))
	}
	for _, c := range []float32{88.37626, 88.37627, 88.3763, 88.4, -88.37626, -88.37627, -88.3763, -88.4, 0, float32(math.Copysign(0, -1))} {
		e = append(e, c, math.Nextafter32(c, 100), math.Nextafter32(c, -100))
	}
	checkGatedSig16(t, e)
}

func checkGatedSig16(t *testing.T, e []float32) {
	n := len(e)
	b := make([]float32, n)
	for i := range b {
		b[i] = float32(i%7) - 2.5
	}
	run := func(f func(eta, num, den, e, b []float32)) (eta, num, den []float32) {
		eta, num, den = make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range num {
			num[i], den[i] = float32(i%5)*0.3, float32(i%3)*0.7
		}
		f(eta, num, den, e, b)
		return
	}
	e8, n8, d8 := run(vGatedFwdSig)
	e16, n16, d16 := run(vGatedFwdSig16)
	for i := range e {
		for _, p := range [][2]float32{{e16[i], e8[i]}, {n16[i], n8[i]}, {d16[i], d8[i]}} {
			if math.Float32bits(p[0]) != math.Float32bits(p[1]) {
				t.Fatalf("e = %v (%#08x): 16 lanes give η, num, den = %v, %v, %v; 8 lanes %v, %v, %v", e[i], math.Float32bits(e[i]), e16[i], n16[i], d16[i], e8[i], n8[i], d8[i])
			}
		}
	}
}

// TestSumRowsIsAddTo checks SumRows and SumRowsAt on AVX-512 (vSumRows) against the AddTo loop it replaces,
// bit for bit, for row widths around its 16- and 64-column steps, listed and consecutive rows,
// rows longer than o (stride > len(o)), and signed zeros, infinities and NaNs among the values;
// nothing past len(o) is written.
func TestSumRowsIsAddTo(t *testing.T) {
	if !haveTailK || !haveKernel {
		t.Skip("no AVX-512 on this machine")
	}
	rng := rand.New(rand.NewPCG(71, 72))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e38, -1e38, 1e-45}
	for _, cols := range []int{1, 5, 15, 16, 17, 33, 63, 64, 65, 70, 100, 129, 200} {
		for _, extra := range []int{0, 3} {
			stride, rows := cols+extra, 37
			g := randF32(rng, rows*stride)
			for i := range g {
				if rng.IntN(50) == 0 {
					g[i] = special[rng.IntN(len(special))]
				}
			}
			idx := make([]int32, 23)
			for i := range idx {
				idx[i] = int32(rng.IntN(rows))
			}
			for _, mode := range []string{"listed", "consecutive", "none"} {
				var ix []int32
				n := rows
				switch mode {
				case "listed":
					ix = idx
				case "none":
					n = 0
				}
				sum := func(o []float32) {
					if mode == "listed" {
						SumRowsAt(o, g, ix, stride)
					} else {
						SumRows(o, g, n, stride)
					}
				}
				o0 := randF32(rng, cols+4)
				got, want := append([]float32(nil), o0...), append([]float32(nil), o0...)
				sum(got[:cols])
				saved := tailK
				tailK = false
				sum(want[:cols])
				tailK = saved
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("cols %d stride %d %s: o[%d] = %v, the AddTo loop %v", cols, stride, mode, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// spiced replaces about one in every `every` values of v with a special one (signed zeros, infinities,
// NaN, the largest and the smallest magnitudes), and returns v.
func spiced(rng *rand.Rand, v []float32, every int) []float32 {
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e38, -1e38, 1e-45}
	for i := range v {
		if rng.IntN(every) == 0 {
			v[i] = special[rng.IntN(len(special))]
		}
	}
	return v
}

// TestStatsRowsIsRowLoop checks StatsRows, Stats2Rows and StatsReluRows on AVX-512 (the sums in
// registers) against the row loops they replace (StatsRow, Stats2Row, StatsReluRow on each kept
// row, in order), bit for bit: row widths around the 16- and 64-column steps, rows longer than
// the sums (stride > len(s1)), every row kept, none kept and a random half, nonzero sums at
// the start, and signed zeros, infinities and NaNs among the values; nothing past len(s1) is
// written; in StatsReluRows some columns' (x − mu)·p + q are exactly 0.
func TestStatsRowsIsRowLoop(t *testing.T) {
	if !haveTailK || !haveKernel {
		t.Skip("no AVX-512 on this machine")
	}
	rng := rand.New(rand.NewPCG(73, 74))
	spice := func(v []float32) []float32 { return spiced(rng, v, 40) }
	kinds := map[string]func(s1, s2, a, b, mu, p, q []float32, keep []bool, stride int){
		"StatsRows": func(s1, s2, a, _, k, _, _ []float32, keep []bool, stride int) {
			StatsRows(s1, s2, a, k, keep, stride)
		},
		"Stats2Rows": func(s1, s2, a, b, mu, _, _ []float32, keep []bool, stride int) {
			Stats2Rows(s1, s2, a, b, mu, keep, stride)
		},
		"StatsReluRows": func(s1, s2, a, b, mu, p, q []float32, keep []bool, stride int) {
			StatsReluRows(s1, s2, a, b, mu, p, q, keep, stride)
		},
	}
	for name, f := range kinds {
		for _, cols := range []int{1, 5, 15, 16, 17, 33, 63, 64, 65, 70, 100, 129, 200} {
			for _, extra := range []int{0, 3} {
				for _, kept := range []string{"all", "none", "half"} {
					stride, rows := cols+extra, 41
					keep := make([]bool, rows)
					for r := range keep {
						keep[r] = kept == "all" || kept == "half" && rng.IntN(2) == 0
					}
					a, b := spice(randF32(rng, rows*stride)), spice(randF32(rng, rows*stride))
					mu, p, q := spice(randF32(rng, cols)), spice(randF32(rng, cols)), randF32(rng, cols)
					for c := range q { // (x − mu)·p + q exactly 0: u is 0 (the comparison is >)
						if rng.IntN(3) == 0 {
							q[c] = 0
							for r := 0; r < rows; r += 2 {
								b[r*stride+c] = mu[c]
							}
						}
					}
					s0 := spice(randF32(rng, 2*cols+8))
					got, want := append([]float32(nil), s0...), append([]float32(nil), s0...)
					f(got[:cols], got[cols+4:2*cols+4], a, b, mu, p, q, keep, stride)
					saved := tailK
					tailK = false
					f(want[:cols], want[cols+4:2*cols+4], a, b, mu, p, q, keep, stride)
					tailK = saved
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s cols %d stride %d rows kept %s: sums[%d] = %v, the row loop %v", name, cols, stride, kept, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// BenchmarkBatchNormPass is a batch norm's training pass over an AQSOL-sized edge batch (20,000
// rows of 70, every 50th row padding), forward and backward with ReLU (run it with -cpu 1 for
// one core). BenchmarkStatsReluRows is the backward pass's column sums alone over the same rows,
// in BNChunk chunks: in registers (AVX-512, "rows") and row by row ("row loop").
func BenchmarkBatchNormPass(b *testing.B) {
	bufs, dx, dy := bnBench()
	dg, db := make([]float32, bnD), make([]float32, bnD)
	for b.Loop() {
		BatchNorm(bufs, bnRows, bnD, true, BNOpts{Eps: BNEps, Momentum: BNMomentum, Relu: true})
		BatchNormBackward(dx, dg, db, dy, bufs, bnRows, bnD, true, true, nil)
	}
}

func BenchmarkStatsReluRows(b *testing.B) {
	if !haveTailK || !haveKernel {
		b.Skip("no AVX-512 on this machine")
	}
	bufs, _, dy := bnBench()
	x, keep, d := bufs.X, bufs.Keep, bnD
	mu, p, q := bufs.Gamma, bufs.Beta, bufs.Gamma
	s1, s2 := make([]float32, d), make([]float32, d)
	b.Run("rows", func(b *testing.B) {
		for b.Loop() {
			for lo := 0; lo < bnRows; lo += BNChunk {
				hi := min(bnRows, lo+BNChunk)
				StatsReluRows(s1, s2, dy[lo*d:hi*d], x[lo*d:hi*d], mu, p, q, keep[lo:hi], d)
			}
		}
	})
	b.Run("row loop", func(b *testing.B) {
		for b.Loop() {
			for r := range bnRows {
				if keep[r] {
					StatsReluRow(s1, s2, dy[r*d:(r+1)*d], x[r*d:(r+1)*d], mu, p, q)
				}
			}
		}
	})
}

const bnRows, bnD = 20000, 70

func bnBench() (BatchNormBufs[float32], []float32, []float32) {
	rng := rand.New(rand.NewPCG(75, 76))
	keep := make([]bool, bnRows)
	for r := range keep {
		keep[r] = r%50 != 49
	}
	bufs := BatchNormBufs[float32]{X: randF32(rng, bnRows*bnD), Gamma: randF32(rng, bnD), Beta: randF32(rng, bnD), Keep: keep,
		RunMean: make([]float64, bnD), RunVar: make([]float64, bnD), Out: make([]float32, bnRows*bnD),
		Mean: make([]float64, bnD), InvStd: make([]float64, bnD), Scratch: &BNScratch{}}
	return bufs, make([]float32, bnRows*bnD), randF32(rng, bnRows*bnD)
}

// TestHeadsInRegsIsLoop checks HeadDot and HeadScale on AVX-512 (a row in registers: vHeadDot,
// vHeadScale) against their loops, bit for bit, for every head count dividing each width up to
// 32 (and the Transformer's d = 30 with 6 heads), one row and many, signed zeros, infinities and
// NaNs among the values; nothing past the outputs is written, and a width the kernels do not
// take (48) takes the loops.
func TestHeadsInRegsIsLoop(t *testing.T) {
	if !haveTailK || !haveKernel {
		t.Skip("no AVX-512 on this machine")
	}
	rng := rand.New(rand.NewPCG(77, 78))
	spice := func(v []float32) []float32 { return spiced(rng, v, 30) }
	same := func(what string, d, h, m int, got, want []float32) {
		t.Helper()
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s d %d h %d m %d: out[%d] = %v, the loop %v", what, d, h, m, i, got[i], want[i])
			}
		}
	}
	for d := 1; d <= 48; d++ {
		for h := 1; h <= min(d, 16); h++ {
			if d%h != 0 || d > 32 && d != 48 {
				continue
			}
			for _, m := range []int{1, 7, 50} {
				a, b, s := spice(randF32(rng, m*d)), spice(randF32(rng, m*d)), spice(randF32(rng, m*h))
				o0 := randF32(rng, m*d+5)
				run := func(regs bool) (dot, scale []float32) {
					saved := tailK
					tailK = regs
					defer func() { tailK = saved }()
					dot, scale = append([]float32(nil), o0[:m*h+5]...), append([]float32(nil), o0...)
					HeadDot(dot, a, b, m, h, d)
					HeadScale(scale, a, s, m, h, d)
					return dot, scale
				}
				gd, gs := run(true)
				wd, ws := run(false)
				same("HeadDot", d, h, m, gd, wd)
				same("HeadScale", d, h, m, gs, ws)
			}
		}
	}
}

// BenchmarkHeads is HeadDot and HeadScale over the Transformer's ZINC edges (40,000 rows of 30
// columns, 6 heads), a row in registers ("regs", AVX-512) and the loops ("loop").
func BenchmarkHeads(b *testing.B) {
	if !haveTailK || !haveKernel {
		b.Skip("no AVX-512 on this machine")
	}
	const m, d, h = 40000, 30, 6
	rng := rand.New(rand.NewPCG(79, 80))
	x, y, s := randF32(rng, m*d), randF32(rng, m*d), randF32(rng, m*h)
	dot, out := make([]float32, m*h), make([]float32, m*d)
	saved := tailK
	defer func() { tailK = saved }()
	for _, mode := range []string{"regs", "loop"} {
		tailK = mode == "regs"
		b.Run("HeadDot/"+mode, func(b *testing.B) {
			for b.Loop() {
				HeadDot(dot, x, y, m, h, d)
			}
		})
		b.Run("HeadScale/"+mode, func(b *testing.B) {
			for b.Loop() {
				HeadScale(out, x, s, m, h, d)
			}
		})
	}
}
