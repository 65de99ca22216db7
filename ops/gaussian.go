package ops

import (
	"fmt"
	"github.com/rewiregnn/rewiregnn/prog"

	"github.com/rewiregnn/rewiregnn/kern"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// GaussianWeights is MoNet's kernel weights: for pseudo-coordinates u ([M, P]), means mu and
// inverse standard deviations is ([K, P]), out[m,k] = exp(−½ Σ_c (u[m,c] − mu[k,c])²·is[k,c]²).
func GaussianWeights(u, mu, is *gorgonia.Node) (*gorgonia.Node, error) {
	if u.Dims() != 2 || mu.Dims() != 2 || !mu.Shape().Eq(is.Shape()) || u.Shape()[1] != mu.Shape()[1] {
		return nil, fmt.Errorf("gaussian weights: shapes %v, %v, %v", u.Shape(), mu.Shape(), is.Shape())
	}
	op := newFuncOp(prog.GaussianWeights, "GaussianWeights", 3, func(s []tensor.Shape) (tensor.Shape, error) {
		return tensor.Shape{s[0][0], s[1][0]}, nil
	}, gaussW[float64], gaussW[float32])
	op.grad = func(in gorgonia.Nodes, out, g *gorgonia.Node) (gorgonia.Nodes, error) {
		res := make(gorgonia.Nodes, 3)
		for which := range res {
			gop := newFuncOp(prog.GaussianWeightsGrad, fmt.Sprintf("GaussianWeightsGrad{%d}", which), 5, sameAs(which), gaussGrad[float64](which), gaussGrad[float32](which))
			gop.dev = DeviceOp{Which: which}
			n, err := apply(gop, in[0], in[1], in[2], out, g)
			if err != nil {
				return nil, err
			}
			res[which] = n
		}
		return res, nil
	}
	return apply(op, u, mu, is)
}

func gaussW[T kern.Float](out []T, in [][]T, s []tensor.Shape) {
	kern.GaussianWeights(out, in[0], in[1], in[2], s[0][0], s[1][0], s[0][1])
}

// gaussGrad returns the kernel of the gradient with respect to input which (0 u, 1 mu, 2 is),
// from inputs u, mu, is, w (the forward output) and g (the output gradient):
// ∂w/∂u_c = −w·(u_c−μ_kc)·s_kc², ∂w/∂μ_kc = w·(u_c−μ_kc)·s_kc², ∂w/∂s_kc = −w·(u_c−μ_kc)²·s_kc.
func gaussGrad[T kern.Float](which int) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) {
		var grads [3][]T
		grads[which] = out
		kern.GaussianWeightsBackward(grads[0], grads[1], grads[2], in[0], in[1], in[2], in[3], in[4], s[0][0], s[1][0], s[0][1])
	}
}
