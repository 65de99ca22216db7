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
// transposed copies as blocked long dot products in parallel. The executor runs a product
// followed by AddBias as one kernel (the bias added by the product's kernel).
func MatMul(x, w *gorgonia.Node) (*gorgonia.Node, error) {
	if x.Dims() != 2 || w.Dims() != 2 || x.Shape()[1] != w.Shape()[0] {
		return nil, fmt.Errorf("matmul: shapes %v and %v", x.Shape(), w.Shape())
	}
	st := &linGrad{}
	op := newFuncOp(prog.MatMul, "MatMul", 2, productShape, matmulFwd[float64](st), matmulFwd[float32](st))
	op.withBias = func() *Func {
		f := newFuncOp(prog.Invalid, "MatMul+AddBias", 3, productShape, matmulFwd[float64](st), matmulFwd[float32](st))
		f.ranks = []int{2, 2, 1, 2}
		return f
	}
	op.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) { return matmulGrads(st, in, g) }
	op.dev = DeviceOp{State: st} // the product and its two gradients are one group
	return apply(op, x, w)
}

func productShape(s []tensor.Shape) (tensor.Shape, error) { return tensor.Shape{s[0][0], s[1][1]}, nil }

// matmulGrads returns the gradients dx = g·wᵀ (inputs g, w) and dw = xᵀ·g (inputs x, g) of x·w.
// Whichever of the two ops runs first after the forward pass computes both in one pass over g
// (kern.LinearGrad32) and leaves the other's result in that op's output buffer; an executor that
// finds that nothing needs one of them says so (RunOpts.Alone), and it is not computed. A summand
// an executor gives dx's op (Func.SumsIn) is added to dx; the executor then runs dw's op after
// dx's (Func.Pair). An executor can also have the pass compute the column sums of g into a
// vector it gives both ops (RunOpts.ColSum): the bias gradient.
func matmulGrads(st *linGrad, in gorgonia.Nodes, g *gorgonia.Node) (gorgonia.Nodes, error) {
	dx := newFuncOp(prog.MatMulGradX, "MatMulGradX", 2, func(s []tensor.Shape) (tensor.Shape, error) {
		return tensor.Shape{s[0][0], s[1][0]}, nil
	}, nil, nil)
	dx.p64, dx.p32 = linGradKernel[float64](st, 0), linGradKernel[float32](st, 0)
	dx.sumsIn = true
	dw := newFuncOp(prog.MatMulGradW, "MatMulGradW", 2, func(s []tensor.Shape) (tensor.Shape, error) {
		return tensor.Shape{s[0][1], s[1][1]}, nil
	}, nil, nil)
	dw.p64, dw.p32 = linGradKernel[float64](st, 1), linGradKernel[float32](st, 1)
	dx.pair, dw.pair = dw, dx
	dx.dev, dw.dev = DeviceOp{State: st}, DeviceOp{State: st, Which: 1}
	dx.lin, dw.lin = st, st
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
	sc         kern.Scratch // the pass's scratch, unless the executor gives one (RunOpts.Scratch)
}

// matmulFwd: out = x·w (+ bias in[2]); it records x, w and the shape for the gradient ops.
func matmulFwd[T kern.Float](st *linGrad) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) {
		st.x, st.w = in[0], in[1]
		st.m, st.a, st.b = s[0][0], s[0][1], s[1][1]
		st.pass++
		var bias []T
		if len(in) > 2 {
			bias = in[2]
		}
		kern.MatMulNN(out, in[0], in[1], bias, st.m, st.a, st.b)
	}
}

// pairOut is the buffer a product's gradient pass writes its pair's result to: the executor's
// (RunOpts.PairOut), else the pair op's own.
func pairOut[T kern.Float](p *RunOpts, own *Buffer, dt tensor.Dtype, rows, cols int) []T {
	if p != nil && p.PairOut != nil {
		return p.PairOut.Data().([]T)[:rows*cols]
	}
	return own.Get(dt, rows, cols).Data().([]T)
}

// linGradKernel is the kernel of dx's op (which 0: inputs g, w [, summand]) and dw's (which 1:
// inputs x, g): the first to run in a pass computes dx = g·wᵀ (+ summand) and dw = xᵀ·g into
// the two ops' output buffers (only this op's with p.Alone), and the column sums of g into
// p.ColSum if given.
func linGradKernel[T kern.Float](st *linGrad, which int) planKernel[T] {
	return func(p *RunOpts, out []T, in [][]T, _ []tensor.Shape) {
		alone := p != nil && p.Alone
		if st.done == st.pass {
			return // the other op computed this op's output
		}
		st.done = st.pass
		m, a, b := st.m, st.a, st.b
		x, w := st.x.([]T), st.w.([]T)
		var g, sum, dx, dw, db []T
		var z T
		dt := tensor.Float64
		if _, ok := any(z).(float32); ok {
			dt = tensor.Float32
		}
		if which == 0 {
			g, dx = in[0], out
			if len(in) > 2 {
				sum = in[2]
			}
			if !alone {
				dw = pairOut[T](p, &st.ops[1].out, dt, a, b)
			}
		} else {
			g, dw = in[1], out
			if !alone {
				dx = pairOut[T](p, &st.ops[0].out, dt, m, a)
			}
		}
		if p != nil && p.ColSum != nil {
			db = p.ColSum.Data().([]T)[:b]
		}
		sc := &st.sc
		if p != nil && p.Scratch != nil {
			sc = p.Scratch
		}
		kern.ProductGrads(sc, dx, dw, db, x, w, g, sum, m, a, b)
	}
}
