package ops

import (
	"fmt"
	"github.com/rewiregnn/rewiregnn/prog"

	"github.com/rewiregnn/rewiregnn/kern"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// LayerNorm normalises every kept row of x ([rows, d]) over its d features and returns
// γ⊙x̂+β (PyTorch LayerNorm, ε = 1e-5, biased variance). Rows the mask drops come out as zeros
// and get no gradient.
func LayerNorm(x, gamma, beta *gorgonia.Node, mask *Mask) (*gorgonia.Node, error) {
	if x.Dims() != 2 || x.Shape()[0] != len(mask.Keep) {
		return nil, fmt.Errorf("layer norm: input shape %v, want [%d, d]", x.Shape(), len(mask.Keep))
	}
	d := x.Shape()[1]
	if gamma.Dims() != 1 || beta.Dims() != 1 || gamma.Shape()[0] != d || beta.Shape()[0] != d {
		return nil, fmt.Errorf("layer norm: γ %v and β %v, want [%d]", gamma.Shape(), beta.Shape(), d)
	}
	st := &lnState{mask: mask}
	op := newFuncOp(prog.LayerNorm, "LayerNorm", 3, sameAs(0), lnKernel[float64](st), lnKernel[float32](st))
	op.ranks = []int{2, 1, 1, 2}
	op.dev = DeviceOp{Mask: mask, State: st}
	op.check = func(s []tensor.Shape) error {
		if s[0][0] != len(mask.Keep) {
			return fmt.Errorf("%d rows, mask has %d", s[0][0], len(mask.Keep))
		}
		return nil
	}
	op.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		res := make(gorgonia.Nodes, 3)
		for which := range res {
			shape := sameAs(1) // dx has dy's shape, dγ and dβ γ's
			if which > 0 {
				shape = sameAs(0)
			}
			gop := newFuncOp(prog.LayerNormGrad, fmt.Sprintf("LayerNormGrad{%d}", which), 2, shape,
				lnGradKernel[float64](st, which), lnGradKernel[float32](st, which))
			gop.ranks = []int{1, 2, 2}
			if which > 0 {
				gop.ranks[2] = 1
			}
			gop.check = st.ready
			gop.dev = DeviceOp{Mask: mask, State: st, Which: which}
			n, err := apply(gop, in[1], g)
			if err != nil {
				return nil, err
			}
			res[which] = n
		}
		return res, nil
	}
	n, err := gorgonia.ApplyOp(op, x, gamma, beta)
	if err != nil {
		return nil, fmt.Errorf("layer norm: %w", err)
	}
	return n, nil
}

// lnState is what the forward pass keeps for the gradient ops: x̂ and 1/σ per row.
type lnState struct {
	mask   *Mask
	xhat   []float64
	invStd []float64
}

// ready checks that a forward pass of the gradient's shape ran (inputs γ and dy).
func (st *lnState) ready(s []tensor.Shape) error {
	if len(st.xhat) != s[1].TotalSize() {
		return fmt.Errorf("no forward pass of shape %v to differentiate", s[1])
	}
	return nil
}

func lnKernel[T kern.Float](st *lnState) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) {
		rows, cols := s[0][0], s[0][1]
		st.xhat, st.invStd = scratch(&st.xhat, rows*cols), scratch(&st.invStd, rows)
		kern.LayerNorm(kern.LayerNormBufs[T]{X: in[0], Gamma: in[1], Beta: in[2], Keep: st.mask.Keep, Out: out,
			Xhat: st.xhat, InvStd: st.invStd}, rows, cols, BNEps)
	}
}

// lnGradKernel (inputs γ and dy; kern.LayerNormBackward): which 0: dx =
// (1/σ)(γ⊙dy − mean(γ⊙dy) − x̂·mean(γ⊙dy⊙x̂)) per kept row; which 1: dγ = Σ_rows dy⊙x̂;
// which 2: dβ = Σ_rows dy.
func lnGradKernel[T kern.Float](st *lnState, which int) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) {
		rows, d := s[1][0], s[1][1]
		var dx, dgamma, dbeta []T
		switch which {
		case 0:
			dx = out
		case 1:
			dgamma = out
		default:
			dbeta = out
		}
		kern.LayerNormBackward(dx, dgamma, dbeta, in[1], kern.LayerNormBufs[T]{Gamma: in[0], Keep: st.mask.Keep,
			Xhat: st.xhat, InvStd: st.invStd}, rows, d)
	}
}
