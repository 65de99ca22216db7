package ops

import (
	"fmt"
	"github.com/rewiregnn/rewiregnn/prog"

	"github.com/rewiregnn/rewiregnn/kern"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MatMul returns x·w for x [M, in] and w [in, out]. Unlike gorgonia.Mul it reuses its output
// buffers. In float32 on amd64 all three products (forward, dy·wᵀ, xᵀ·dy) run on the assembly
// kernels of package kern (x is never transposed; w, small, is for dy·wᵀ), and the two gradients in
// one pass over dy; otherwise, and for matrices smaller than one kernel block, gonum's GEMM is
// used, except for the weight gradient xᵀ·dy (long and thin: M ≫ in, out), computed from
// transposed copies as blocked long dot products in parallel.
func MatMul(x, w *gorgonia.Node) (*gorgonia.Node, error) {
	if x.Dims() != 2 || w.Dims() != 2 || x.Shape()[1] != w.Shape()[0] {
		return nil, fmt.Errorf("matmul: shapes %v and %v", x.Shape(), w.Shape())
	}
	st := &linGrad{}
	op := newFuncOp(prog.MatMul, "MatMul", 2, productShape, matmulFwd[float64](st), matmulFwd[float32](st))
	op.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) { return matmulGrads(st, in, g) }
	op.dev = DeviceOp{State: st} // the product and its two gradients are one group
	return apply(op, x, w)
}

func productShape(s []tensor.Shape) (tensor.Shape, error) { return tensor.Shape{s[0][0], s[1][1]}, nil }

// matmulGrads returns the gradients dx = g·wᵀ (inputs g, w) and dw = xᵀ·g (inputs x, g) of x·w.
// Whichever of the two ops runs first after the forward pass computes both in one pass over g
// (kern.ProductGrads) and leaves the other's result in that op's output buffer.
func matmulGrads(st *linGrad, in gorgonia.Nodes, g *gorgonia.Node) (gorgonia.Nodes, error) {
	dx := newFuncOp(prog.MatMulGradX, "MatMulGradX", 2, func(s []tensor.Shape) (tensor.Shape, error) {
		return tensor.Shape{s[0][0], s[1][0]}, nil
	}, linGradKernel[float64](st, 0), linGradKernel[float32](st, 0))
	dw := newFuncOp(prog.MatMulGradW, "MatMulGradW", 2, func(s []tensor.Shape) (tensor.Shape, error) {
		return tensor.Shape{s[0][1], s[1][1]}, nil
	}, linGradKernel[float64](st, 1), linGradKernel[float32](st, 1))
	dx.dev, dw.dev = DeviceOp{State: st}, DeviceOp{State: st, Which: 1}
	st.ops = [2]*Func{dx, dw}
	dX, err := apply(dx, g, in[1])
	if err != nil {
		return nil, err
	}
	dW, err := apply(dw, in[0], g)
	if err != nil {
		return nil, err
	}
	return gorgonia.Nodes{dX, dW}, nil
}

// linGrad is the state a product shares with its gradient ops: the forward pass's inputs (x,
// w as []T) and shape, a pass counter, and which pass the gradients were computed for.
type linGrad struct {
	x, w       any
	m, a, b    int
	pass, done int
	ops        [2]*Func     // dx's and dw's ops
	sc         kern.Scratch // the pass's scratch
}

// matmulFwd: out = x·w; it records x, w and the shape for the gradient ops.
func matmulFwd[T kern.Float](st *linGrad) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) {
		st.x, st.w = in[0], in[1]
		st.m, st.a, st.b = s[0][0], s[0][1], s[1][1]
		st.pass++
		kern.MatMulNN(out, in[0], in[1], nil, st.m, st.a, st.b)
	}
}

// linGradKernel is the kernel of dx's op (which 0: inputs g, w) and dw's (which 1: inputs x,
// g): the first to run in a pass computes dx = g·wᵀ and dw = xᵀ·g into the two ops' output
// buffers; the second finds its result there.
func linGradKernel[T kern.Float](st *linGrad, which int) kernel[T] {
	return func(out []T, in [][]T, _ []tensor.Shape) {
		if st.done == st.pass {
			return // the other op computed this op's output
		}
		st.done = st.pass
		m, a, b := st.m, st.a, st.b
		x, w := st.x.([]T), st.w.([]T)
		dt := tensor.Float64
		if _, ok := any(out).([]float32); ok {
			dt = tensor.Float32
		}
		var g, dx, dw []T
		if which == 0 {
			g, dx = in[0], out
			dw = st.ops[1].out.Get(dt, a, b).Data().([]T)
		} else {
			g, dw = in[1], out
			dx = st.ops[0].out.Get(dt, m, a).Data().([]T)
		}
		kern.ProductGrads(&st.sc, dx, dw, nil, x, w, g, nil, m, a, b)
	}
}
