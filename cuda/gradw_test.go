package cuda

import (
	"fmt"
	"testing"
)

// TestGradWGeometry: the row chunks of the narrow weight gradients cover the rows exactly, none
// empty, at most wgMaxChunks, one chunk below 2·wgMinChunkRows rows; which products take
// gemm.cu's kernels (the switch on, a and b at most wgMax) rather than cuBLAS.
func TestGradWGeometry(t *testing.T) {
	for _, c := range []struct{ m, chunks, rpc int }{
		{1, 1, 1}, {127, 1, 127}, {128, 2, 64}, {3058, 47, 66}, {9638, 149, 65}, {908_099, 512, 1774},
	} {
		if chunks, rpc := gradWGeometry(c.m); chunks != c.chunks || rpc != c.rpc {
			t.Errorf("gradWGeometry(%d) = %d chunks of %d rows, want %d of %d", c.m, chunks, rpc, c.chunks, c.rpc)
		}
	}
	for m := 1; m < 2_000_000; m = m*5/4 + 1 {
		chunks, rpc := gradWGeometry(m)
		if chunks < 1 || chunks > wgMaxChunks || (chunks-1)*rpc >= m || chunks*rpc < m || (chunks > 1 && rpc < wgMinChunkRows) {
			t.Fatalf("m %d: %d chunks of %d rows", m, chunks, rpc)
		}
	}
	on, off := &Kernels{narrowGW: true}, &Kernels{}
	for _, c := range []struct {
		m, a, b int
		narrow  bool
	}{{3058, 70, 70, true}, {1, 128, 128, true}, {100, 129, 70, false}, {100, 70, 129, false}, {0, 70, 70, false}, {100, 0, 70, false}} {
		if got := on.narrowGradW(c.m, c.a, c.b); got != c.narrow {
			t.Errorf("narrowGradW(%d, %d, %d) = %v, want %v", c.m, c.a, c.b, got, c.narrow)
		}
		if off.narrowGradW(c.m, c.a, c.b) {
			t.Errorf("narrowGradW(%d, %d, %d) with the switch off = true", c.m, c.a, c.b)
		}
	}
}

// TestGPUMatMulGradWNarrow checks gemm.cu's weight gradient dw = xᵀ·g (gpu.narrow_gradw)
// against a float64 product on the CPU and against cuBLAS's (within float32 summation error),
// with one chunk and many (the cap included, lowered to 8 chunks), widths below, at and above a 16-wide register
// tile and at the widest (128), and that it is deterministic: a second launch gives the same
// bits, and the batched kernels give each product's single-launch bits (the same code and
// chunks). A zero-row product leaves dw = 0 (cuBLAS's path).
func TestGPUMatMulGradWNarrow(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range []struct{ m, a, b, maxChunks int }{{1, 1, 1, 0}, {200, 70, 70, 0}, {3058, 70, 70, 0}, {1000, 16, 17, 0},
		{2000, 2, 3, 8}, {700, 128, 128, 0}, {300, 3, 100, 0}} {
		t.Run(fmt.Sprintf("m%d_a%d_b%d_cap%d", sz.m, sz.a, sz.b, sz.maxChunks), func(t *testing.T) {
			if sz.maxChunks > 0 { // the cap, reached with few rows (gradWGeometry: 8 chunks of 250)
				was := wgMaxChunks
				wgMaxChunks = sz.maxChunks
				defer func() { wgMaxChunks = was }()
			}
			tw := newTwin(t, uint64(5200+i))
			m, a, b := sz.m, sz.a, sz.b
			xs, gs := tw.randn(m*a), tw.randn(m*b)
			want := make([]float32, a*b)
			for p := range a {
				for q := range b {
					s := 0.0
					for r := range m {
						s += float64(xs[r*a+p]) * float64(gs[r*b+q])
					}
					want[p*b+q] = float32(s)
				}
			}
			d, k := gpu(t)
			g := dev{t, d}
			x, gg := g.up(xs), g.up(gs)
			blas := g.poison(a * b)
			must(t, k.MatMulBackward(0, blas, x, 0, gg, m, a, b)) // the switch off: cuBLAS
			k.narrowGW = true
			defer func() { k.narrowGW = false }()
			dw := g.poison(a * b)
			must(t, k.MatMulBackward(0, dw, x, 0, gg, m, a, b))
			first := g.down(dw, a*b)
			near(t, "xᵀ·g", first, want, reduce)
			near(t, "xᵀ·g against cuBLAS's", first, g.down(blas, a*b), reduce)
			dw2 := g.poison(a * b)
			must(t, k.MatMulBackward(0, dw2, x, 0, gg, m, a, b))
			sameBits32(t, "xᵀ·g, a second launch", g.down(dw2, a*b), first)

			// Batched: the product twice over, with another product between them, each with
			// the single launch's bits.
			x2, g2 := g.up(tw.randn(m*a)), g.up(tw.randn(m*b))
			single2 := g.poison(a * b)
			must(t, k.MatMulBackward(0, single2, x2, 0, g2, m, a, b))
			tab, err := k.NewPtrTable(9)
			must(t, err)
			defer k.FreeTable(tab)
			outs := []DevPtr{g.poison(a * b), g.poison(a * b), g.poison(a * b)}
			for j, p := range []DevPtr{x, x2, x, gg, g2, gg, outs[0], outs[1], outs[2]} {
				tab.Set(j, p)
			}
			must(t, k.UploadTable(tab))
			must(t, k.MatMulGradWBatch(tab, 0, 3, m, a, b))
			for j, w := range [][]float32{first, g.down(single2, a*b), first} {
				sameBits32(t, fmt.Sprintf("batched xᵀ·g %d", j), g.down(outs[j], a*b), w)
			}
		})
	}
	t.Run("no rows", func(t *testing.T) {
		d, k := gpu(t)
		g := dev{t, d}
		k.narrowGW = true
		defer func() { k.narrowGW = false }()
		dw := g.poison(6)
		must(t, k.MatMulBackward(0, dw, g.poison(1), 0, g.poison(1), 0, 2, 3))
		sameBits32(t, "xᵀ·g of no rows", g.down(dw, 6), make([]float32, 6))
	})
}
