package ops

import (
	"fmt"
	"github.com/rewiregnn/rewiregnn/prog"

	"github.com/rewiregnn/rewiregnn/kern"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// DropState is one dropout site: its rate, its seed and the training switch. Whether element
// i is dropped at training step s is a pure function of (Seed, s, i) (a counter-based
// generator), so the backward pass sees the forward mask, a resumed run draws the masks an
// uninterrupted one would, and a GPU kernel can draw the same masks.
type DropState struct {
	Name     string
	Rate     float64
	Seed     uint64
	Training bool
	step     *uint64 // the owning parameter set's step counter
}

// NewDropState returns a dropout site in training mode whose masks follow the step counter
// *step (the training steps taken, which the owner advances).
func NewDropState(name string, rate float64, seed uint64, step *uint64) *DropState {
	return &DropState{Name: name, Rate: rate, Seed: seed, Training: true, step: step}
}

// DropKeep is the dropout mask: whether element i survives under a step's seed (StepSeed) at
// the given rate (kern.DropKeep, the twin of the GPU's dropout kernel, cuda/kernels/dropout.cu).
func DropKeep(seed uint64, i int, rate float64) bool { return kern.DropKeep(seed, i, rate) }

// Dropout zeroes each entry of a matrix with probability st.Rate during training and scales the
// survivors by 1/(1−Rate) (inverted dropout, as PyTorch); in evaluation it is the identity.
func Dropout(x *gorgonia.Node, st *DropState) (*gorgonia.Node, error) {
	if x.Dims() != 2 {
		return nil, fmt.Errorf("dropout %s: shape %v, want a matrix", st.Name, x.Shape())
	}
	if st.Rate < 0 || st.Rate >= 1 {
		return nil, fmt.Errorf("dropout %s: rate %g outside [0, 1)", st.Name, st.Rate)
	}
	op := newFuncOp(prog.Dropout, "Dropout{"+st.Name+"}", 1, sameAs(0), dropKernel[float64](st), dropKernel[float32](st))
	op.dev = DeviceOp{Drop: st}
	op.grad = func(_ gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		gop := newFuncOp(prog.DropoutGrad, "DropoutGrad{"+st.Name+"}", 1, sameAs(0), dropKernel[float64](st), dropKernel[float32](st))
		gop.dev = DeviceOp{Drop: st}
		dx, err := apply(gop, g)
		if err != nil {
			return nil, err
		}
		return gorgonia.Nodes{dx}, nil
	}
	return apply(op, x)
}

// dropKernel multiplies by the mask (kern.Dropout): the forward pass and, on the upstream
// gradient, the backward pass (the same mask, the same scale). Outside training it copies.
func dropKernel[T kern.Float](st *DropState) kernel[T] {
	return func(out []T, in [][]T, _ []tensor.Shape) {
		if !st.Training || st.Rate == 0 {
			copy(out, in[0])
			return
		}
		kern.Dropout(out, in[0], len(out), st.Rate, st.StepSeed())
	}
}
