package cuda

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/ops"
)

// TestGPUMatMulAddGradX: dx₀ + g·wᵀ from MatMulAddGradX against dx₀ plus the CPU twin's dx of
// the same product, including an empty inner dimension (b = 0: dx stays dx₀).
func TestGPUMatMulAddGradX(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range sizes {
		a, b := sz.d, 1+(sz.d*7)%40
		t.Run(fmt.Sprintf("m%d_a%d_b%d", sz.n, a, b), func(t *testing.T) {
			tw := newTwin(t, uint64(900+i))
			xv, wv, dy, acc := tw.randn(sz.n*a), tw.randn(a*b), tw.randn(sz.n*b), tw.randn(sz.n*a)
			x, w := tw.mat("x", xv, sz.n, a), tw.mat("W", wv, a, b)
			_, grads := tw.run(tw.ok(ops.MatMul(x, w)), dy, x, w)
			want := make([]float32, len(acc))
			for j := range want {
				want[j] = acc[j] + grads[0][j]
			}
			d, k := gpu(t)
			g := dev{t, d}
			dx := g.up(acc)
			must(t, k.MatMulAddGradX(dx, g.up(wv), g.up(dy), sz.n, a, b))
			near(t, "dx₀ + g·wᵀ", g.down(dx, sz.n*a), want, reduce)

			dx = g.up(acc)
			must(t, k.MatMulAddGradX(dx, g.up(wv), g.up(dy), sz.n, a, 0))
			near(t, "dx₀ (no inner dimension)", g.down(dx, sz.n*a), acc, exact)
		})
	}
}

// TestGPUBiasedSums: EdgeSumBiased and AddBiased, with each subset of their biases, equal bit for
// bit what AddBias on each biased operand followed by EdgeSum or Add gives (the launches the
// executor folds them from; those are tested against their CPU twins), padding indices included.
func TestGPUBiasedSums(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range sizes[1:] {
		t.Run(fmt.Sprintf("m%d_rows%d_d%d", sz.n, sz.rows, sz.d), func(t *testing.T) {
			tw := newTwin(t, uint64(950+i))
			d, k := gpu(t)
			g := dev{t, d}
			m, rows, dd := sz.n, sz.rows, sz.d
			src, dst := randIndex(tw.rng, m, usedRows(rows)), randIndex(tw.rng, m, usedRows(rows))
			e, hs, ht := g.up(tw.randn(m*dd)), g.up(tw.randn(rows*dd)), g.up(tw.randn(rows*dd))
			bias := [3]DevPtr{g.up(tw.randn(dd)), g.up(tw.randn(dd)), g.up(tw.randn(dd))}
			gs, gd := g.upI(src), g.upI(dst)
			biased := func(x DevPtr, n int, b DevPtr) DevPtr {
				if b == 0 {
					return x
				}
				out := g.poison(n * dd)
				must(t, k.AddBias(out, x, b, n, dd))
				return out
			}
			for mask := range 8 {
				var b [3]DevPtr
				for j := range b {
					if mask&(1<<j) != 0 {
						b[j] = bias[j]
					}
				}
				want, got := g.poison(m*dd), g.poison(m*dd)
				must(t, k.EdgeSum(want, biased(e, m, b[0]), biased(hs, rows, b[1]), biased(ht, rows, b[2]), gs, gd, m, rows, dd))
				must(t, k.EdgeSumBiased(got, e, b[0], hs, b[1], ht, b[2], gs, gd, m, rows, dd, false, nil))
				sameBits32(t, fmt.Sprintf("edge sum, biases %03b", mask), g.down(got, m*dd), g.down(want, m*dd))
				if mask < 4 {
					want, got := g.poison(rows*dd), g.poison(rows*dd)
					must(t, k.Add(want, biased(hs, rows, b[0]), biased(ht, rows, b[1]), rows*dd))
					must(t, k.AddBiased(got, hs, b[0], ht, b[1], rows, dd))
					sameBits32(t, fmt.Sprintf("add, biases %02b", mask), g.down(got, rows*dd), g.down(want, rows*dd))
				}
			}
		})
	}
}

// TestGPUGatedFolds: the gated aggregation with Bh's bias folded in (GatedBufs.BhBias) against
// the same aggregation of AddBias's output, forward and backward (within rounding: its sums are
// atomics, in any order on a GPU; bit for bit on the emulator's schedule), and the backward
// adding dê into a buffer (GatedBufs.AccDe) against Add of that buffer and the dê it writes,
// bit for bit (dê has no atomics), padding edges included.
func TestGPUGatedFolds(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range sizes[1:] {
		t.Run(fmt.Sprintf("m%d_nodes%d_d%d", sz.n, sz.rows, sz.d), func(t *testing.T) {
			tw := newTwin(t, uint64(1300+i))
			d, k := gpu(t)
			g := dev{t, d}
			m, rows, dd := sz.n, sz.rows, sz.d
			src, dst := g.upI(randIndex(tw.rng, m, rows)), g.upI(randIndex(tw.rng, m, usedRows(rows)))
			ehat, bh, bias, dy := g.up(tw.randn(m*dd)), g.up(tw.randn(rows*dd)), g.up(tw.randn(dd)), g.up(tw.randn(rows*dd))
			biased := g.poison(rows * dd)
			must(t, k.AddBias(biased, bh, bias, rows, dd))
			plain := GatedBufs{Ehat: ehat, Bh: biased, Src: src, Dst: dst, Out: g.poison(rows * dd), Den: g.poison(rows * dd)}
			folded := plain
			folded.Bh, folded.BhBias, folded.Out, folded.Den = bh, bias, g.poison(rows*dd), g.poison(rows*dd)
			must(t, k.GatedAggregate(plain, m, rows, rows, dd))
			must(t, k.GatedAggregate(folded, m, rows, rows, dd))
			near(t, "out, bias folded", g.down(folded.Out, rows*dd), g.down(plain.Out, rows*dd), reduce)
			deP, dbhP, deF, dbhF := g.poison(m*dd), g.poison(rows*dd), g.poison(m*dd), g.poison(rows*dd)
			must(t, k.GatedAggregateBackward(deP, dbhP, dy, plain, m, rows, rows, dd))
			must(t, k.GatedAggregateBackward(deF, dbhF, dy, folded, m, rows, rows, dd))
			near(t, "dê, bias folded", g.down(deF, m*dd), g.down(deP, m*dd), reduce)
			near(t, "dbh, bias folded", g.down(dbhF, rows*dd), g.down(dbhP, rows*dd), reduce)

			// Raw: the sums left undivided, divided by their reader (AddBiasedDiv) and by the
			// backward where it reads them, against the same sums divided on the host (IEEE
			// division, as gated_div's) and read divided: bit for bit.
			raw := plain
			raw.Raw, raw.Out, raw.Den = true, g.poison(rows*dd), g.poison(rows*dd)
			must(t, k.GatedAggregate(raw, m, rows, rows, dd))
			sums, dens := g.down(raw.Out, rows*dd), g.down(raw.Den, rows*dd)
			quot := make([]float32, len(sums))
			for j := range quot {
				quot[j] = sums[j] / dens[j]
			}
			divided := raw
			divided.Raw, divided.Out = false, g.up(quot)
			a, ba := g.up(tw.randn(rows*dd)), g.up(tw.randn(dd))
			hP, hR := g.poison(rows*dd), g.poison(rows*dd)
			must(t, k.AddBiased(hP, a, ba, divided.Out, 0, rows, dd))
			must(t, k.AddBiasedDiv(hR, a, ba, raw.Out, 0, raw.Den, rows, dd))
			sameBits32(t, "a + bias + sums / denominators", g.down(hR, rows*dd), g.down(hP, rows*dd))
			deR, deD := g.poison(m*dd), g.poison(m*dd)
			must(t, k.GatedAggregateBackward(deR, g.poison(rows*dd), dy, raw, m, rows, rows, dd))
			must(t, k.GatedAggregateBackward(deD, g.poison(rows*dd), dy, divided, m, rows, rows, dd))
			sameBits32(t, "dê from undivided sums", g.down(deR, m*dd), g.down(deD, m*dd))

			base := tw.randn(m * dd)
			acc, want := g.up(base), g.poison(m*dd)
			must(t, k.Add(want, g.up(base), deP, m*dd))
			plain.AccDe = true
			must(t, k.GatedAggregateBackward(acc, g.poison(rows*dd), dy, plain, m, rows, rows, dd))
			sameBits32(t, "dê added into a buffer", g.down(acc, m*dd), g.down(want, m*dd))

			// The edge sum's gradients (DSrc, DDst) in the same pass, prefilled or not, against
			// EdgeSumBackward over the dê the plain launch wrote: dê bit for bit; dbh and the
			// scatters are atomics, so within rounding here (the op tests run the emulator's
			// concurrent schedule); whole training steps on its deterministic schedule compare
			// bit for bit (gpu.TestStepMatchesCPU, the fold's plan against the plain one).
			for _, pre := range []bool{false, true} {
				for _, accDe := range []bool{false, true} {
					what := fmt.Sprintf("prefilled %v, dê added %v", pre, accDe)
					start := tw.randn(m * dd)
					deW, dbhW := g.up(start), g.poison(rows*dd)
					sep := plain
					sep.AccDe = accDe
					must(t, k.GatedAggregateBackward(deW, dbhW, dy, sep, m, rows, rows, dd))
					dsW, dtW := g.poison(rows*dd), g.poison(rows*dd)
					must(t, k.EdgeSumBackward(dsW, dtW, deW, src, dst, m, rows, dd))
					fused := sep
					fused.SRows, fused.Prefilled = rows, pre
					deG, dbhG := g.up(start), g.poison(rows*dd)
					fused.DSrc, fused.DDst = g.poison(rows*dd), g.poison(rows*dd)
					if pre {
						dbhG, fused.DSrc, fused.DDst = g.up(make([]float32, rows*dd)), g.up(make([]float32, rows*dd)), g.up(make([]float32, rows*dd))
					}
					must(t, k.GatedAggregateBackward(deG, dbhG, dy, fused, m, rows, rows, dd))
					sameBits32(t, what+": dê", g.down(deG, m*dd), g.down(deW, m*dd))
					near(t, what+": dbh", g.down(dbhG, rows*dd), g.down(dbhW, rows*dd), reduce)
					near(t, what+": the edge sum's d src", g.down(fused.DSrc, rows*dd), g.down(dsW, rows*dd), reduce)
					near(t, what+": the edge sum's d dst", g.down(fused.DDst, rows*dd), g.down(dtW, rows*dd), reduce)
				}
			}
			bad := plain
			bad.DSrc, bad.SRows = g.poison(rows*dd), rows
			if err := k.GatedAggregateBackward(g.poison(m*dd), g.poison(rows*dd), dy, bad, m, rows, rows, dd); err == nil || !strings.Contains(err.Error(), "DDst") {
				t.Errorf("DSrc without DDst: %v, want an error naming DDst", err)
			}
		})
	}
}

// TestGPUReluBiased: ReluBiased equals AddBias, then Relu, bit for bit.
func TestGPUReluBiased(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range sizes {
		t.Run(fmt.Sprintf("rows%d_d%d", sz.rows, sz.d), func(t *testing.T) {
			tw := newTwin(t, uint64(1500+i))
			d, k := gpu(t)
			g := dev{t, d}
			n := sz.rows * sz.d
			x, b := g.up(tw.randn(n)), g.up(tw.randn(sz.d))
			tmp, want, got := g.poison(n), g.poison(n), g.poison(n)
			must(t, k.AddBias(tmp, x, b, sz.rows, sz.d))
			must(t, k.Relu(want, tmp, n))
			must(t, k.ReluBiased(got, x, b, sz.rows, sz.d))
			sameBits32(t, "relu(x + b)", g.down(got, n), g.down(want, n))
		})
	}
}

// TestGPUFusedStats: EdgeSumBiasedStats and AddBiasedDivStats against EdgeSumBiased and
// AddBiasedDiv followed by a training BatchNorm's statistics, bit for bit: the stored sums, the
// mean and 1/σ, the updated running statistics, and the normalised output of the batch norm
// that only normalises (StatsDone); with one row chunk and with several, dropped rows included.
func TestGPUFusedStats(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range sizes[1:] {
		t.Run(fmt.Sprintf("m%d_rows%d_d%d", sz.n, sz.rows, sz.d), func(t *testing.T) {
			tw := newTwin(t, uint64(1600+i))
			d, k := gpu(t)
			g := dev{t, d}
			m, rows, dd := sz.n, sz.rows, sz.d
			keepOf := func(n int) DevPtr {
				keep := make([]int32, n)
				for j := range keep {
					if tw.rng.IntN(8) != 0 {
						keep[j] = 1
					}
				}
				keep[0], keep[n-1] = 1, 1
				return g.upI(keep)
			}
			run0, var0 := tw.randn(dd), tw.randn(dd)
			for j := range var0 {
				var0[j] = var0[j]*var0[j] + 0.5
			}
			gamma, beta := g.up(tw.randn(dd)), g.up(tw.randn(dd))
			// check runs produce (the plain sum into x, or the fused one into x with the
			// statistics) and compares everything a batch norm of x then holds.
			check := func(what string, n int, keep DevPtr, plain func(x DevPtr), fused func(x DevPtr, st BNStats)) {
				bufs := func() (BatchNormBufs, BNStats) {
					b := BatchNormBufs{X: g.poison(n * dd), Gamma: gamma, Beta: beta, Keep: keep, RunMean: g.up(run0), RunVar: g.up(var0),
						Out: g.poison(n * dd), Mean: g.poison(dd), InvStd: g.poison(dd)}
					return b, BNStats{Mean: b.Mean, InvStd: b.InvStd, RunMean: b.RunMean, RunVar: b.RunVar, Keep: keep}
				}
				want, _ := bufs()
				plain(want.X)
				must(t, k.BatchNormRelu(want, n, dd, true))
				got, st := bufs()
				fused(got.X, st)
				got.StatsDone = true
				must(t, k.BatchNormRelu(got, n, dd, true))
				for _, c := range []struct {
					name   string
					gp, wp DevPtr
					n      int
				}{{"sums", got.X, want.X, n * dd}, {"mean", got.Mean, want.Mean, dd}, {"1/σ", got.InvStd, want.InvStd, dd},
					{"running mean", got.RunMean, want.RunMean, dd}, {"running variance", got.RunVar, want.RunVar, dd},
					{"normalised", got.Out, want.Out, n * dd}} {
					sameBits32(t, what+": "+c.name, g.down(c.gp, c.n), g.down(c.wp, c.n))
				}
			}
			src, dst := g.upI(randIndex(tw.rng, m, usedRows(rows))), g.upI(randIndex(tw.rng, m, usedRows(rows)))
			e, hs, ht := g.up(tw.randn(m*dd)), g.up(tw.randn(rows*dd)), g.up(tw.randn(rows*dd))
			be, bt := g.up(tw.randn(dd)), g.up(tw.randn(dd))
			check("edge sum", m, keepOf(m), func(x DevPtr) {
				must(t, k.EdgeSumBiased(x, e, be, hs, 0, ht, bt, src, dst, m, rows, dd, false, nil))
			}, func(x DevPtr, st BNStats) {
				must(t, k.EdgeSumBiasedStats(x, e, be, hs, 0, ht, bt, src, dst, m, rows, dd, false, nil, st))
			})
			a, b, den := g.up(tw.randn(rows*dd)), g.up(tw.randn(rows*dd)), g.up(tw.randn(rows*dd))
			check("add", rows, keepOf(rows), func(x DevPtr) {
				must(t, k.AddBiasedDiv(x, a, be, b, 0, den, rows, dd))
			}, func(x DevPtr, st BNStats) {
				must(t, k.AddBiasedDivStats(x, a, be, b, 0, den, rows, dd, st))
			})
		})
	}
}

// TestGPUMaskedL1WithGrad: MaskedL1WithGrad against MaskedL1 and MaskedL1Backward, bit for bit.
func TestGPUMaskedL1WithGrad(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, n := range []int{1, 128, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			tw := newTwin(t, uint64(1700+i))
			d, k := gpu(t)
			g := dev{t, d}
			pv, yv := tw.randn(n), tw.randn(n)
			pv[0] = yv[0] // a tie: sign 0
			p, y, w, gs := g.up(pv), g.up(yv), g.up(tw.randn(n)), g.up([]float32{0.75})
			lw, dw, lg, dg := g.poison(1), g.poison(n), g.poison(1), g.poison(n)
			must(t, k.MaskedL1(lw, p, y, w, n))
			must(t, k.MaskedL1Backward(dw, p, y, w, gs, n))
			must(t, k.MaskedL1WithGrad(lg, dg, p, y, w, gs, n))
			sameBits32(t, "loss", g.down(lg, 1), g.down(lw, 1))
			sameBits32(t, "dp", g.down(dg, n), g.down(dw, n))
		})
	}
}

// TestGPUMaskedBCEWithGrad: MaskedBCEWithGrad against MaskedBCE and MaskedBCEBackward, bit for
// bit.
func TestGPUMaskedBCEWithGrad(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, n := range []int{1, 128, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			tw := newTwin(t, uint64(1750+i))
			d, k := gpu(t)
			g := dev{t, d}
			yv := tw.randn(n)
			for j := range yv {
				yv[j] = float32(j % 2)
			}
			z, y, w, gs := g.up(tw.randn(n)), g.up(yv), g.up(tw.randn(n)), g.up([]float32{0.75})
			lw, dw, lg, dg := g.poison(1), g.poison(n), g.poison(1), g.poison(n)
			must(t, k.MaskedBCE(lw, z, y, w, n))
			must(t, k.MaskedBCEBackward(dw, z, y, w, gs, n))
			must(t, k.MaskedBCEWithGrad(lg, dg, z, y, w, gs, n))
			sameBits32(t, "loss", g.down(lg, 1), g.down(lw, 1))
			sameBits32(t, "dz", g.down(dg, n), g.down(dw, n))
		})
	}
}

// TestGPUGatedBNFold: the batch norm that reads ê leaving its column sums (BatchNormBufs.Tot)
// and the gated aggregation's gradient computing that batch norm's dx as dê's first term
// (GatedBufs.BN), against BatchNorm(Relu)Backward writing dx and the gated gradient adding into
// it (AccDe): dê, dγ and dβ bit for bit (no atomics in them), dbh and the edge sum's gradients
// within rounding (atomics; the op tests run the emulator's concurrent schedule). With and
// without the ReLU, in training and evaluation, on one row chunk and on several (m = 2600).
func TestGPUGatedBNFold(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range sizes[1:] {
		for _, relu := range []bool{false, true} {
			for _, training := range []bool{true, false} {
				t.Run(fmt.Sprintf("m%d_nodes%d_d%d_relu%v_train%v", sz.n, sz.rows, sz.d, relu, training), func(t *testing.T) {
					tw := newTwin(t, uint64(1400+i))
					d, k := gpu(t)
					g := dev{t, d}
					m, rows, dd := sz.n, sz.rows, sz.d
					src, dst := g.upI(randIndex(tw.rng, m, rows)), g.upI(randIndex(tw.rng, m, usedRows(rows)))
					ehat, bh, dy, dyE := g.up(tw.randn(m*dd)), g.up(tw.randn(rows*dd)), g.up(tw.randn(rows*dd)), g.up(tw.randn(m*dd))
					_, ki := randKeep(tw.rng, m)
					ones := make([]float32, dd)
					for c := range ones {
						ones[c] = 1
					}
					b := BatchNormBufs{X: ehat, Gamma: g.up(tw.randn(dd)), Beta: g.up(tw.randn(dd)), Keep: g.upI(ki),
						RunMean: g.up(make([]float32, dd)), RunVar: g.up(ones), Out: g.poison(m * dd), Mean: g.poison(dd), InvStd: g.poison(dd)}
					forward, backward := k.BatchNorm, k.BatchNormBackward
					if relu {
						forward, backward = k.BatchNormRelu, k.BatchNormReluBackward
					}
					must(t, forward(b, m, dd, training))
					gated := GatedBufs{Ehat: ehat, Bh: bh, Src: src, Dst: dst, Out: g.poison(rows * dd), Den: g.poison(rows * dd)}
					must(t, k.GatedAggregate(gated, m, rows, rows, dd))

					deW, dgW, dbW := g.poison(m*dd), g.poison(dd), g.poison(dd)
					must(t, backward(deW, dgW, dbW, dyE, b, m, dd, training))
					sep := gated
					sep.AccDe, sep.SRows, sep.DSrc, sep.DDst = true, rows, g.poison(rows*dd), g.poison(rows*dd)
					dbhW := g.poison(rows * dd)
					must(t, k.GatedAggregateBackward(deW, dbhW, dy, sep, m, rows, rows, dd))

					sums := b
					sums.Tot = g.poison(TotElems(dd))
					dgF, dbF := g.poison(dd), g.poison(dd)
					must(t, backward(0, dgF, dbF, dyE, sums, m, dd, training))
					fused := gated
					fused.BN = &GatedBN{Dy: dyE, B: sums, Training: training, Relu: relu}
					fused.SRows, fused.DSrc, fused.DDst = rows, g.poison(rows*dd), g.poison(rows*dd)
					deF, dbhF := g.poison(m*dd), g.poison(rows*dd)
					must(t, k.GatedAggregateBackward(deF, dbhF, dy, fused, m, rows, rows, dd))

					sameBits32(t, "dê", g.down(deF, m*dd), g.down(deW, m*dd))
					sameBits32(t, "dγ", g.down(dgF, dd), g.down(dgW, dd))
					sameBits32(t, "dβ", g.down(dbF, dd), g.down(dbW, dd))
					near(t, "dbh", g.down(dbhF, rows*dd), g.down(dbhW, rows*dd), reduce)
					near(t, "the edge sum's d src", g.down(fused.DSrc, rows*dd), g.down(sep.DSrc, rows*dd), reduce)
					near(t, "the edge sum's d dst", g.down(fused.DDst, rows*dd), g.down(sep.DDst, rows*dd), reduce)

					both := fused
					both.AccDe = true
					if err := k.GatedAggregateBackward(deF, dbhF, dy, both, m, rows, rows, dd); err == nil || !strings.Contains(err.Error(), "AccDe") {
						t.Errorf("BN with AccDe: %v, want an error naming AccDe", err)
					}
				})
			}
		}
	}
}
