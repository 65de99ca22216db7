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
	return mapOp(x, prog.Relu, prog.ReluGrad, true, mapOf(kern.ReluAll[float64], kern.ReluGradAll[float64]),
		mapOf(kern.ReluAll[float32], kern.ReluGradAll[float32]))
}

// Gelu returns GELU(x) of a matrix in its tanh form (kern.Gelu); its gradient reads x.
func Gelu(x *gorgonia.Node) (*gorgonia.Node, error) {
	return mapOp(x, prog.Gelu, prog.GeluGrad, false, mapOf(kern.Gelu[float64], kern.GeluGrad[float64]),
		mapOf(kern.Gelu[float32], kern.GeluGrad[float32]))
}

// mapFns are the kernels of an element-wise map and of its gradient in one element type.
type mapFns[T kern.Float] struct{ f, g kernel[T] }

// mapOf wraps kern's functions of a map, f(out, x), and of its gradient, g(dx, x or y, dy).
func mapOf[T kern.Float](f func(out, x []T), g func(dx, a, dy []T)) mapFns[T] {
	return mapFns[T]{func(out []T, in [][]T, _ []tensor.Shape) { f(out, in[0]) },
		func(out []T, in [][]T, _ []tensor.Shape) { g(out, in[0], in[1]) }}
}

// mapOp applies an element-wise map of op kind to a matrix; its gradient op (gradKind) takes
// (y, dy) where fromOutput, else (x, dy).
func mapOp(x *gorgonia.Node, kind, gradKind prog.Op, fromOutput bool, k64 mapFns[float64], k32 mapFns[float32]) (*gorgonia.Node, error) {
	if x.Dims() != 2 {
		return nil, fmt.Errorf("%s: shape %v, want a matrix", kind, x.Shape())
	}
	op := newFuncOp(kind, kind.String(), 1, sameAs(0), k64.f, k32.f)
	op.grad = func(in gorgonia.Nodes, out, dy *gorgonia.Node) (gorgonia.Nodes, error) {
		from := in[0]
		if fromOutput {
			from = out
		}
		dx, err := apply(newFuncOp(gradKind, gradKind.String(), 2, sameAs(0), k64.g, k32.g), from, dy)
		if err != nil {
			return nil, err
		}
		return gorgonia.Nodes{dx}, nil
	}
	return apply(op, x)
}
