package nn

import (
	"fmt"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

var blasImpl gonum.Implementation

// MatMul returns x·w for x [M, in] and w [in, out]. Unlike gorgonia.Mul it reuses its output
// buffers. In float32 on amd64 all three products (forward, dy·wᵀ, xᵀ·dy) run on the assembly
// kernels of sgemm.go (x is never transposed; w, small, is for dy·wᵀ), and the two gradients in
// one pass over dy; otherwise, and for matrices smaller than one kernel block, gonum's GEMM is
// used, except for the weight gradient xᵀ·dy (long and thin: M ≫ in, out), computed from
// transposed copies as blocked long dot products in parallel. The executor runs a product
// followed by AddBias as one kernel (the bias added by the product's kernel).
func MatMul(x, w *gorgonia.Node) (*gorgonia.Node, error) {
	if x.Dims() != 2 || w.Dims() != 2 || x.Shape()[1] != w.Shape()[0] {
		return nil, fmt.Errorf("matmul: shapes %v and %v", x.Shape(), w.Shape())
	}
	st := &linGrad{}
	op := newFuncOp("MatMul", 2, productShape, matmulFwd[float64](st), matmulFwd[float32](st))
	op.withBias = func() *funcOp {
		f := newFuncOp("MatMul+AddBias", 3, productShape, matmulFwd[float64](st), matmulFwd[float32](st))
		f.ranks = []int{2, 2, 1, 2}
		return f
	}
	op.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) { return matmulGrads(st, in, g) }
	return apply(op, x, w)
}

func productShape(s []tensor.Shape) (tensor.Shape, error) { return tensor.Shape{s[0][0], s[1][1]}, nil }

// matmulGrads returns the gradients dx = g·wᵀ (inputs g, w) and dw = xᵀ·g (inputs x, g) of x·w.
// Whichever of the two ops runs first after the forward pass computes both in one pass over g
// (linearGrad32) and leaves the other's result in that op's output buffer; an executor that
// finds that nothing needs one of them says so (funcOp.dead), and it is not computed. A summand
// the executor folds into dx's op (funcOp.sumsIn) is added to dx; the executor then runs dw's
// op after dx's (funcOp.pair). The executor can also have the pass compute the column sums of
// g for a ColSum of g (the bias gradient), which then runs after both.
func matmulGrads(st *linGrad, in gorgonia.Nodes, g *gorgonia.Node) (gorgonia.Nodes, error) {
	dx := newFuncOp("MatMulGradX", 2, func(s []tensor.Shape) (tensor.Shape, error) {
		return tensor.Shape{s[0][0], s[1][0]}, nil
	}, linGradKernel[float64](st, 0), linGradKernel[float32](st, 0))
	dx.dead = func() { st.noDX = true }
	dx.sumsIn = true
	dw := newFuncOp("MatMulGradW", 2, func(s []tensor.Shape) (tensor.Shape, error) {
		return tensor.Shape{s[0][1], s[1][1]}, nil
	}, linGradKernel[float64](st, 1), linGradKernel[float32](st, 1))
	dw.dead = func() { st.noDW = true }
	dx.pair, dw.pair = dw, dx
	dx.lin, dw.lin = st, st
	st.ops = [2]*funcOp{dx, dw}
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
	ops        [2]*funcOp // dx's and dw's ops
	noDX, noDW bool       // nothing needs dx (dw)
	db         *funcOp    // a ColSum of g whose output the gradient pass fills (set by the executor)
	nt, tn     tnScratch
	fused      tnBuffers
}

// matmulFwd: out = x·w (+ bias in[2]); it records x, w and the shape for the gradient ops.
func matmulFwd[T Float](st *linGrad) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) {
		st.x, st.w = in[0], in[1]
		st.m, st.a, st.b = s[0][0], s[0][1], s[1][1]
		st.pass++
		matmulNN(out, in, s)
	}
}

// linGradKernel is the kernel of dx's op (which 0: inputs g, w [, summand]) and dw's (which 1:
// inputs x, g): the first to run in a pass computes dx = g·wᵀ (+ summand) and dw = xᵀ·g into
// the two ops' output buffers.
func linGradKernel[T Float](st *linGrad, which int) kernel[T] {
	return func(out []T, in [][]T, _ []tensor.Shape) {
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
			if !st.noDW {
				dw = st.ops[1].out.get(dt, a, b).Data().([]T)
			}
		} else {
			g, dw = in[1], out
			if !st.noDX {
				dx = st.ops[0].out.get(dt, m, a).Data().([]T)
			}
		}
		if st.db != nil {
			db = st.db.out.get(dt, b).Data().([]T)
		}
		if d32, ok := any(dx).([]float32); ok && linearGrad32(d32, any(dw).([]float32), any(db).([]float32),
			any(x).([]float32), any(w).([]float32), any(g).([]float32), any(sum).([]float32), m, a, b, &st.fused) {
			return
		}
		if dx != nil {
			matmulNT[T](&st.nt)(dx, [][]T{g, w}, []tensor.Shape{{m, b}, {a, b}})
			if sum != nil {
				addTo(dx, sum)
			}
		}
		if dw != nil {
			matmulTN[T](&st.tn)(dw, [][]T{x, g}, []tensor.Shape{{m, a}, {m, b}})
		}
		if db != nil {
			colSum(db, g)
		}
	}
}

// matmulNN: out [M, n] = a [M, k] · b [k, n] (+ in[2], a bias [n], on every row).
func matmulNN[T Float](out []T, in [][]T, s []tensor.Shape) {
	m, k, n := s[0][0], s[0][1], s[1][1]
	var bias []T
	if len(in) > 2 {
		bias = in[2]
	}
	if o, ok := any(out).([]float32); ok && sgemmNN(m, n, k, any(in[0]).([]float32), k, any(in[1]).([]float32), n, o, n, any(bias).([]float32)) {
		return
	}
	gemm(blas.NoTrans, blas.NoTrans, m, n, k, in[0], k, in[1], n, out, n)
	if bias != nil {
		parallelRange(m, n, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				addTo(out[r*n:(r+1)*n], bias)
			}
		})
	}
}

// matmulNT: out [M, k] = g [M, n] · wᵀ for w [k, n]; with the float32 kernel, w is transposed
// into scratch first.
func matmulNT[T Float](sc *tnScratch) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) {
		m, n, k := s[0][0], s[0][1], s[1][0]
		if o, ok := any(out).([]float32); ok && haveKernel && m >= micro.rows && k >= nr && n > 0 {
			wT := grow[float32](sc.xT, k*n)
			sc.xT = wT
			transposeInto(wT, any(in[1]).([]float32), k, n)
			sgemmNN(m, k, n, any(in[0]).([]float32), n, wT, k, o, k, nil)
			return
		}
		gemm(blas.NoTrans, blas.Trans, m, k, n, in[0], n, in[1], n, out, k)
	}
}

func gemm[T Float](ta, tb blas.Transpose, m, n, k int, a []T, lda int, b []T, ldb int, c []T, ldc int) {
	switch cc := any(c).(type) {
	case []float32:
		blasImpl.Sgemm(ta, tb, m, n, k, 1, any(a).([]float32), lda, any(b).([]float32), ldb, 0, cc, ldc)
	case []float64:
		blasImpl.Dgemm(ta, tb, m, n, k, 1, any(a).([]float64), lda, any(b).([]float64), ldb, 0, cc, ldc)
	}
}

// tnScratch holds the transposed copies and per-worker partial sums of a weight gradient.
type tnScratch struct {
	xT, gT any
	part   []any
	tn     tnBuffers
}

func grow[T Float](buf any, n int) []T {
	if b, ok := buf.([]T); ok && len(b) >= n {
		return b[:n]
	}
	return make([]T, n)
}

// transposeInto writes the [rows, cols] matrix src transposed into dst [cols, rows].
func transposeInto[T Float](dst, src []T, rows, cols int) {
	for r := 0; r < rows; r++ {
		for c, v := range src[r*cols : (r+1)*cols] {
			dst[c*rows+r] = v
		}
	}
}

// matmulTN: out [k, n] = xᵀ·g for x [M, k], g [M, n]. In float32 the kernel reads x transposed
// in place; otherwise it is computed as Σ over blocks of M of dot products of transposed rows,
// the blocks split between workers that sum into private buffers.
func matmulTN[T Float](sc *tnScratch) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) {
		m, k, n := s[0][0], s[0][1], s[1][1]
		if o, ok := any(out).([]float32); ok && sgemmTN(k, n, m, any(in[0]).([]float32), k, any(in[1]).([]float32), n, o, n, &sc.tn) {
			return
		}
		xT := grow[T](sc.xT, m*k)
		sc.xT = xT
		transposeInto(xT, in[0], m, k)
		gT := grow[T](sc.gT, m*n)
		sc.gT = gT
		transposeInto(gT, in[1], m, n)
		const blk = 2048
		nb := (m + blk - 1) / blk
		workers := max(1, min(runtime.GOMAXPROCS(0), nb))
		for len(sc.part) < workers {
			sc.part = append(sc.part, nil)
		}
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			acc := grow[T](sc.part[w], k*n)
			sc.part[w] = acc
			wg.Add(1)
			go func() {
				defer wg.Done()
				clear(acc)
				for b := w; b < nb; b += workers {
					lo := b * blk
					l := min(blk, m-lo)
					for i := 0; i < k; i++ {
						xr := xT[i*m+lo : i*m+lo+l]
						for j := 0; j < n; j++ {
							acc[i*n+j] += dot(xr, gT[j*m+lo:j*m+lo+l])
						}
					}
				}
			}()
		}
		wg.Wait()
		copy(out, sc.part[0].([]T))
		for w := 1; w < workers; w++ {
			for i, v := range sc.part[w].([]T) {
				out[i] += v
			}
		}
	}
}

func dot[T Float](a, b []T) T {
	switch aa := any(a).(type) {
	case []float32:
		return T(blasImpl.Sdot(len(aa), aa, 1, any(b).([]float32), 1))
	case []float64:
		return T(blasImpl.Ddot(len(aa), aa, 1, any(b).([]float64), 1))
	}
	return 0
}
