package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// colOrderedSums returns the column sums of v(r, c) over the rows r where keep[r] != 0 (every
// row when keep is nil), added in the order the column-reduction kernels fix: within a chunk
// of colReduceGeometry, thread row y of the block sums rows y, y + colY, … in float64, and the
// block adds its colY partial sums in order y = 0, 1, … (rw_col_reduce); in the last block,
// thread row y adds the chunks y, y + colY, … in order, and those colY sums are added in order
// y = 0, 1, … (rw_chunk_sum).
func colOrderedSums(rows, d int, keep []int32, v func(r, c int) float64) []float64 {
	_, chunks, rpc := colReduceGeometry(rows, d)
	out := make([]float64, d)
	for c := range d {
		block := make([]float64, chunks)
		for k := range chunks {
			r0, r1 := min(k*rpc, rows), min((k+1)*rpc, rows)
			for y := range colY {
				s := 0.0
				for r := r0 + y; r < r1; r += colY {
					if keep == nil || keep[r] != 0 {
						s += v(r, c)
					}
				}
				block[k] += s
			}
		}
		if chunks == 1 {
			out[c] = block[0]
			continue
		}
		tot := 0.0
		for y := range colY {
			s := 0.0
			for k := y; k < chunks; k += colY {
				s += block[k]
			}
			tot += s
		}
		out[c] = tot
	}
	return out
}

// rowOrderSums is the plain sum over the rows in order: what a different summation order
// gives, to show that the inputs tell the orders apart.
func rowOrderSums(rows, d int, v func(r, c int) float64) []float64 {
	out := make([]float64, d)
	for r := range rows {
		for c := range d {
			out[c] += v(r, c)
		}
	}
	return out
}

// wideRandn draws rows × d values whose magnitudes span six decades, and gives each column
// a few pairs of ±2⁴⁰ at random rows: they cancel exactly, but while a partial sum holds one
// of them the small values round against it (at 2⁻¹²), so float64 sums in different orders
// differ even after rounding to float32.
func wideRandn(rng *rand.Rand, rows, d int) []float32 {
	xs := make([]float32, rows*d)
	for i := range xs {
		xs[i] = float32(rng.NormFloat64() * math.Pow(10, 6*rng.Float64()-3))
	}
	const big = 1 << 40
	for c := range d {
		for range 4 {
			a, b := rng.IntN(rows), rng.IntN(rows)
			if a != b {
				xs[a*d+c], xs[b*d+c] = big, -big
			}
		}
	}
	return xs
}

// sameBits requires got to equal float32(want[i]) bit for bit.
func sameBits(t *testing.T, what string, got []float32, want []float64) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(float32(want[i])) {
			t.Fatalf("%s[%d] = %v (%#08x), want %v (%#08x), the chunk-ordered sum", what, i, got[i], math.Float32bits(got[i]), float32(want[i]), math.Float32bits(float32(want[i])))
		}
	}
}

// TestGPUColReduceChunkOrder checks that the one-launch column reductions (ColSum, and
// BatchNormBackward's dγ, dβ, whose sums LayerNormBackward's share: rw_col_dy_sums) give, bit
// for bit, the chunk-ordered float64 sums computed here from the same float32 inputs (the
// combine is in a fixed order, so the result is deterministic), with many row chunks, at
// most colY chunks and one chunk, d not a multiple of colX; and that a second launch in a row
// is right too: the last block of each column tile resets its arrival counter
// (TestEmuCatchesBrokenKernels' "no-reset" mutant fails here). LayerNormBackward itself is left out: its warp-per-row dx
// pass takes seconds at these sizes on the emulated GPU.
func TestGPUColReduceChunkOrder(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range []struct{ rows, d, chunks int }{{3000, 45, 46}, {5000, 70, 77}, {500, 33, 7}, {100, 33, 1}} {
		t.Run(fmt.Sprintf("rows%d_d%d", sz.rows, sz.d), func(t *testing.T) {
			if _, chunks, _ := colReduceGeometry(sz.rows, sz.d); chunks != sz.chunks {
				t.Fatalf("%d × %d: %d chunks, the test wants %d", sz.rows, sz.d, chunks, sz.chunks)
			}
			rows, d, n := sz.rows, sz.d, sz.rows*sz.d
			rng := rand.New(rand.NewPCG(uint64(700+i), 3))
			xv, dy, xh := wideRandn(rng, rows, d), wideRandn(rng, rows, d), wideRandn(rng, rows, d)
			_, keep := randKeep(rng, rows)
			at := func(xs []float32) func(r, c int) float64 {
				return func(r, c int) float64 { return float64(xs[r*d+c]) }
			}
			dyXhat := func(r, c int) float64 { return float64(dy[r*d+c]) * float64(xh[r*d+c]) }
			wantSum := colOrderedSums(rows, d, nil, at(xv))
			wantDbeta, wantDgamma := colOrderedSums(rows, d, keep, at(dy)), colOrderedSums(rows, d, keep, dyXhat)
			if sz.chunks > 1 && equal32(wantSum, rowOrderSums(rows, d, at(xv))) {
				t.Fatal("the chunk-ordered and the row-ordered column sums agree bit for bit: the inputs cannot tell the orders apart")
			}

			dv, k := gpu(t)
			g := dev{t, dv}
			x := g.up(xv)
			for launch := 1; launch <= 2; launch++ {
				out := g.poison(d)
				must(t, k.ColSum(out, x, rows, d))
				sameBits(t, fmt.Sprintf("col_sum launch %d: column sum", launch), g.down(out, d), wantSum)
			}
			gdy, gxh, gk := g.up(dy), g.up(xh), g.upI(keep)
			ones := g.up(onesF32(d))
			bn := BatchNormBufs{X: gxh, Mean: g.up(make([]float32, d)), InvStd: ones, Gamma: ones, Keep: gk} // x̂ = (x − 0)·1 = x
			for launch := 1; launch <= 2; launch++ {
				dx, dg, db := g.poison(n), g.poison(d), g.poison(d)
				must(t, k.BatchNormBackward(dx, dg, db, gdy, bn, rows, d, true))
				sameBits(t, fmt.Sprintf("bn_backward launch %d: dβ", launch), g.down(db, d), wantDbeta)
				sameBits(t, fmt.Sprintf("bn_backward launch %d: dγ", launch), g.down(dg, d), wantDgamma)
			}
			if sz.chunks > 1 { // the counters exist, and every launch left them at 0
				counts := make([]uint32, colTargetBlocks)
				must(t, CopyFromDevice(dv, counts, k.count))
				for tile, v := range counts {
					if v != 0 {
						t.Fatalf("arrival counter %d = %d after the launches, want 0 (each tile's last block resets it)", tile, v)
					}
				}
			}
		})
	}
}

// equal32 reports whether a and b round to the same float32 values.
func equal32(a, b []float64) bool {
	for i := range a {
		if float32(a[i]) != float32(b[i]) {
			return false
		}
	}
	return true
}

func onesF32(n int) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = 1
	}
	return xs
}
