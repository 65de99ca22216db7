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
	}, headDot[float64], headDot[float32])
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

func headDot[T kern.Float](out []T, in [][]T, s []tensor.Shape) {
	d, h := s[0][1], len(out)/max(s[0][0], 1)
	w := d / h
	q, k := in[0], in[1]
	for m := 0; m < s[0][0]; m++ {
		for j := 0; j < h; j++ {
			var acc T
			base := m*d + j*w
			for t := 0; t < w; t++ {
				acc += q[base+t] * k[base+t]
			}
			out[m*h+j] = acc
		}
	}
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
	d, h := s[0][1], s[1][1]
	w := d / h
	x, sc := in[0], in[1]
	for m := 0; m < s[0][0]; m++ {
		for j := 0; j < h; j++ {
			c := sc[m*h+j]
			base := m*d + j*w
			for t := 0; t < w; t++ {
				out[base+t] = c * x[base+t]
			}
		}
	}
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

func kernelMix[T kern.Float](out []T, in [][]T, s []tensor.Shape) {
	x, w := in[0], in[1]
	kd, k := s[0][1], s[1][1]
	d := kd / k
	clear(out)
	for m := 0; m < s[0][0]; m++ {
		o := out[m*d : (m+1)*d]
		for j := 0; j < k; j++ {
			c := w[m*k+j]
			xs := x[m*kd+j*d : m*kd+(j+1)*d]
			for t := range o {
				o[t] += c * xs[t]
			}
		}
	}
}

// kernelMixGradX: inputs g [M, d], w [M, K]; out[m,k·d+t] = w[m,k]·g[m,t].
func kernelMixGradX[T kern.Float](out []T, in [][]T, s []tensor.Shape) {
	g, w := in[0], in[1]
	d, k := s[0][1], s[1][1]
	for m := 0; m < s[0][0]; m++ {
		for j := 0; j < k; j++ {
			c := w[m*k+j]
			o := out[m*k*d+j*d : m*k*d+(j+1)*d]
			for t := range o {
				o[t] = c * g[m*d+t]
			}
		}
	}
}

// kernelMixGradW: inputs x [M, K·d], g [M, d], w [M, K]; out[m,k] = Σ_t x[m,k·d+t]·g[m,t].
func kernelMixGradW[T kern.Float](out []T, in [][]T, s []tensor.Shape) {
	x, g := in[0], in[1]
	d, k := s[1][1], s[2][1]
	for m := 0; m < s[0][0]; m++ {
		for j := 0; j < k; j++ {
			var acc T
			xs := x[m*k*d+j*d : m*k*d+(j+1)*d]
			for t, v := range xs {
				acc += v * g[m*d+t]
			}
			out[m*k+j] = acc
		}
	}
}
