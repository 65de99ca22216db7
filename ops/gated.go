package ops

import (
	"fmt"
	"github.com/rewiregnn/rewiregnn/prog"

	"github.com/rewiregnn/rewiregnn/kern"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// GatedEps is added to the gate sum in GatedAggregate (docs/protocol.md §"GatedGCN layer").
const GatedEps = 1e-6

// GatedAggregate is GatedGCN's edge-gated mean, fused into one op: with η = σ(ê) per edge,
//
//	out_i = Σ_{m: dst[m]=i} η_m ⊙ bh[src[m]]  ⊘  (Σ_{m: dst[m]=i} η_m + 1e-6)
//
// for ê [M, d] and bh [N, d]; out is [nodes, d]. Padding edges (src or dst -1) are skipped; a
// node without in-edges gets 0.
func GatedAggregate(ehat, bh *gorgonia.Node, src, dst *Index, nodes int) (*gorgonia.Node, error) {
	if ehat.Dims() != 2 || bh.Dims() != 2 || ehat.Shape()[1] != bh.Shape()[1] || ehat.Shape()[0] != src.Len() || src.Len() != dst.Len() {
		return nil, fmt.Errorf("gated aggregate: ê %v, bh %v, %d sources, %d destinations", ehat.Shape(), bh.Shape(), src.Len(), dst.Len())
	}
	st := &gatedState{src: src, dst: dst, nodes: nodes}
	op := newFuncOp(prog.GatedAggregate, fmt.Sprintf("GatedAggregate{%d→%d}", src.Len(), nodes), 2, rowsOf(nodes, 0), nil, nil)
	op.p64, op.p32 = gatedForward[float64](st), gatedForward[float32](st)
	op.dev = DeviceOp{Src: src, Dst: dst, Rows: nodes, State: st}
	op.aux = func(s []tensor.Shape) []int { return []int{nodes * s[0][1]} } // the denominators
	op.keeps = func(s []tensor.Shape, elem int) int {                       // edges by dst and src, padding
		m := s[0][0]
		return segmentsBytes(nodes, m) + segmentsBytes(s[1][0], m) + 4*m
	}
	op.check = func(s []tensor.Shape) error {
		if err := src.check(s[1][0]); err != nil {
			return err
		}
		return dst.check(nodes)
	}
	op.grad = func(in gorgonia.Nodes, out, g *gorgonia.Node) (gorgonia.Nodes, error) {
		// One pass computes both gradients: dê is the op's output, dbh is kept for a second op
		// that reads it after (it takes dê as input only to run after it). It reads ê to
		// recompute η = σ(ê), which the forward pass does not keep.
		de := newFuncOp(prog.GatedAggregateGrad, "GatedAggregateGrad{ê}", 4, rowsOf(src.Len(), 0), gatedBackward[float64](st), gatedBackward[float32](st))
		de.check = st.ready
		de.sumsIn = true
		de.keeps = func(s []tensor.Shape, elem int) int { return elem * (nodes + s[1][0]) * s[1][1] } // g ⊘ D, dbh
		de.dev = DeviceOp{Src: src, Dst: dst, Rows: nodes, State: st}
		dE, err := apply(de, in[0], in[1], out, g)
		if err != nil {
			return nil, err
		}
		db := newFuncOp(prog.GatedAggregateGrad, "GatedAggregateGrad{bh}", 2, sameAs(1), takeOther[float64](&st.dbh), takeOther[float32](&st.dbh))
		db.after = true
		db.dev = DeviceOp{Src: src, Dst: dst, Rows: nodes, State: st, Which: 1}
		dB, err := apply(db, dE, in[1])
		if err != nil {
			return nil, err
		}
		return gorgonia.Nodes{dE, dB}, nil
	}
	n, err := gorgonia.ApplyOp(op, ehat, bh)
	if err != nil {
		return nil, fmt.Errorf("gated aggregate: %w", err)
	}
	return n, nil
}

// gatedState keeps, from the forward pass, the denominators D = Σ η + eps [nodes, d] and the
// real edges grouped by destination and by source; from the backward pass, dbh. η is not kept:
// the backward pass recomputes it from ê with the forward's kernel (kern.GatedEtaRow), bit for
// bit. Buffers are []float32 or []float64.
type gatedState struct {
	src, dst     *Index
	nodes        int
	den          any
	gd, dbh      any
	rows         any // per-worker scratch rows of the kernels (η of one edge)
	byDst, bySrc kern.Segments
	pad          []int32 // padding edges (src or dst -1)
	fwdM, fwdD   int     // shape of the last forward pass's ê
}

// ready checks that a forward pass of the gradient's shape ran (inputs ê, bh, out, g).
func (st *gatedState) ready(s []tensor.Shape) error {
	if st.fwdM != st.src.Len() || st.fwdD != s[1][1] {
		return fmt.Errorf("no forward pass of width %d to differentiate", s[1][1])
	}
	return nil
}

// gatedForward groups the real edges by destination and by source, then, per destination node
// (nodes shared between goroutines), computes η = σ(ê) of its in-edges and num and den summed
// over them (den kept for the backward pass, in the executor's aux buffer where it gives one),
// and out = num/den. Each node's sums run in edge order, so the result does not depend on the
// number of goroutines.
func gatedForward[T kern.Float](st *gatedState) planKernel[T] {
	return func(p *RunOpts, out []T, in [][]T, s []tensor.Shape) {
		e, bh := in[0], in[1]
		m, d := s[0][0], s[0][1]
		st.fwdM, st.fwdD = m, d
		den := auxBuf[T](p, 0, st.den, st.nodes*d)
		st.den = den
		src, dst := st.src.Idx, st.dst.Idx
		real := func(k int) bool { return src[k] >= 0 && dst[k] >= 0 }
		st.byDst.Group(dst, st.nodes, real)
		st.bySrc.Group(src, s[1][0], real)
		st.pad = st.pad[:0]
		for k := range src {
			if !real(k) {
				st.pad = append(st.pad, int32(k))
			}
		}
		rows := kern.Grow[T](st.rows, kern.Workers()*3*d) // per worker: one edge's η, and 2d of scratch
		st.rows = rows
		kern.ParallelRangeW(st.nodes, d*max(1, m/max(st.nodes, 1)), func(w, lo, hi int) {
			eta := rows[w*3*d : w*3*d+d]
			for t := lo; t < hi; t++ {
				o, de := out[t*d:(t+1)*d], den[t*d:(t+1)*d]
				clear(o)
				for c := range de {
					de[c] = GatedEps
				}
				for _, k := range st.byDst.Of(t) {
					so := int(src[k]) * d
					kern.GatedFwdSigRow(eta, o, de, e[int(k)*d:int(k+1)*d], bh[so:so+d])
				}
				for c := range o {
					o[c] /= de[c]
				}
			}
		})
	}
}

// gatedBackward takes ê, bh, the forward output o and its gradient g. With η_m = σ(ê_m)
// recomputed and q = η_m ⊙ g_t ⊘ D_t for edge m = (s → t): dê_m = q ⊙ (1 − η_m) ⊙ (bh_s − o_t),
// and dbh_s = Σ_m q (kept in st.dbh), computed per source node over its out-edges (nodes shared
// between goroutines).
func gatedBackward[T kern.Float](st *gatedState) kernel[T] {
	return func(dE []T, in [][]T, s []tensor.Shape) {
		e, bh, o, g := in[0], in[1], in[2], in[3]
		n, d := s[1][0], s[1][1]
		den := st.den.([]T)
		gd := kern.Grow[T](st.gd, st.nodes*d)
		dB := kern.Grow[T](st.dbh, n*d)
		st.gd, st.dbh = gd, dB
		for i, v := range g {
			gd[i] = v / den[i]
		}
		var sum []T // a summand the executor folded in (Func.SumsIn)
		if len(in) > 4 {
			sum = in[4]
		}
		for _, k := range st.pad {
			clear(dE[int(k)*d : int(k+1)*d])
			if sum != nil {
				copy(dE[int(k)*d:int(k+1)*d], sum[int(k)*d:int(k+1)*d])
			}
		}
		dst := st.dst.Idx
		rows := kern.Grow[T](st.rows, kern.Workers()*3*d)
		st.rows = rows
		kern.ParallelRangeW(n, d*max(1, len(dst)/max(n, 1)), func(w, lo, hi int) {
			r := rows[w*3*d : (w+1)*3*d]
			eta, tmp := r[:d], r[d:] // one edge's η, and the sums GatedEtaRow discards
			for sv := lo; sv < hi; sv++ {
				db, b := dB[sv*d:(sv+1)*d], bh[sv*d:(sv+1)*d]
				clear(db)
				for _, k := range st.bySrc.Of(sv) {
					to := int(dst[k]) * d
					kern.GatedEtaRow(eta, e[int(k)*d:int(k+1)*d], tmp)
					kern.GatedBwdRow(dE[int(k)*d:int(k+1)*d], db, eta, gd[to:to+d], b, o[to:to+d])
					if sum != nil {
						kern.AddTo(dE[int(k)*d:int(k+1)*d], sum[int(k)*d:int(k+1)*d])
					}
				}
			}
		})
	}
}
