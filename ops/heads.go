package ops

import (
	"fmt"
	"github.com/rewiregnn/rewiregnn/prog"

	"github.com/rewiregnn/rewiregnn/kern"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// HeadDot returns, for every row m and head k, the dot product of the k-th column blocks of q
// and k: out[m,k] = Σ_t q[m,k·w+t]·k[m,k·w+t] with w = d/heads. q and k are [M, d]; out is [M, heads].
func HeadDot(q, k *gorgonia.Node, heads int) (*gorgonia.Node, error) {
	if q.Dims() != 2 || !q.Shape().Eq(k.Shape()) || heads < 1 || q.Shape()[1]%heads != 0 {
		return nil, fmt.Errorf("head dot: shapes %v and %v with %d heads", q.Shape(), k.Shape(), heads)
	}
	op := newFuncOp(prog.HeadDot, fmt.Sprintf("HeadDot{%d}", heads), 2, func(s []tensor.Shape) (tensor.Shape, error) {
		return tensor.Shape{s[0][0], heads}, nil
	}, headDot[float64](heads), headDot[float32](heads))
	op.dev = DeviceOp{Heads: heads}
	op.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		// d/dq = HeadScale(k, g), d/dk = HeadScale(q, g).
		dq, err := HeadScale(in[1], g)
		if err != nil {
			return nil, err
		}
		dk, err := HeadScale(in[0], g)
		if err != nil {
			return nil, err
		}
		return gorgonia.Nodes{dq, dk}, nil
	}
	return apply(op, q, k)
}

func headDot[T kern.Float](heads int) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) { kern.HeadDot(out, in[0], in[1], s[0][0], heads, s[0][1]) }
}

// HeadScale multiplies the k-th column block of every row of x ([M, d]) by w[m,k] ([M, heads]).
func HeadScale(x, w *gorgonia.Node) (*gorgonia.Node, error) {
	if x.Dims() != 2 || w.Dims() != 2 || x.Shape()[0] != w.Shape()[0] || w.Shape()[1] < 1 || x.Shape()[1]%w.Shape()[1] != 0 {
		return nil, fmt.Errorf("head scale: shapes %v and %v", x.Shape(), w.Shape())
	}
	op := newFuncOp(prog.HeadScale, "HeadScale", 2, sameAs(0), headScale[float64], headScale[float32])
	op.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		// d/dx = HeadScale(g, w), d/dw = HeadDot(x, g).
		dx, err := HeadScale(g, in[1])
		if err != nil {
			return nil, err
		}
		dw, err := HeadDot(in[0], g, in[1].Shape()[1])
		if err != nil {
			return nil, err
		}
		return gorgonia.Nodes{dx, dw}, nil
	}
	return apply(op, x, w)
}

func headScale[T kern.Float](out []T, in [][]T, s []tensor.Shape) {
	kern.HeadScale(out, in[0], in[1], s[0][0], s[1][1], s[0][1])
}

// KernelMix sums the K column blocks of x ([M, K·d]) weighted by w ([M, K]):
// out[m,j] = Σ_k w[m,k]·x[m,k·d+j] (MoNet's mixture of K kernels).
func KernelMix(x, w *gorgonia.Node) (*gorgonia.Node, error) {
	if x.Dims() != 2 || w.Dims() != 2 || x.Shape()[0] != w.Shape()[0] || w.Shape()[1] < 1 || x.Shape()[1]%w.Shape()[1] != 0 {
		return nil, fmt.Errorf("kernel mix: shapes %v and %v", x.Shape(), w.Shape())
	}
	op := newFuncOp(prog.KernelMix, "KernelMix", 2, func(s []tensor.Shape) (tensor.Shape, error) {
		return tensor.Shape{s[0][0], s[0][1] / s[1][1]}, nil
	}, kernelMix[float64], kernelMix[float32])
	op.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		dx, err := apply(newFuncOp(prog.KernelMixGradX, "KernelMixGradX", 2, func(s []tensor.Shape) (tensor.Shape, error) {
			return tensor.Shape{s[0][0], s[0][1] * s[1][1]}, nil
		}, kernelMixGradX[float64], kernelMixGradX[float32]), g, in[1])
		if err != nil {
			return nil, err
		}
		dw, err := apply(newFuncOp(prog.KernelMixGradW, "KernelMixGradW", 3, sameAs(2), kernelMixGradW[float64], kernelMixGradW[float32]), in[0], g, in[1])
		if err != nil {
			return nil, err
		}
		return gorgonia.Nodes{dx, dw}, nil
	}
	return apply(op, x, w)
}

// kernelMix: inputs x [M, K·d], w [M, K].
func kernelMix[T kern.Float](out []T, in [][]T, s []tensor.Shape) {
	k := s[1][1]
	kern.KernelMix(out, in[0], in[1], s[0][0], k, s[0][1]/k)
}

// kernelMixGradX: inputs g [M, d], w [M, K]; out[m,k·d+t] = w[m,k]·g[m,t].
func kernelMixGradX[T kern.Float](out []T, in [][]T, s []tensor.Shape) {
	kern.KernelMixBackward(out, nil, nil, in[1], in[0], s[0][0], s[1][1], s[0][1])
}

// kernelMixGradW: inputs x [M, K·d], g [M, d], w [M, K]; out[m,k] = Σ_t x[m,k·d+t]·g[m,t].
func kernelMixGradW[T kern.Float](out []T, in [][]T, s []tensor.Shape) {
	kern.KernelMixBackward(nil, out, in[0], nil, in[1], s[0][0], s[2][1], s[1][1])
}
