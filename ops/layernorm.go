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

// lnState is what the forward pass keeps for the gradient ops (kern.LayerNormState).
type lnState struct {
	mask *Mask
	kern.LayerNormState
}

// ready checks that a forward pass of the gradient's shape ran (inputs γ and dy).
func (st *lnState) ready(s []tensor.Shape) error { return st.Ready(s[1][0], s[1][1]) }

func lnKernel[T kern.Float](st *lnState) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) {
		kern.LayerNormForward(&st.LayerNormState, out, in[0], in[1], in[2], st.mask.Keep, s[0][0], s[0][1], BNEps)
	}
}

// lnGradKernel (inputs γ and dy; kern.LayerNormGrad): which 0: dx =
// (1/σ)(γ⊙dy − mean(γ⊙dy) − x̂·mean(γ⊙dy⊙x̂)) per kept row; which 1: dγ = Σ_rows dy⊙x̂;
// which 2: dβ = Σ_rows dy.
func lnGradKernel[T kern.Float](st *lnState, which int) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) {
		outs := make([][]T, 3)
		outs[which] = out
		kern.LayerNormGrad(&st.LayerNormState, outs[0], outs[1], outs[2], in[0], in[1], st.mask.Keep, s[1][0], s[1][1])
	}
}
