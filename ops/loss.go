package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	"github.com/rewiregnn/rewiregnn/kern"
	"github.com/rewiregnn/rewiregnn/prog"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MaskedL1 is Σ_i w_i |pred_i − y_i| over the entries of pred, y and w (equal shapes: [G, T]
// for T targets per graph). With w = 1/(B·T) on the entries of the B real graphs and 0 on
// padding it is the mean absolute error of the batch. Only pred is differentiated; the op never
// writes to its inputs, so pred keeps its value after a run.
func MaskedL1(pred, y, w *gorgonia.Node) (*gorgonia.Node, error) {
	return applyLoss(l1Loss, pred, y, w)
}

// MaskedBCE is the binary cross-entropy with logits (PyTorch's BCEWithLogitsLoss) summed with
// weights: Σ_i w_i·ℓ(z_i, y_i), ℓ(z, y) = max(z, 0) − z·y + log(1 + e^(−|z|)), over the entries
// of logits z, targets y ∈ [0, 1] and weights w (equal shapes: [G, C] for C labels per graph).
// With w = 1/(labelled entries) on the labelled entries of the real graphs and 0 elsewhere
// (padding, missing labels, which carry y = 0) it is the mean over the labelled entries. Its
// gradient is g·w ⊙ (σ(z) − y); only z is differentiated.
func MaskedBCE(z, y, w *gorgonia.Node) (*gorgonia.Node, error) {
	return applyLoss(bceLoss, z, y, w)
}

// pointLoss is a loss summed over the entries of three equal-shaped inputs (prediction, target,
// weight): its name, program ops and kernels (package kern, one per element type).
type pointLoss struct {
	name         string
	fwdOp, bwdOp prog.Op
	fwd64        func(out, p, y, w []float64, n int)
	fwd32        func(out, p, y, w []float32, n int)
	bwd64        func(dp, p, y, w []float64, g float64, n int)
	bwd32        func(dp, p, y, w []float32, g float64, n int)
}

var (
	l1Loss = &pointLoss{name: "MaskedL1", fwdOp: prog.MaskedL1, bwdOp: prog.MaskedL1Grad,
		fwd64: kern.MaskedL1[float64], fwd32: kern.MaskedL1[float32],
		bwd64: kern.MaskedL1Backward[float64], bwd32: kern.MaskedL1Backward[float32]}
	bceLoss = &pointLoss{name: "MaskedBCE", fwdOp: prog.MaskedBCE, bwdOp: prog.MaskedBCEGrad,
		fwd64: kern.MaskedBCE[float64], fwd32: kern.MaskedBCE[float32],
		bwd64: kern.MaskedBCEBackward[float64], bwd32: kern.MaskedBCEBackward[float32]}
)

func applyLoss(k *pointLoss, pred, y, w *gorgonia.Node) (*gorgonia.Node, error) {
	if !pred.Shape().Eq(y.Shape()) || !pred.Shape().Eq(w.Shape()) {
		return nil, fmt.Errorf("%s: shapes %v, %v, %v differ", k.name, pred.Shape(), y.Shape(), w.Shape())
	}
	n, err := gorgonia.ApplyOp(&lossOp{k: k}, pred, y, w)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.name, err)
	}
	return n, nil
}

type lossOp struct {
	base
	k *pointLoss
}

func (op *lossOp) Arity() int            { return 3 }
func (op *lossOp) String() string        { return op.k.name }
func (op *lossOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%s%p", op.k.name, op) }
func (op *lossOp) Hashcode() uint32      { return hashOf(op) }
func (op *lossOp) Type() hm.Type {
	return hm.NewFnType(matT(), matT(), matT(), hm.TypeVariable('a'))
}
func (op *lossOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	return tensor.ScalarShape(), nil
}

// lossInputs checks vs[:3] (one element type) and returns them as dense tensors.
func lossInputs(op gorgonia.Op, vs []gorgonia.Value) ([3]*tensor.Dense, error) {
	var ds [3]*tensor.Dense
	if err := arity(op, vs); err != nil {
		return ds, err
	}
	for i := range ds {
		d, err := dense(op, vs[i], i)
		if err != nil {
			return ds, err
		}
		ds[i] = d
	}
	return ds, sameType(op, ds[:]...)
}

func (op *lossOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ds, err := lossInputs(op, vs)
	if err != nil {
		return nil, err
	}
	if ds[0].Dtype() == tensor.Float64 {
		var out [1]float64
		p := ds[0].Float64s()
		op.k.fwd64(out[:], p, ds[1].Float64s(), ds[2].Float64s(), len(p))
		return gorgonia.NewF64(out[0]), nil
	}
	var out [1]float32
	p := ds[0].Float32s()
	op.k.fwd32(out[:], p, ds[1].Float32s(), ds[2].Float32s(), len(p))
	return gorgonia.NewF32(out[0]), nil
}

func (op *lossOp) DiffWRT(int) []bool { return []bool{true, false, false} }
func (op *lossOp) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	dp, err := gorgonia.ApplyOp(&lossGradOp{k: op.k}, in[0], in[1], in[2], grad)
	if err != nil {
		return nil, fmt.Errorf("%s gradient: %w", op.k.name, err)
	}
	return gorgonia.Nodes{dp, nil, nil}, nil
}

// lossGradOp: d/dpred of the loss times the upstream scalar g (L1: g·w ⊙ sign(pred − y), 0
// where pred = y, as PyTorch; BCE: g·w ⊙ (σ(z) − y)).
type lossGradOp struct {
	base
	k   *pointLoss
	out Buffer
}

func (op *lossGradOp) Arity() int            { return 4 }
func (op *lossGradOp) String() string        { return op.k.name + "Grad" }
func (op *lossGradOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%sGrad%p", op.k.name, op) }
func (op *lossGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *lossGradOp) Type() hm.Type {
	return hm.NewFnType(matT(), matT(), matT(), hm.TypeVariable('a'), matT())
}
func (op *lossGradOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := inShape(op, in, 0)
	if err != nil {
		return nil, err
	}
	return s.Clone(), nil
}

func (op *lossGradOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ds, err := lossInputs(op, vs)
	if err != nil {
		return nil, err
	}
	g, err := upstreamScalar(op, vs[3])
	if err != nil {
		return nil, err
	}
	out := op.out.Get(ds[0].Dtype(), ds[0].Shape()...)
	if ds[0].Dtype() == tensor.Float64 {
		dp := out.Float64s()
		op.k.bwd64(dp, ds[0].Float64s(), ds[1].Float64s(), ds[2].Float64s(), g, len(dp))
	} else {
		dp := out.Float32s()
		op.k.bwd32(dp, ds[0].Float32s(), ds[1].Float32s(), ds[2].Float32s(), g, len(dp))
	}
	return out, nil
}
