package ops

import (
	"fmt"
	"github.com/rewiregnn/rewiregnn/prog"

	"github.com/rewiregnn/rewiregnn/kern"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// GatedEps is added to the gate sum in GatedAggregate (docs/protocol.md §"GatedGCN layer").
const GatedEps = kern.GatedEps

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
	op := newFuncOp(prog.GatedAggregate, fmt.Sprintf("GatedAggregate{%d→%d}", src.Len(), nodes), 2, rowsOf(nodes, 0),
		gatedForward[float64](st), gatedForward[float32](st))
	op.dev = DeviceOp{Src: src, Dst: dst, Rows: nodes, State: st}
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
		de.dev = DeviceOp{Src: src, Dst: dst, Rows: nodes, State: st}
		dE, err := apply(de, in[0], in[1], out, g)
		if err != nil {
			return nil, err
		}
		db := newFuncOp(prog.GatedAggregateGrad, "GatedAggregateGrad{bh}", 2, sameAs(1), takeOther[float64](&st.dbh), takeOther[float32](&st.dbh))
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

// gatedState keeps, from the forward pass, the denominators D = Σ η + eps [nodes, d], the real
// edges grouped by destination and by source and the padding edges (kern.GatedState); from
// the backward pass, dbh. η is not kept: the backward pass recomputes it from ê with the
// forward's kernel (kern.GatedEtaRow), bit for bit. Buffers are []float32 or []float64.
type gatedState struct {
	src, dst *Index
	nodes    int
	kern.GatedState
	dbh any
}

// ready checks that a forward pass of the gradient's shape ran (inputs ê, bh, out, g).
func (st *gatedState) ready(s []tensor.Shape) error {
	if st.M != st.src.Len() || st.D != s[1][1] {
		return fmt.Errorf("no forward pass of width %d to differentiate", s[1][1])
	}
	return nil
}

// gatedForward runs kern.GatedAggregate on ê and bh, keeping the denominators and the grouped
// edges for the backward pass.
func gatedForward[T kern.Float](st *gatedState) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) {
		b := kern.GatedBufs[T]{Ehat: in[0], Bh: in[1], Src: st.src.Idx, Dst: st.dst.Idx, Out: out}
		kern.GatedForward(&st.GatedState, b, true, s[0][0], s[1][0], st.nodes, s[0][1])
	}
}

// gatedBackward takes ê, bh, the forward output o and its gradient g and runs
// kern.GatedAggregateBackward: dê is the op's output, dbh is kept in st.dbh for the second
// gradient op.
func gatedBackward[T kern.Float](st *gatedState) kernel[T] {
	return func(dE []T, in [][]T, s []tensor.Shape) {
		m, n, d := s[0][0], s[1][0], s[1][1]
		dB := kern.Grow[T](st.dbh, n*d)
		st.dbh = dB
		b := kern.GatedBufs[T]{Ehat: in[0], Bh: in[1], Src: st.src.Idx, Dst: st.dst.Idx, Out: in[2]}
		kern.GatedGrad(&st.GatedState, dE, dB, in[3], b, m, n, st.nodes, d, nil)
	}
}
