package ops

import (
	"fmt"
	"github.com/rewiregnn/rewiregnn/prog"

	"github.com/rewiregnn/rewiregnn/kern"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Add returns a + b for two tensors of one shape, reusing its output buffer (gorgonia's Add
// allocates a result per run).
func Add(a, b *gorgonia.Node) (*gorgonia.Node, error) {
	if !a.Shape().Eq(b.Shape()) || a.Dims() != 2 {
		return nil, fmt.Errorf("add: shapes %v and %v, want equal matrices", a.Shape(), b.Shape())
	}
	op := newFuncOp(prog.Add, "Add", 2, sameAs(0), addKernel[float64], addKernel[float32])
	op.grad = func(_ gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		return gorgonia.Nodes{g, g}, nil
	}
	return apply(op, a, b)
}

func addKernel[T kern.Float](out []T, in [][]T, _ []tensor.Shape) {
	a, b := in[0], in[1]
	kern.ParallelRange(len(out), 1, func(lo, hi int) { kern.Add2(out[lo:hi], a[lo:hi], b[lo:hi]) })
}

// Relu returns max(x, 0) of a matrix; its gradient passes where the output is positive.
func Relu(x *gorgonia.Node) (*gorgonia.Node, error) {
	if x.Dims() != 2 {
		return nil, fmt.Errorf("relu: shape %v, want a matrix", x.Shape())
	}
	op := newFuncOp(prog.Relu, "Relu", 1, sameAs(0), reluKernel[float64], reluKernel[float32])
	op.grad = func(_ gorgonia.Nodes, out, g *gorgonia.Node) (gorgonia.Nodes, error) {
		gop := newFuncOp(prog.ReluGrad, "ReluGrad", 2, sameAs(0), reluGrad[float64], reluGrad[float32])
		dx, err := apply(gop, out, g)
		if err != nil {
			return nil, err
		}
		return gorgonia.Nodes{dx}, nil
	}
	return apply(op, x)
}

func reluKernel[T kern.Float](out []T, in [][]T, _ []tensor.Shape) { kern.ReluAll(out, in[0]) }

// reluGrad: inputs y = relu(x) and g; out = g where y > 0, else 0.
func reluGrad[T kern.Float](out []T, in [][]T, _ []tensor.Shape) { kern.ReluGradAll(out, in[0], in[1]) }

// Gelu returns GELU(x) of a matrix in its tanh form (kern.Gelu); its gradient reads x.
func Gelu(x *gorgonia.Node) (*gorgonia.Node, error) {
	if x.Dims() != 2 {
		return nil, fmt.Errorf("gelu: shape %v, want a matrix", x.Shape())
	}
	op := newFuncOp(prog.Gelu, "Gelu", 1, sameAs(0), geluKernel[float64], geluKernel[float32])
	op.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		gop := newFuncOp(prog.GeluGrad, "GeluGrad", 2, sameAs(0), geluGrad[float64], geluGrad[float32])
		dx, err := apply(gop, in[0], g)
		if err != nil {
			return nil, err
		}
		return gorgonia.Nodes{dx}, nil
	}
	return apply(op, x)
}

func geluKernel[T kern.Float](out []T, in [][]T, _ []tensor.Shape) { kern.Gelu(out, in[0]) }

// geluGrad: inputs x and g; out = g·gelu'(x).
func geluGrad[T kern.Float](out []T, in [][]T, _ []tensor.Shape) { kern.GeluGrad(out, in[0], in[1]) }
