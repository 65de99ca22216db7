package cuda

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/rewiregnn/rewiregnn/kern"
	"github.com/rewiregnn/rewiregnn/ops"
)

// sameBits32 compares a GPU result with its CPU twin bit for bit (the segment max copies
// values, so nothing is rounded); NaNs must match in their bits too.
func sameBits32(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v (bits %#x), want %v (bits %#x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// TestGPUSegmentMax compares the segment max, forward (values and arg-max) and backward, with
// its CPU twin bit for bit, on the test sizes: padding edges, nodes without edges, values
// rounded to halves so that most columns have ties, -0 beside +0, and (in the nan cases) NaNs
// with their own payload, which must come out as the same bits at the same place.
func TestGPUSegmentMax(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range sizes {
		for _, withNaN := range []bool{false, true} {
			t.Run(fmt.Sprintf("m%d_nodes%d_d%d_nan%v", sz.n, sz.rows, sz.d, withNaN), func(t *testing.T) {
				tw := newTwin(t, uint64(130+i))
				seg := randIndex(tw.rng, sz.n, usedRows(sz.rows))
				xv := tw.randn(sz.n * sz.d)
				negZero := float32(math.Copysign(0, -1))
				for j := range xv {
					xv[j] = float32(math.Round(float64(2*xv[j]))) / 2 // ties
					if xv[j] == 0 && tw.rng.IntN(2) == 0 {
						xv[j] = negZero
					}
				}
				if withNaN {
					for j := range xv {
						if tw.rng.IntN(40) == 0 {
							xv[j] = math.Float32frombits(0x7fc00000 | uint32(1+tw.rng.IntN(1000)))
						}
					}
				}
				dy := tw.randn(sz.rows * sz.d)
				x := tw.mat("x", xv, sz.n, sz.d)
				y := tw.ok(ops.SegmentMax(x, &ops.Index{Name: "dst", Idx: seg}, sz.rows))
				want, grads := tw.run(y, dy, x)
				var byDst kern.Segments
				byDst.Group(seg, sz.rows, nil)
				cpuOut, cpuArg := make([]float32, sz.rows*sz.d), make([]int32, sz.rows*sz.d)
				kern.SegmentMaxRows(cpuOut, cpuArg, xv, sz.d, &byDst)

				d, k := gpu(t)
				g := dev{t, d}
				ds := g.upI(seg)
				out, arg := g.poison(sz.rows*sz.d), g.poison(sz.rows*sz.d)
				must(t, k.SegmentMax(out, arg, g.up(xv), ds, sz.n, sz.d, sz.rows))
				sameBits32(t, "segment max", g.down(out, sz.rows*sz.d), want)
				gotArg := make([]int32, sz.rows*sz.d)
				must(t, CopyFromDevice(d, gotArg, arg))
				if !slices.Equal(gotArg, cpuArg) {
					for j := range gotArg {
						if gotArg[j] != cpuArg[j] {
							t.Fatalf("segment max arg[%d] = %d, want %d", j, gotArg[j], cpuArg[j])
						}
					}
				}
				dx := g.poison(sz.n * sz.d)
				must(t, k.SegmentMaxBackward(dx, g.up(dy), arg, ds, sz.n, sz.d, sz.rows))
				sameBits32(t, "segment max backward", g.down(dx, sz.n*sz.d), grads[0])
			})
		}
	}
}

// TestGPUSegmentMaxEmpty: no edges at all gives zeros and arg -1; no nodes or no columns
// writes nothing and is no error.
func TestGPUSegmentMaxEmpty(t *testing.T) {
	defer skipWithoutGPU(t)
	d, k := gpu(t)
	g := dev{t, d}
	const rows, dd = 5, 4
	out, arg := g.poison(rows*dd), g.poison(rows*dd)
	must(t, k.SegmentMax(out, arg, g.poison(1), g.poison(1), 0, dd, rows))
	sameBits32(t, "segment max of no edges", g.down(out, rows*dd), make([]float32, rows*dd))
	gotArg := make([]int32, rows*dd)
	must(t, CopyFromDevice(d, gotArg, arg))
	for j, a := range gotArg {
		if a != -1 {
			t.Fatalf("arg[%d] = %d, want -1", j, a)
		}
	}
	dx := g.poison(6 * dd)
	must(t, k.SegmentMax(g.poison(1), g.poison(1), g.poison(6*dd), g.upI([]int32{-1, -1, -1, -1, -1, -1}), 6, dd, 0))
	must(t, k.SegmentMaxBackward(dx, g.poison(1), g.poison(1), g.upI([]int32{-1, -1, -1, -1, -1, -1}), 6, dd, 0))
	sameBits32(t, "segment max backward without nodes", g.down(dx, 6*dd), make([]float32, 6*dd))
	// x too small for 2 edges of width 200 on a GPU too (allocations there come in 512-byte
	// size classes; the emulated GPU's are exact).
	const wide = 200
	if err := k.SegmentMax(g.poison(rows*wide), g.poison(rows*wide), g.poison(4), g.upI([]int32{0, 1}), 2, wide, rows); err == nil {
		t.Error("segment max with a too-small x was accepted")
	}
	must(t, d.Sync())
}
