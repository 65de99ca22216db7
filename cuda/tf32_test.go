package cuda

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/cuda/emu"
)

// TestGPUTF32 checks the device's TF32 math mode (MathTF32) on matrix products, single
// (cublasSgemm) and batched (cublasSgemmBatched):
//
//   - the product equals the float32 product of the inputs rounded to TF32 (emu.RoundTF32),
//     computed on the device in the default mode: on the emulated GPU bit for bit, on a GPU
//     within float32 rounding (the tensor-core kernels sum in another order); the batched
//     product on a GPU only within the TF32 bound below (cuBLAS's batched kernels may truncate
//     to TF32 where its single product rounds: an H200 did, 2026-11-27);
//   - it equals the CPU's float64 product of the rounded inputs within float32 rounding;
//   - it differs from the float32 product, by at most the TF32 error bound per element,
//     (2⁻⁹ + 2⁻¹⁸ + 2·k·2⁻²⁴)·Σ|x||w|: two inputs each off by up to one TF32 unit (2⁻¹⁰
//     relative: a GPU may truncate rather than round) and both sums' float32 rounding;
//   - a product captured in TF32 mode replays in TF32 after the mode is switched back, and
//     switching the mode during a capture is refused.
//
// A GPU without TF32 tensor cores (before compute capability 8.0) computes in float32 in
// either mode: there only the agreement with the float32 product is checked.
func TestGPUTF32(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range []struct{ m, a, b int }{{31, 7, 33}, {257, 70, 70}, {1000, 300, 17}} {
		t.Run(fmt.Sprintf("m%d_a%d_b%d", sz.m, sz.a, sz.b), func(t *testing.T) {
			tw := newTwin(t, uint64(4500+i))
			m, a, b := sz.m, sz.a, sz.b
			xv, wv := tw.randn(m*a), tw.randn(a*b)
			xr, wr := append([]float32(nil), xv...), append([]float32(nil), wv...)
			emu.RoundTF32s(xr)
			emu.RoundTF32s(wr)
			cpu := make([]float32, m*b)   // the rounded inputs' product, in float64
			bound := make([]float64, m*b) // the TF32 error bound against the float32 product
			for r := range m {
				for c := range b {
					s, abs := 0.0, 0.0
					for j := range a {
						s += float64(xr[r*a+j]) * float64(wr[j*b+c])
						abs += math.Abs(float64(xv[r*a+j]) * float64(wv[j*b+c]))
					}
					cpu[r*b+c] = float32(s)
					bound[r*b+c] = (math.Pow(2, -9) + math.Pow(2, -18) + 2*float64(a)*math.Pow(2, -24)) * abs
				}
			}

			d, k := gpu(t)
			g := dev{t, d}
			t.Cleanup(func() { must(t, d.SetMathMode(MathFP32)) })
			dx, dw, dxr, dwr := g.up(xv), g.up(wv), g.up(xr), g.up(wr)
			product := func(mode MathMode, x, w DevPtr) []float32 {
				must(t, d.SetMathMode(mode))
				out := g.poison(m * b)
				must(t, k.MatMul(out, x, w, m, a, b))
				return g.down(out, m*b)
			}
			fp32 := product(MathFP32, dx, dw)
			rounded := product(MathFP32, dxr, dwr)
			tf32 := product(MathTF32, dx, dw)
			if d.MathMode() != MathTF32 {
				t.Fatalf("MathMode() = %v after SetMathMode(%v)", d.MathMode(), MathTF32)
			}
			if !d.TF32() {
				near(t, fmt.Sprintf("tf32 product on sm_%d (no TF32 tensor cores: float32)", d.CC), tf32, fp32, reduce)
				return
			}
			sameOnEmu(t, "tf32 product vs the float32 product of the TF32-rounded inputs", tf32, rounded)
			near(t, "tf32 product vs the CPU product of the TF32-rounded inputs", tf32, cpu, reduce)
			if withinTF32(t, "tf32 product", tf32, fp32, bound) == 0 {
				t.Fatalf("the tf32 product equals the float32 product in all %d elements: the math mode did nothing", len(tf32))
			}

			// Batched: two products in one cublasSgemmBatched, each as its single product.
			tab, err := k.NewPtrTable(6)
			must(t, err)
			defer k.FreeTable(tab)
			outs := []DevPtr{g.poison(m * b), g.poison(m * b)}
			for j, p := range []DevPtr{dx, dxr, dw, dwr, outs[0], outs[1]} {
				tab.Set(j, p)
			}
			must(t, k.UploadTable(tab))
			must(t, k.MatMulBatch(tab, 0, 2, m, a, b))
			single := product(MathTF32, dxr, dwr) // TF32 inputs stay as they are
			for j, want := range [][]float32{tf32, single} {
				got := g.down(outs[j], m*b)
				if j == 0 && !emulated() {
					// cuBLAS may convert to TF32 another way in its batched kernels (an H200
					// truncated where the single product rounded, for 31×7·7×33): only the
					// TF32 bound against the float32 product holds for inputs not in TF32.
					withinTF32(t, "batched tf32 product 0", got, fp32, bound)
				} else {
					sameOnEmu(t, fmt.Sprintf("batched tf32 product %d", j), got, want)
				}
			}

			// A capture keeps the mode it was captured in; no switching during one.
			out := g.poison(m * b)
			must(t, d.BeginCapture())
			err = k.MatMul(out, dx, dw, m, a, b)
			serr := d.SetMathMode(MathFP32)
			gr, cerr := d.EndCapture()
			must(t, err)
			must(t, cerr)
			defer gr.Destroy()
			if serr == nil || !strings.Contains(serr.Error(), "captured") {
				t.Fatalf("SetMathMode during a capture: %v, want a refusal", serr)
			}
			if d.MathMode() != MathTF32 {
				t.Fatalf("a refused SetMathMode changed the mode to %v", d.MathMode())
			}
			must(t, d.SetMathMode(MathFP32))
			must(t, gr.Launch())
			sameOnEmu(t, "tf32 product captured, replayed in fp32 mode", g.down(out, m*b), tf32)
		})
	}
}

// withinTF32 fails the test where got is further from the float32 product fp32 than the TF32
// error bound, and returns how many elements differ from it at all.
func withinTF32(t *testing.T, what string, got, fp32 []float32, bound []float64) int {
	t.Helper()
	differ := 0
	for j := range got {
		diff := math.Abs(float64(got[j]) - float64(fp32[j]))
		if diff > bound[j] {
			t.Fatalf("%s[%d] = %v, float32 %v: %.3g apart, beyond the TF32 bound %.3g", what, j, got[j], fp32[j], diff, bound[j])
		}
		if diff > 0 {
			differ++
		}
	}
	return differ
}

// TestMathModeNames: the modes' names and values (cublasMath_t), and an unknown mode refused.
func TestMathModeNames(t *testing.T) {
	if MathFP32.String() != "fp32" || MathTF32.String() != "tf32" || int32(MathTF32) != 3 || int32(MathFP32) != 0 {
		t.Fatalf("modes %v = %d, %v = %d", MathFP32, int32(MathFP32), MathTF32, int32(MathTF32))
	}
	var d Device
	if err := d.SetMathMode(1); err == nil || !strings.Contains(err.Error(), "want fp32 or tf32") {
		t.Fatalf("SetMathMode(1): %v", err)
	}
}
