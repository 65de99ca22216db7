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
