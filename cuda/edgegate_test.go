package cuda

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/ops"
)

// TestGPUEdgeGate: the gated aggregation folded into the edge sum's pass (EdgeGate), plain and
// with the batch norm's statistics, in float32 and in bf16 (each with and without Bh's bias), against
// the two launches it replaces (EdgeSumBiased, then GatedAggregate with Prefilled and Raw) and
// against the CPU twins (ops.EdgeSum, then ops.GatedAggregate). ê and the statistics are the
// same bits; the sums and denominators are float atomics, so within rounding here (the op
// tests run the emulator's concurrent schedule).
func TestGPUEdgeGate(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range sizes[1:] {
		t.Run(fmt.Sprintf("m%d_rows%d_d%d", sz.n, sz.rows, sz.d), func(t *testing.T) {
			tw := newTwin(t, uint64(2100+i))
			m, rows, dd := sz.n, sz.rows, sz.d
			srcI, dstI := randIndex(tw.rng, m, usedRows(rows)), randIndex(tw.rng, m, usedRows(rows))
			ev, hv, tv, bhv, biasv := tw.randn(m*dd), tw.randn(rows*dd), tw.randn(rows*dd), tw.randn(rows*dd), tw.randn(dd)
			biased := slices.Clone(bhv) // Bh + its bias, as the kernels add it (rw_bh)
			for j := range biased {
				biased[j] += biasv[j%dd]
			}
			// The CPU twins: the edge sum, then the gated aggregation of its output.
			src, dst := &ops.Index{Name: "src", Idx: srcI}, &ops.Index{Name: "dst", Idx: dstI}
			ehat := tw.ok(ops.EdgeSum(tw.mat("e", ev, m, dd), tw.mat("hs", hv, rows, dd), tw.mat("ht", tv, rows, dd), src, dst))
			agg := tw.ok(ops.GatedAggregate(ehat, tw.mat("bh", biased, rows, dd), src, dst, rows))
			tw.forwardFirst = true // the full run (with the loss) leaves y overwritten here
			twin, _ := tw.run(agg, tw.randn(rows*dd))

			d, k := gpu(t)
			g := dev{t, d}
			e, hs, ht, bh, bias := g.up(ev), g.up(hv), g.up(tv), g.up(bhv), g.up(biasv)
			gs, gd := g.upI(srcI), g.upI(dstI)
			_, ki := randKeep(tw.rng, m)
			keep := g.upI(ki)
			run0, var0 := tw.randn(dd), tw.randn(dd)
			for j := range var0 {
				var0[j] = var0[j]*var0[j] + 0.5
			}
			eps := make([]float32, rows*dd)
			for j := range eps {
				eps[j] = GatedEps
			}
			stats := func() BNStats {
				return BNStats{Mean: g.poison(dd), InvStd: g.poison(dd), RunMean: g.up(run0), RunVar: g.up(var0), Keep: keep}
			}
			for _, bf := range []bool{false, true} {
				words := m * dd
				if bf {
					words = bf16Words(m * dd)
				}
				stored := func(p DevPtr) []uint32 { // ê's stored words, either format
					if !bf {
						out := make([]uint32, m*dd)
						for j, v := range g.down(p, m*dd) {
							out[j] = math.Float32bits(v)
						}
						return out
					}
					out := make([]uint32, m*dd)
					for j, v := range g.downBF16(p, m*dd) {
						out[j] = uint32(v)
					}
					return out
				}
				for _, withStats := range []bool{false, true} {
					withBias := bf == withStats // each format with and without Bh's bias
					what := fmt.Sprintf("bf16 %v, statistics %v, bias %v", bf, withStats, withBias)
					var bb DevPtr
					if withBias {
						bb = bias
					}
					// The two launches the fold replaces, into prefilled sums.
					x, st := g.poison(words), stats()
					if withStats {
						must(t, k.EdgeSumBiasedStats(x, e, 0, hs, 0, ht, 0, gs, gd, m, rows, dd, bf, nil, st))
					} else {
						must(t, k.EdgeSumBiased(x, e, 0, hs, 0, ht, 0, gs, gd, m, rows, dd, bf, nil))
					}
					want := GatedBufs{Ehat: x, Bh: bh, BhBias: bb, Src: gs, Dst: gd, Out: g.up(make([]float32, rows*dd)), Den: g.up(eps),
						Prefilled: true, Raw: true, EhatBF16: bf}
					if !withBias {
						want.Bh = g.up(biased)
					}
					must(t, k.GatedAggregate(want, m, rows, rows, dd))

					// The fold.
					gate := &EdgeGate{Bh: want.Bh, BhBias: bb, Out: g.up(make([]float32, rows*dd)), Den: g.up(eps), NBh: rows, Nodes: rows}
					x2, st2 := g.poison(words), stats()
					if withStats {
						must(t, k.EdgeSumBiasedStats(x2, e, 0, hs, 0, ht, 0, gs, gd, m, rows, dd, bf, gate, st2))
						for _, c := range []struct {
							name   string
							gp, wp DevPtr
						}{{"mean", st2.Mean, st.Mean}, {"1/σ", st2.InvStd, st.InvStd}, {"running mean", st2.RunMean, st.RunMean},
							{"running variance", st2.RunVar, st.RunVar}} {
							sameBits32(t, what+": "+c.name, g.down(c.gp, dd), g.down(c.wp, dd))
						}
					} else {
						must(t, k.EdgeSumBiased(x2, e, 0, hs, 0, ht, 0, gs, gd, m, rows, dd, bf, gate))
					}
					if got, w := stored(x2), stored(x); !slices.Equal(got, w) {
						t.Fatalf("%s: ê stored differs from the edge sum's without the gate", what)
					}
					sums, dens := g.down(gate.Out, rows*dd), g.down(gate.Den, rows*dd)
					near(t, what+": sums", sums, g.down(want.Out, rows*dd), reduce)
					near(t, what+": denominators", dens, g.down(want.Den, rows*dd), reduce)
					if !bf { // the CPU twins compute in float32
						quot := make([]float32, len(sums))
						for j := range quot {
							quot[j] = sums[j] / dens[j]
						}
						near(t, what+": sums / denominators against the CPU twins", quot, twin, reduce)
					}
				}
			}
			short := &EdgeGate{Bh: bh, Out: g.poison(rows * dd), Den: g.poison(rows*dd - 1), NBh: rows, Nodes: rows}
			if err := k.EdgeSumBiased(g.poison(m*dd), e, 0, hs, 0, ht, 0, gs, gd, m, rows, dd, false, short); err == nil || !strings.Contains(err.Error(), "gate Den") {
				t.Errorf("a gate with a short Den: %v, want an error naming gate Den", err)
			}
		})
	}
}
