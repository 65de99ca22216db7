package cuda

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestGPUBatchedLaunches: MatMulBatch, MatMulGradWBatch and ColSumBatch against the same
// products and sums launched one at a time (each tested against its CPU twin elsewhere): the
// column sums bit for bit (the same kernel code per matrix), the products within float32
// rounding (cuBLAS may pick another algorithm for a batch; the emulator's are bit for bit).
// Operand lists in any order of addresses, a batch of one, sizes with several row chunks, and
// a batch of column sums wider than one launch's counters (split into launches).
func TestGPUBatchedLaunches(t *testing.T) {
	defer skipWithoutGPU(t)
	cases := []struct{ n, m, a, b int }{{1, 31, 7, 33}, {4, 257, 70, 70}, {3, 1300, 40, 17}, {7, 40, 3, 3200}}
	for i, cs := range cases {
		t.Run(fmt.Sprintf("n%d_m%d_a%d_b%d", cs.n, cs.m, cs.a, cs.b), func(t *testing.T) {
			tw := newTwin(t, uint64(1200+i))
			d, k := gpu(t)
			g := dev{t, d}
			n, m, a, b := cs.n, cs.m, cs.a, cs.b
			xs, ws, gs := make([]DevPtr, n), make([]DevPtr, n), make([]DevPtr, n)
			for j := range n {
				xs[j], ws[j], gs[j] = g.up(tw.randn(m*a)), g.up(tw.randn(a*b)), g.up(tw.randn(m*b))
			}
			if n > 1 {
				xs[0], xs[n-1] = xs[n-1], xs[0] // addresses in no particular order
			}
			tab, err := k.NewPtrTable(3*n + 2)
			must(t, err)
			defer k.FreeTable(tab)
			fill := func(lists ...[]DevPtr) {
				for l, list := range lists {
					for j, p := range list {
						tab.Set(1+l*n+j, p) // from entry 1: an offset table
					}
				}
				must(t, k.UploadTable(tab))
			}

			outs, dws, sums := make([]DevPtr, n), make([]DevPtr, n), make([]DevPtr, n)
			for j := range n {
				outs[j], dws[j], sums[j] = g.poison(m*b), g.poison(a*b), g.poison(b)
			}
			fill(xs, ws, outs)
			must(t, k.MatMulBatch(tab, 1, n, m, a, b))
			fill(xs, gs, dws)
			must(t, k.MatMulGradWBatch(tab, 1, n, m, a, b))
			fill(gs, sums)
			must(t, k.ColSumBatch(tab, 1, n, m, b))
			for j := range n {
				want := g.poison(m * b)
				must(t, k.MatMul(want, xs[j], ws[j], m, a, b))
				near(t, fmt.Sprintf("x·w %d", j), g.down(outs[j], m*b), g.down(want, m*b), reduce)
				want = g.poison(a * b)
				must(t, k.MatMulBackward(0, want, xs[j], ws[j], gs[j], m, a, b))
				near(t, fmt.Sprintf("xᵀ·g %d", j), g.down(dws[j], a*b), g.down(want, a*b), reduce)
				want = g.poison(b)
				must(t, k.ColSum(want, gs[j], m, b))
				sameBits32(t, fmt.Sprintf("column sums %d", j), g.down(sums[j], b), g.down(want, b))
			}
		})
	}
}

// TestGPUBatchedOneByOne: with gpu.batched_products false a batch of products is one cublasSgemm
// per product (as many device operations), whose results equal the batched call's (bit for
// bit on the emulated GPU, within float32 rounding on a GPU).
func TestGPUBatchedOneByOne(t *testing.T) {
	defer skipWithoutGPU(t)
	const n, m, a, b = 3, 257, 70, 70
	tw := newTwin(t, 1290)
	d, k := gpu(t)
	g := dev{t, d}
	tab, err := k.NewPtrTable(3 * n)
	must(t, err)
	defer k.FreeTable(tab)
	outs := make([]DevPtr, n)
	for j := range n {
		outs[j] = g.poison(m * b)
		tab.Set(j, g.up(tw.randn(m*a)))
		tab.Set(n+j, g.up(tw.randn(a*b)))
		tab.Set(2*n+j, outs[j])
	}
	must(t, k.UploadTable(tab))
	must(t, k.MatMulBatch(tab, 0, n, m, a, b))
	batched := make([][]float32, n)
	for j := range n {
		batched[j] = g.down(outs[j], m*b)
	}

	h, err := func() (*cublasHandle, error) { d.mu.Lock(); defer d.mu.Unlock(); return d.blasLocked() }()
	must(t, err)
	was := h.oneByOne
	h.oneByOne = true // as a handle of a device opened with gpu.batched_products false would be
	defer func() { h.oneByOne = was }()
	before := d.Counts()
	must(t, k.MatMulBatch(tab, 0, n, m, a, b))
	if ops := d.Counts().Sub(before).DeviceOps; ops != n {
		t.Errorf("gpu.batched_products false: a batch of %d products queued %d device operations, want %d", n, ops, n)
	}
	for j := range n {
		sameOnEmu(t, fmt.Sprintf("product %d one by one", j), g.down(outs[j], m*b), batched[j])
	}
}

// TestGPUBatchedChecks: the batched launchers refuse a table changed since its upload, lists
// beyond the table, and an operand buffer too small for its list's shape, naming the operand.
func TestGPUBatchedChecks(t *testing.T) {
	defer skipWithoutGPU(t)
	d, k := gpu(t)
	g := dev{t, d}
	tab, err := k.NewPtrTable(3)
	must(t, err)
	defer k.FreeTable(tab)
	// The operands need more than a GPU allocation's smallest size class (512 bytes), so the
	// small buffer is short on a GPU as on the emulated one (whose sizes are exact).
	x, w, small := g.up(make([]float32, 1000)), g.up(make([]float32, 1000)), g.up(make([]float32, 2))
	for j, p := range []DevPtr{x, w, small} {
		tab.Set(j, p)
	}
	for _, c := range []struct {
		what, want string
		run        func() error
	}{
		{"changed since upload", "changed since its upload", func() error { return k.MatMulBatch(tab, 0, 1, 40, 4, 4) }},
		{"upload", "", func() error { return k.UploadTable(tab) }},
		{"past the table", "pointer table of 3", func() error { return k.MatMulBatch(tab, 1, 1, 40, 4, 4) }},
		{"small output", "out[0] holds", func() error { return k.MatMulBatch(tab, 0, 1, 40, 4, 4) }},
		{"small sums", "out[0] holds", func() error { return k.ColSumBatch(tab, 1, 1, 4, 200) }},
	} {
		err := c.run()
		if c.want == "" {
			must(t, err)
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.what, err, c.want)
		}
	}
}

// TestGPUFillBatch: FillBatch fills buffers of several lengths (one of one word, one longer
// than a grid of blocks covers at once) with their own bits in one launch, leaving the words
// past each buffer's count alone; the launchers that add into buffers their caller filled
// (ScatterAddInto, EdgeSumBackwardInto, the gated aggregation with GatedBufs.Prefilled) give
// what their filling forms give on buffers filled by FillBatch.
func TestGPUFillBatch(t *testing.T) {
	defer skipWithoutGPU(t)
	tw := newTwin(t, 1400)
	d, k := gpu(t)
	g := dev{t, d}
	lens := []int{1, 70, 3000, 10000}
	vals := []float32{0, -2.5, 1e-6, 7}
	tab, err := k.NewPtrTable(3 * len(lens))
	must(t, err)
	defer k.FreeTable(tab)
	bufs := make([]DevPtr, len(lens))
	for i, n := range lens {
		bufs[i] = g.up(tw.randn(n + 5))
		tab.Set(3*i, bufs[i])
		tab.SetWord(3*i+1, uint64(n))
		tab.SetWord(3*i+2, uint64(math.Float32bits(vals[i])))
	}
	before := g.down(bufs[1], lens[1]+5)
	must(t, k.UploadTable(tab))
	must(t, k.FillBatch(tab, 0, len(lens)))
	for i, n := range lens {
		got := g.down(bufs[i], n+5)
		for j := range n {
			if math.Float32bits(got[j]) != math.Float32bits(vals[i]) {
				t.Fatalf("buffer %d word %d: %v, want %v", i, j, got[j], vals[i])
			}
		}
		if i == 1 {
			sameBits32(t, "the words past the count", got[n:], before[n:])
		}
	}

	m, rows, dd := 900, 300, 17
	src, dst := g.upI(randIndex(tw.rng, m, rows)), g.upI(randIndex(tw.rng, m, usedRows(rows)))
	x, gr := g.up(tw.randn(m*dd)), g.up(tw.randn(m*dd))
	zeroed := func(n int, v float32) DevPtr {
		p := g.poison(n)
		tab.Set(0, p)
		tab.SetWord(1, uint64(n))
		tab.SetWord(2, uint64(math.Float32bits(v)))
		must(t, k.UploadTable(tab))
		must(t, k.FillBatch(tab, 0, 1))
		return p
	}
	want, got := g.poison(rows*dd), zeroed(rows*dd, 0)
	must(t, k.ScatterAdd(want, x, src, 0, m, rows, dd))
	must(t, k.ScatterAddInto(got, x, src, 0, m, rows, dd))
	near(t, "scatter-add into a filled buffer", g.down(got, rows*dd), g.down(want, rows*dd), reduce)
	ws, wt, gs, gt := g.poison(rows*dd), g.poison(rows*dd), zeroed(rows*dd, 0), zeroed(rows*dd, 0)
	must(t, k.EdgeSumBackward(ws, wt, gr, src, dst, m, rows, dd))
	must(t, k.EdgeSumBackwardInto(gs, gt, gr, src, dst, m, rows, dd))
	near(t, "edge sum backward into filled buffers (src)", g.down(gs, rows*dd), g.down(ws, rows*dd), reduce)
	near(t, "edge sum backward into filled buffers (dst)", g.down(gt, rows*dd), g.down(wt, rows*dd), reduce)
	bh, dy := g.up(tw.randn(rows*dd)), g.up(tw.randn(rows*dd))
	plain := GatedBufs{Ehat: x, Bh: bh, Src: src, Dst: dst, Out: g.poison(rows * dd), Den: g.poison(rows * dd)}
	pre := GatedBufs{Ehat: x, Bh: bh, Src: src, Dst: dst, Out: zeroed(rows*dd, 0), Den: zeroed(rows*dd, GatedEps), Prefilled: true}
	must(t, k.GatedAggregate(plain, m, rows, rows, dd))
	must(t, k.GatedAggregate(pre, m, rows, rows, dd))
	near(t, "gated aggregate into filled buffers", g.down(pre.Out, rows*dd), g.down(plain.Out, rows*dd), reduce)
	deP, dbhP, deF, dbhF := g.poison(m*dd), g.poison(rows*dd), g.poison(m*dd), zeroed(rows*dd, 0)
	must(t, k.GatedAggregateBackward(deP, dbhP, dy, plain, m, rows, rows, dd))
	must(t, k.GatedAggregateBackward(deF, dbhF, dy, pre, m, rows, rows, dd))
	near(t, "gated dbh into a filled buffer", g.down(dbhF, rows*dd), g.down(dbhP, rows*dd), reduce)
	near(t, "gated dê", g.down(deF, m*dd), g.down(deP, m*dd), reduce)
}
