package nn

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// GatedEps is added to the gate sum in GatedAggregate (REFERENCE §2.1).
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
	n, err := gorgonia.ApplyOp(&gatedOp{src: src, dst: dst, nodes: nodes}, ehat, bh)
	if err != nil {
		return nil, fmt.Errorf("gated aggregate: %w", err)
	}
	return n, nil
}

// gatedOp keeps η, the denominators and its output from the forward pass for the backward ops.
type gatedOp struct {
	base
	src, dst *Index
	nodes    int
	out      buffer
	eta      []float64 // [M, d]
	den      []float64 // [nodes, d]: Σ η + eps
	o        []float64 // [nodes, d]: the output
}

func (op *gatedOp) Arity() int { return 2 }
func (op *gatedOp) String() string {
	return fmt.Sprintf("GatedAggregate{%d→%d}", op.src.Len(), op.nodes)
}
func (op *gatedOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%s%p", op, op) }
func (op *gatedOp) Hashcode() uint32      { return hashOf(op) }
func (op *gatedOp) Type() hm.Type         { return fnType(2) }
func (op *gatedOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := inShape(op, in, 0)
	if err != nil {
		return nil, err
	}
	return tensor.Shape{op.nodes, s[1]}, nil
}

func (op *gatedOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	if err := arity(op, vs); err != nil {
		return nil, err
	}
	e, err := dense(op, vs[0], 0)
	if err != nil {
		return nil, err
	}
	bh, err := dense(op, vs[1], 1)
	if err != nil {
		return nil, err
	}
	if err := sameType(op, e, bh); err != nil {
		return nil, err
	}
	m, d := rowsCols(e)
	n, _ := rowsCols(bh)
	if err := op.src.check(n); err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	if err := op.dst.check(op.nodes); err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	if len(op.eta) != m*d || len(op.o) != op.nodes*d {
		op.eta, op.den, op.o = make([]float64, m*d), make([]float64, op.nodes*d), make([]float64, op.nodes*d)
	}
	out := op.out.get(e.Dtype(), op.nodes, d)
	if e.Dtype() == tensor.Float64 {
		gatedForward(op, out.Float64s(), e.Float64s(), bh.Float64s(), d)
	} else {
		gatedForward(op, out.Float32s(), e.Float32s(), bh.Float32s(), d)
	}
	return out, nil
}

func gatedForward[T Float](op *gatedOp, out, e, bh []T, d int) {
	parallelCols(d, len(op.src.Idx), func(c0, c1 int) { gatedForwardCols(op, out, e, bh, d, c0, c1) })
}

// gatedForwardCols does columns [c0, c1) of the forward pass.
func gatedForwardCols[T Float](op *gatedOp, out, e, bh []T, d, c0, c1 int) {
	num, den := op.o, op.den
	for i := 0; i < op.nodes; i++ {
		clear(num[i*d+c0 : i*d+c1])
		for c := i*d + c0; c < i*d+c1; c++ {
			den[c] = GatedEps
		}
	}
	for k, s := range op.src.Idx {
		t := op.dst.Idx[k]
		eta := op.eta[k*d+c0 : k*d+c1]
		if s < 0 || t < 0 {
			clear(eta)
			continue
		}
		ek := e[k*d+c0 : k*d+c1]
		b := bh[int(s)*d+c0 : int(s)*d+c1]
		nu, de := num[int(t)*d+c0:int(t)*d+c1], den[int(t)*d+c0:int(t)*d+c1]
		for c := range eta {
			g := 1 / (1 + math.Exp(-float64(ek[c])))
			eta[c] = g
			nu[c] += g * float64(b[c])
			de[c] += g
		}
	}
	for i := 0; i < op.nodes; i++ {
		for c := i*d + c0; c < i*d+c1; c++ {
			num[c] /= den[c]
			out[c] = T(num[c])
		}
	}
}

func (op *gatedOp) DiffWRT(int) []bool { return []bool{true, true} }
func (op *gatedOp) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	de, err := gorgonia.ApplyOp(&gatedGradOp{fwd: op, which: 0}, in[1], grad)
	if err != nil {
		return nil, fmt.Errorf("%v gradient: %w", op, err)
	}
	db, err := gorgonia.ApplyOp(&gatedGradOp{fwd: op, which: 1}, in[1], grad)
	if err != nil {
		return nil, fmt.Errorf("%v gradient: %w", op, err)
	}
	return gorgonia.Nodes{de, db}, nil
}

// gatedGradOp computes, from bh and the output gradient g, with D = Σ η + eps and o the output:
// which 0: dê_m = g_t ⊙ (bh_s − o_t) ⊘ D_t ⊙ η_m(1−η_m); which 1: dbh_s = Σ_m g_t ⊙ η_m ⊘ D_t.
type gatedGradOp struct {
	base
	fwd   *gatedOp
	which int
	out   buffer
}

func (op *gatedGradOp) Arity() int { return 2 }
func (op *gatedGradOp) String() string {
	return fmt.Sprintf("GatedAggregateGrad{%d}", op.which)
}
func (op *gatedGradOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%s%p", op, op) }
func (op *gatedGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *gatedGradOp) Type() hm.Type         { return fnType(2) }
func (op *gatedGradOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := inShape(op, in, 0)
	if err != nil {
		return nil, err
	}
	if op.which == 0 {
		return tensor.Shape{op.fwd.src.Len(), s[1]}, nil
	}
	return s.Clone(), nil
}

func (op *gatedGradOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	if err := arity(op, vs); err != nil {
		return nil, err
	}
	bh, err := dense(op, vs[0], 0)
	if err != nil {
		return nil, err
	}
	g, err := dense(op, vs[1], 1)
	if err != nil {
		return nil, err
	}
	if err := sameType(op, bh, g); err != nil {
		return nil, err
	}
	n, d := rowsCols(bh)
	if len(op.fwd.eta) != op.fwd.src.Len()*d {
		return nil, fmt.Errorf("%v: no forward pass to differentiate", op)
	}
	rows := op.fwd.src.Len()
	if op.which == 1 {
		rows = n
	}
	out := op.out.get(bh.Dtype(), rows, d)
	if bh.Dtype() == tensor.Float64 {
		gatedBackward(op, out.Float64s(), bh.Float64s(), g.Float64s(), d)
	} else {
		gatedBackward(op, out.Float32s(), bh.Float32s(), g.Float32s(), d)
	}
	return out, nil
}

func gatedBackward[T Float](op *gatedGradOp, dst, bh, g []T, d int) {
	parallelCols(d, len(op.fwd.src.Idx), func(c0, c1 int) { gatedBackwardCols(op, dst, bh, g, d, c0, c1) })
}

// gatedBackwardCols does columns [c0, c1) of the backward pass.
func gatedBackwardCols[T Float](op *gatedGradOp, dst, bh, g []T, d, c0, c1 int) {
	f := op.fwd
	if op.which == 1 {
		for i := 0; i < len(dst)/d; i++ {
			clear(dst[i*d+c0 : i*d+c1])
		}
	}
	for k, s := range f.src.Idx {
		t := f.dst.Idx[k]
		if s < 0 || t < 0 {
			if op.which == 0 {
				clear(dst[k*d+c0 : k*d+c1])
			}
			continue
		}
		eta := f.eta[k*d+c0 : k*d+c1]
		gt := g[int(t)*d+c0 : int(t)*d+c1]
		den := f.den[int(t)*d+c0 : int(t)*d+c1]
		if op.which == 1 {
			db := dst[int(s)*d+c0 : int(s)*d+c1]
			for c := range db {
				db[c] += T(float64(gt[c]) * eta[c] / den[c])
			}
			continue
		}
		o := f.o[int(t)*d+c0 : int(t)*d+c1]
		b := bh[int(s)*d+c0 : int(s)*d+c1]
		de := dst[k*d+c0 : k*d+c1]
		for c := range de {
			de[c] = T(float64(gt[c]) * (float64(b[c]) - o[c]) / den[c] * eta[c] * (1 - eta[c]))
		}
	}
}
