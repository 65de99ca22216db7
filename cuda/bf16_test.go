package cuda

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/cuda/emu"
)

// bf16Words is the number of 4-byte words a tensor of n bf16 elements takes.
func bf16Words(n int) int { return (n + 1) / 2 }

// downBF16 downloads a tensor of n elements stored in bf16 (element i is the low half of word
// i/2 for even i: little-endian) as their bits.
func (g dev) downBF16(p DevPtr, n int) []uint16 {
	g.t.Helper()
	words := g.down(p, bf16Words(n))
	out := make([]uint16, n)
	for i := range out {
		w := math.Float32bits(words[i/2])
		out[i] = uint16(w >> (16 * (i % 2)))
	}
	return out
}

// sameBF16 requires the bf16 bits got to be the float32s want rounded (emu.RoundBF16Bits, the
// CPU twin of the kernels' rw_bf16_bits).
func sameBF16(t *testing.T, what string, got []uint16, want []float32) {
	t.Helper()
	for i, w := range want {
		if r := emu.RoundBF16Bits(w); got[i] != r {
			t.Fatalf("%s[%d] = %#04x, want %#04x (%g rounded)", what, i, got[i], r, w)
		}
	}
}

// rounded returns the float32s xs rounded to bf16 (emu.RoundBF16).
func rounded(xs []float32) []float32 {
	out := make([]float32, len(xs))
	for i, x := range xs {
		out[i] = emu.RoundBF16(x)
	}
	return out
}

// TestGPUBF16Rounding: the kernels' bf16 rounding (edge_sum storing in bf16, here a copy of e:
// every edge's src and dst -1 and no biases) against emu.RoundBF16Bits, on values chosen for
// it: exact, ties to even both ways, the carry into the exponent and to ±Inf, subnormals, ±0,
// ±Inf and NaNs.
func TestGPUBF16Rounding(t *testing.T) {
	defer skipWithoutGPU(t)
	d, k := gpu(t)
	g := dev{t, d}
	bits := []uint32{0x3f800000, 0x3f810000, 0x3f808000, 0x3f818000, 0x3f808001, 0x3f807fff, 0xbf818000, 0x3fffffff,
		0x7f7fffff, 0xff7fffff, 0x7f7f0000, 0x00000001, 0x00018000, 0x007fffff, 0x00000000, 0x80000000,
		0x7f800000, 0xff800000, 0x7fc01234, 0x7f800001, 0xff812345, 0x3f8ccccd, 0x4049fdb, 0xc2f6e979}
	n := len(bits) // one column: m = n edges, d = 1
	xs := make([]float32, n)
	none := make([]int32, n)
	for i, b := range bits {
		xs[i], none[i] = math.Float32frombits(b), -1
	}
	e, ix := g.up(xs), g.upI(none)
	out := g.poison(bf16Words(n))
	must(t, k.EdgeSumBiased(out, e, 0, g.up([]float32{0}), 0, g.up([]float32{0}), 0, ix, ix, n, 1, 1, true, nil))
	got := g.downBF16(out, n)
	for i, b := range bits {
		if want := emu.RoundBF16Bits(xs[i]); got[i] != want {
			t.Errorf("%#08x: stored %#04x, want %#04x", b, got[i], want)
		}
	}
}

// TestGPUBF16Storage: every kernel that reads or writes a tensor stored in bf16 (GatedGCN's ê
// under train.precision bf16) against its float32 path on the rounded values, the CPU twin of
// the storage: the edge sum stores its float32 sums rounded (emu.RoundBF16Bits), with or without
// its batch norm's statistics, which are those of the rounded values; the batch norm (training
// with its own statistics, and evaluation) and its backward (dx, dγ, dβ; with the ReLU) read ê
// as the float32 batch norm reads the rounded values; the gated aggregation and its gradient
// (with the batch norm's dx folded in, its x in bf16) likewise. Bit for bit where no atomics
// add (the emulator's op tests run its concurrent schedule), within rounding where they do.
func TestGPUBF16Storage(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range sizes[1:] {
		t.Run(fmt.Sprintf("m%d_rows%d_d%d", sz.n, sz.rows, sz.d), func(t *testing.T) {
			tw := newTwin(t, uint64(1900+i))
			d, k := gpu(t)
			g := dev{t, d}
			m, rows, dd := sz.n, sz.rows, sz.d
			src, dst := g.upI(randIndex(tw.rng, m, usedRows(rows))), g.upI(randIndex(tw.rng, m, usedRows(rows)))
			e, hs, ht := g.up(tw.randn(m*dd)), g.up(tw.randn(rows*dd)), g.up(tw.randn(rows*dd))
			be, bt := g.up(tw.randn(dd)), g.up(tw.randn(dd))
			_, ki := randKeep(tw.rng, m)
			keep := g.upI(ki)
			ones := make([]float32, dd)
			for c := range ones {
				ones[c] = 1
			}
			run0, var0 := tw.randn(dd), tw.randn(dd)
			for j := range var0 {
				var0[j] = var0[j]*var0[j] + 0.5
			}
			gamma, beta := g.up(tw.randn(dd)), g.up(tw.randn(dd))
			bn := func(x DevPtr, bf bool) BatchNormBufs {
				return BatchNormBufs{X: x, Gamma: gamma, Beta: beta, Keep: keep, RunMean: g.up(run0), RunVar: g.up(var0),
					Out: g.poison(m * dd), Mean: g.poison(dd), InvStd: g.poison(dd), XBF16: bf}
			}

			// The edge sum: float32, then stored in bf16.
			x32 := g.poison(m * dd)
			must(t, k.EdgeSumBiased(x32, e, be, hs, 0, ht, bt, src, dst, m, rows, dd, false, nil))
			sums := g.down(x32, m*dd)
			xr := g.up(rounded(sums)) // the rounded values as float32: the float32 path's input
			xb := g.poison(bf16Words(m * dd))
			must(t, k.EdgeSumBiased(xb, e, be, hs, 0, ht, bt, src, dst, m, rows, dd, true, nil))
			sameBF16(t, "edge sum in bf16", g.downBF16(xb, m*dd), sums)

			// With the statistics: the same bits stored, and the statistics of the rounded values.
			want := bn(xr, false)
			must(t, k.BatchNormRelu(want, m, dd, true))
			got := bn(g.poison(bf16Words(m*dd)), true)
			must(t, k.EdgeSumBiasedStats(got.X, e, be, hs, 0, ht, bt, src, dst, m, rows, dd, true, nil,
				BNStats{Mean: got.Mean, InvStd: got.InvStd, RunMean: got.RunMean, RunVar: got.RunVar, Keep: keep}))
			sameBF16(t, "edge sum with statistics in bf16", g.downBF16(got.X, m*dd), sums)
			got.StatsDone = true
			must(t, k.BatchNormRelu(got, m, dd, true))
			same := func(what string, gp, wp DevPtr, n int) { sameBits32(t, what, g.down(gp, n), g.down(wp, n)) }
			for _, c := range []struct {
				name   string
				gp, wp DevPtr
				n      int
			}{{"mean", got.Mean, want.Mean, dd}, {"1/σ", got.InvStd, want.InvStd, dd}, {"running mean", got.RunMean, want.RunMean, dd},
				{"running variance", got.RunVar, want.RunVar, dd}, {"normalised", got.Out, want.Out, m * dd}} {
				same("fused statistics: "+c.name, c.gp, c.wp, c.n)
			}

			// The batch norm reading ê in bf16, forward (its own statistics; evaluation) and backward.
			for _, relu := range []bool{false, true} {
				for _, training := range []bool{true, false} {
					what := fmt.Sprintf("batch norm relu=%t training=%t: ", relu, training)
					forward, backward := k.BatchNorm, k.BatchNormBackward
					if relu {
						forward, backward = k.BatchNormRelu, k.BatchNormReluBackward
					}
					w, gb := bn(xr, false), bn(xb, true)
					must(t, forward(w, m, dd, training))
					must(t, forward(gb, m, dd, training))
					same(what+"output", gb.Out, w.Out, m*dd)
					same(what+"mean", gb.Mean, w.Mean, dd)
					same(what+"running variance", gb.RunVar, w.RunVar, dd)
					dy := g.up(tw.randn(m * dd))
					dxW, dgW, dbW := g.poison(m*dd), g.poison(dd), g.poison(dd)
					dxG, dgG, dbG := g.poison(m*dd), g.poison(dd), g.poison(dd)
					must(t, backward(dxW, dgW, dbW, dy, w, m, dd, training))
					must(t, backward(dxG, dgG, dbG, dy, gb, m, dd, training))
					same(what+"dx", dxG, dxW, m*dd)
					same(what+"dγ", dgG, dgW, dd)
					same(what+"dβ", dbG, dbW, dd)

					// The gated aggregation over ê in bf16, and its gradient with this batch norm's
					// dx folded in (its x, ê, in bf16 too).
					bh, gOut := g.up(tw.randn(rows*dd)), g.up(tw.randn(rows*dd))
					gw := GatedBufs{Ehat: xr, Bh: bh, Src: src, Dst: dst, Out: g.poison(rows * dd), Den: g.poison(rows * dd)}
					gg := gw
					gg.Ehat, gg.EhatBF16, gg.Out, gg.Den = xb, true, g.poison(rows*dd), g.poison(rows*dd)
					must(t, k.GatedAggregate(gw, m, rows, rows, dd))
					must(t, k.GatedAggregate(gg, m, rows, rows, dd))
					near(t, what+"gated aggregate", g.down(gg.Out, rows*dd), g.down(gw.Out, rows*dd), reduce)
					near(t, what+"gated denominators", g.down(gg.Den, rows*dd), g.down(gw.Den, rows*dd), reduce)
					gg.Out, gg.Den = gw.Out, gw.Den // the backward's inputs alike: its own bits below
					tw2, tg2 := w, gb
					tw2.Tot, tg2.Tot = g.poison(TotElems(dd)), g.poison(TotElems(dd))
					must(t, backward(0, g.poison(dd), g.poison(dd), dy, tw2, m, dd, training))
					must(t, backward(0, g.poison(dd), g.poison(dd), dy, tg2, m, dd, training))
					gw.BN = &GatedBN{Dy: dy, B: tw2, Training: training, Relu: relu}
					gg.BN = &GatedBN{Dy: dy, B: tg2, Training: training, Relu: relu}
					deW, dbhW, deG, dbhG := g.poison(m*dd), g.poison(rows*dd), g.poison(m*dd), g.poison(rows*dd)
					must(t, k.GatedAggregateBackward(deW, dbhW, gOut, gw, m, rows, rows, dd))
					must(t, k.GatedAggregateBackward(deG, dbhG, gOut, gg, m, rows, rows, dd))
					same(what+"dê", deG, deW, m*dd)
					near(t, what+"dbh", g.down(dbhG, rows*dd), g.down(dbhW, rows*dd), reduce)
				}
			}

			// A bf16 tensor is half the bytes: a buffer of m·d/2 words passes the size check,
			// and one word fewer does not, naming the tensor and its type.
			short, err := d.Alloc(4 * (bf16Words(m*dd) - 1))
			must(t, err)
			t.Cleanup(func() { d.Free(short) })
			if err := k.EdgeSumBiased(short, e, be, hs, 0, ht, bt, src, dst, m, rows, dd, true, nil); err == nil || !strings.Contains(err.Error(), "bf16 elements") {
				t.Errorf("a short bf16 output: %v, want an error naming bf16 elements", err)
			}
		})
	}
}
