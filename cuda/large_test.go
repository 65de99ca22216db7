package cuda

// Large GPU op tests: sizes at which every grid-stride loop of the kernels runs more than one
// pass (grid1 caps a grid at 32 blocks per SM, about 1.1 million threads on an H100, and
// gridWarps at about 34,000 warps) and at which the column reductions split their rows into
// many chunks (colReduceGeometry), each against the same CPU twin as gpu_test.go. The feature
// counts are small (4 to 16) so the CPU twin stays fast at 3 million rows; one batch-norm case
// has 1 million rows × 70 columns (three column tiles, as GatedGCN's edge batch norm).
//
// Unlike gpu_test.go's tests these skip before computing their CPU reference where no GPU is
// found (it takes seconds at these sizes). Run: go test ./cuda -run GPULarge -v

import (
	"fmt"
	"slices"
	"testing"

	"github.com/rewiregnn/rewiregnn/ops"
)

// largeRows is the row count of the 3-million-row cases.
const largeRows = 3_000_000

// large is tolerance for sums over millions of terms: both sides accumulate in double, so the
// float32 results differ by rounding only, but ScatterAdd's float32 atomics and inputs that
// went through float32 intermediates (x̂) take a little more.
var large = tol{2e-4, 2e-5}

// skipLarge skips a large test with -short, and before its CPU reference where no GPU is
// found: at these sizes the reference takes seconds and proves nothing without the GPU side.
func skipLarge(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("large test: skipped with -short")
	}
	gpu(t)
	if emulated() {
		t.Skip("large test: GPU sizes; on the emulated GPU (1 SM) the TestGPU tests' sizes already run every loop in several passes")
	}
}

func TestGPULargeScatterAdd(t *testing.T) {
	skipLarge(t)
	const n, rows, d = largeRows, 400_000, 8
	tw := newTwin(t, 1001)
	idx := randIndex(tw.rng, n, usedRows(rows))
	w := tw.randn(n)
	ix := &ops.Index{Name: "ix", Idx: idx, W: f64s(w)}
	xv := tw.randn(n * d)
	x := tw.mat("x", xv, n, d)
	y := tw.ok(ops.ScatterAdd(x, ix, rows))
	want, _ := tw.runLoss(y, y)

	dv, k := gpu(t)
	g := dev{t, dv}
	out := g.poison(rows * d)
	must(t, k.ScatterAdd(out, g.up(xv), g.upI(idx), g.up(w), n, rows, d))
	near(t, "scatter-add", g.down(out, rows*d), want, large)
}

func TestGPULargeSegmentSoftmax(t *testing.T) {
	skipLarge(t)
	const m, nodes, h = largeRows, 300_000, 2
	tw := newTwin(t, 1002)
	seg := randIndex(tw.rng, m, usedRows(nodes))
	sv := tw.randn(m * h)
	for j := range sv {
		sv[j] *= 4
	}
	dy := tw.randn(m * h)
	s := tw.mat("s", sv, m, h)
	y := tw.ok(ops.SegmentSoftmax(s, &ops.Index{Name: "dst", Idx: seg}, nodes))
	want, grads := tw.run(y, dy, s)

	dv, k := gpu(t)
	g := dev{t, dv}
	ds := g.upI(seg)
	yd := g.poison(m * h)
	must(t, k.SegmentSoftmax(yd, g.up(sv), ds, m, h, nodes))
	near(t, "segment softmax", g.down(yd, m*h), want, reduce)
	dx := g.poison(m * h)
	must(t, k.SegmentSoftmaxBackward(dx, yd, g.up(dy), ds, m, h, nodes))
	near(t, "segment softmax backward", g.down(dx, m*h), grads[0], reduce)
}

func TestGPULargeLayerNorm(t *testing.T) {
	skipLarge(t)
	const rows, d = largeRows, 8
	tw := newTwin(t, 1003)
	keep, ki := randKeep(tw.rng, rows)
	xv, gv, bv, dy := tw.randn(rows*d), tw.randn(d), tw.randn(d), tw.randn(rows*d)
	x, gamma, beta := tw.mat("x", xv, rows, d), tw.vec("gamma", gv), tw.vec("beta", bv)
	y := tw.ok(ops.LayerNorm(x, gamma, beta, &ops.Mask{Name: "m", Keep: keep}))
	want, grads := tw.run(y, dy, x, gamma, beta)

	dv, k := gpu(t)
	g := dev{t, dv}
	b := LayerNormBufs{X: g.up(xv), Gamma: g.up(gv), Beta: g.up(bv), Keep: g.upI(ki),
		Out: g.poison(rows * d), Xhat: g.poison(rows * d), InvStd: g.poison(rows)}
	must(t, k.LayerNorm(b, rows, d))
	near(t, "layer norm", g.down(b.Out, rows*d), want, reduce)
	dx, dg, db := g.poison(rows*d), g.poison(d), g.poison(d)
	gdy := g.up(dy)
	must(t, k.LayerNormBackward(dx, dg, db, gdy, b, rows, d))
	near(t, "layer norm dx", g.down(dx, rows*d), grads[0], reduce)
	dgv, dbv := g.down(dg, d), g.down(db, d)
	near(t, "layer norm dγ", dgv, grads[1], large)
	near(t, "layer norm dβ", dbv, grads[2], large)
	// The chunk sums are combined in a fixed order: a second run gives the same bits.
	must(t, k.LayerNormBackward(dx, dg, db, gdy, b, rows, d))
	if !slices.Equal(g.down(dg, d), dgv) || !slices.Equal(g.down(db, d), dbv) {
		t.Fatal("layer norm dγ, dβ differ between two identical runs")
	}
}

func TestGPULargeBatchNorm(t *testing.T) {
	skipLarge(t)
	for i, sz := range []struct{ rows, d int }{{largeRows, 8}, {1_000_000, 70}} {
		t.Run(fmt.Sprintf("rows%d_d%d", sz.rows, sz.d), func(t *testing.T) {
			rows, d := sz.rows, sz.d
			n := rows * d
			tw := newTwin(t, uint64(1010+i))
			keep, ki := randKeep(tw.rng, rows)
			xv, gv, bv, dy := tw.randn(n), tw.randn(d), tw.randn(d), tw.randn(n)
			for j := range xv {
				xv[j] = 3 + 2*xv[j] // a mean well away from 0: the centred second pass matters
			}
			st := ops.NewBNState("bn", d)
			st.Training = true
			rm, rv := make([]float32, d), make([]float32, d)
			for c := range rm {
				rm[c] = float32(tw.rng.NormFloat64())
				rv[c] = float32(0.5 + tw.rng.Float64())
				st.RunMean[c], st.RunVar[c] = float64(rm[c]), float64(rv[c])
			}
			x, gamma, beta := tw.mat("x", xv, rows, d), tw.vec("gamma", gv), tw.vec("beta", bv)
			y := tw.ok(ops.BatchNorm(x, gamma, beta, st, &ops.Mask{Name: "m", Keep: keep}))
			want, grads := tw.run(y, dy, x, gamma, beta)

			dv, k := gpu(t)
			g := dev{t, dv}
			b := BatchNormBufs{X: g.up(xv), Gamma: g.up(gv), Beta: g.up(bv), Keep: g.upI(ki),
				RunMean: g.up(rm), RunVar: g.up(rv), Out: g.poison(n),
				Mean: g.poison(d), InvStd: g.poison(d)}
			must(t, k.BatchNorm(b, rows, d, true))
			near(t, "batch norm", g.down(b.Out, n), want, reduce)
			near(t, "running mean", g.down(b.RunMean, d), f32s(st.RunMean), reduce)
			near(t, "running var", g.down(b.RunVar, d), f32s(st.RunVar), reduce)
			dx, dg, db := g.poison(n), g.poison(d), g.poison(d)
			gdy := g.up(dy)
			must(t, k.BatchNormBackward(dx, dg, db, gdy, b, rows, d, true))
			dxv, dgv, dbv := g.down(dx, n), g.down(dg, d), g.down(db, d)
			near(t, "batch norm dx", dxv, grads[0], reduce)
			near(t, "batch norm dγ", dgv, grads[1], large)
			near(t, "batch norm dβ", dbv, grads[2], large)
			// Deterministic: the same inputs give the same bits.
			must(t, k.BatchNormBackward(dx, dg, db, gdy, b, rows, d, true))
			if !slices.Equal(g.down(dx, n), dxv) || !slices.Equal(g.down(dg, d), dgv) || !slices.Equal(g.down(db, d), dbv) {
				t.Fatal("batch norm backward differs between two identical runs")
			}
		})
	}
}

func TestGPULargeColSum(t *testing.T) {
	skipLarge(t)
	for i, sz := range []struct{ rows, d int }{{largeRows, 5}, {1_000_000, 70}} {
		t.Run(fmt.Sprintf("rows%d_d%d", sz.rows, sz.d), func(t *testing.T) {
			rows, d := sz.rows, sz.d
			tw := newTwin(t, uint64(1020+i))
			xv := tw.randn(rows * d)
			for j := range xv {
				xv[j] += 0.5 // column sums far from 0
			}
			x := tw.mat("x", xv, rows, d)
			y := tw.ok(ops.ColSum(x))
			want, _ := tw.runLoss(y, y)

			dv, k := gpu(t)
			g := dev{t, dv}
			gx := g.up(xv)
			out := g.poison(d)
			must(t, k.ColSum(out, gx, rows, d))
			got := g.down(out, d)
			near(t, "column sum", got, want, large)
			must(t, k.ColSum(out, gx, rows, d))
			if !slices.Equal(g.down(out, d), got) {
				t.Fatal("column sum differs between two identical runs")
			}
		})
	}
}
