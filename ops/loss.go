package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	"github.com/rewiregnn/rewiregnn/kern"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MaskedL1 is Σ_g w_g |pred_g − y_g| over the rows of pred, y and w (all [G, 1]). With w = 1/B
// on the B real graphs and 0 on padding it is the mean absolute error of the batch. Only pred is
// differentiated; the op never writes to its inputs, so pred keeps its value after a run.
func MaskedL1(pred, y, w *gorgonia.Node) (*gorgonia.Node, error) {
	if !pred.Shape().Eq(y.Shape()) || !pred.Shape().Eq(w.Shape()) {
		return nil, fmt.Errorf("masked L1: shapes %v, %v, %v differ", pred.Shape(), y.Shape(), w.Shape())
	}
	n, err := gorgonia.ApplyOp(&l1Op{}, pred, y, w)
	if err != nil {
		return nil, fmt.Errorf("masked L1: %w", err)
	}
	return n, nil
}

type l1Op struct{ base }

func (op *l1Op) Arity() int            { return 3 }
func (op *l1Op) String() string        { return "MaskedL1" }
func (op *l1Op) WriteHash(h hash.Hash) { fmt.Fprintf(h, "MaskedL1%p", op) }
func (op *l1Op) Hashcode() uint32      { return hashOf(op) }
func (op *l1Op) Type() hm.Type {
	return hm.NewFnType(matT(), matT(), matT(), hm.TypeVariable('a'))
}
func (op *l1Op) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	return tensor.ScalarShape(), nil
}

func (op *l1Op) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	if err := arity(op, vs); err != nil {
		return nil, err
	}
	var ds [3]*tensor.Dense
	for i := range ds {
		d, err := dense(op, vs[i], i)
		if err != nil {
			return nil, err
		}
		ds[i] = d
	}
	if err := sameType(op, ds[:]...); err != nil {
		return nil, err
	}
	if ds[0].Dtype() == tensor.Float64 {
		var out [1]float64
		p := ds[0].Float64s()
		kern.MaskedL1(out[:], p, ds[1].Float64s(), ds[2].Float64s(), len(p))
		return gorgonia.NewF64(out[0]), nil
	}
	var out [1]float32
	p := ds[0].Float32s()
	kern.MaskedL1(out[:], p, ds[1].Float32s(), ds[2].Float32s(), len(p))
	return gorgonia.NewF32(out[0]), nil
}

func (op *l1Op) DiffWRT(int) []bool { return []bool{true, false, false} }
func (op *l1Op) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	dp, err := gorgonia.ApplyOp(&l1GradOp{}, in[0], in[1], in[2], grad)
	if err != nil {
		return nil, fmt.Errorf("masked L1 gradient: %w", err)
	}
	return gorgonia.Nodes{dp, nil, nil}, nil
}

// l1GradOp: d/dpred = g · w ⊙ sign(pred − y) (0 where pred = y, as PyTorch).
type l1GradOp struct {
	base
	out Buffer
}

func (op *l1GradOp) Arity() int            { return 4 }
func (op *l1GradOp) String() string        { return "MaskedL1Grad" }
func (op *l1GradOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "MaskedL1Grad%p", op) }
func (op *l1GradOp) Hashcode() uint32      { return hashOf(op) }
func (op *l1GradOp) Type() hm.Type {
	return hm.NewFnType(matT(), matT(), matT(), hm.TypeVariable('a'), matT())
}
func (op *l1GradOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := inShape(op, in, 0)
	if err != nil {
		return nil, err
	}
	return s.Clone(), nil
}

func (op *l1GradOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	if err := arity(op, vs); err != nil {
		return nil, err
	}
	var ds [3]*tensor.Dense
	for i := range ds {
		d, err := dense(op, vs[i], i)
		if err != nil {
			return nil, err
		}
		ds[i] = d
	}
	g, err := upstreamScalar(op, vs[3])
	if err != nil {
		return nil, err
	}
	out := op.out.Get(ds[0].Dtype(), ds[0].Shape()...)
	if ds[0].Dtype() == tensor.Float64 {
		dp := out.Float64s()
		kern.MaskedL1Backward(dp, ds[0].Float64s(), ds[1].Float64s(), ds[2].Float64s(), g, len(dp))
	} else {
		dp := out.Float32s()
		kern.MaskedL1Backward(dp, ds[0].Float32s(), ds[1].Float32s(), ds[2].Float32s(), g, len(dp))
	}
	return out, nil
}
