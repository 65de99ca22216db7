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
// buffers. In float32 on amd64 with AVX2/FMA all three products (forward, xᵀ·dy, dy·wᵀ) run on
// the assembly kernel of sgemm.go (x is never transposed; w, small, is for dy·wᵀ); otherwise,
// and for matrices smaller than one kernel block, gonum's GEMM is used, except for the weight
// gradient xᵀ·dy (long and thin: M ≫ in, out), computed from transposed copies as blocked long
// dot products in parallel.
func MatMul(x, w *gorgonia.Node) (*gorgonia.Node, error) {
	if x.Dims() != 2 || w.Dims() != 2 || x.Shape()[1] != w.Shape()[0] {
		return nil, fmt.Errorf("matmul: shapes %v and %v", x.Shape(), w.Shape())
	}
	op := newFuncOp("MatMul", 2, productShape, matmulNN[float64], matmulNN[float32])
	op.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) { return matmulGrads(in, g) }
	return apply(op, x, w)
}

// MatMulBias returns x·w + b for x [M, in], w [in, out] and b [out] (added to every row), the
// bias added by the product's kernel (no pass of its own). Its gradients are MatMul's and the
// column sums of the output gradient.
func MatMulBias(x, w, b *gorgonia.Node) (*gorgonia.Node, error) {
	if x.Dims() != 2 || w.Dims() != 2 || b.Dims() != 1 || x.Shape()[1] != w.Shape()[0] || w.Shape()[1] != b.Shape()[0] {
		return nil, fmt.Errorf("matmul with bias: shapes %v, %v and %v", x.Shape(), w.Shape(), b.Shape())
	}
	op := newFuncOp("MatMulBias", 3, productShape, matmulNN[float64], matmulNN[float32])
	op.ranks = []int{2, 2, 1, 2}
	op.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		grads, err := matmulGrads(in, g)
		if err != nil {
			return nil, err
		}
		db, err := ColSum(g)
		return append(grads, db), err
	}
	return apply(op, x, w, b)
}

func productShape(s []tensor.Shape) (tensor.Shape, error) { return tensor.Shape{s[0][0], s[1][1]}, nil }

// matmulGrads returns the gradients of x·w (+ b) for inputs x, w (and b): one op computes dw
// and, in the same pass over the output gradient g (linearGrad32), dx and db, which two more
// ops hand out. The dx op writes nothing itself: dw's op fills its output buffer, unless the
// executor finds that nothing needs dx.
func matmulGrads(in gorgonia.Nodes, g *gorgonia.Node) (gorgonia.Nodes, error) {
	st := &linGrad{}
	st.dx = newFuncOp("MatMulGradX", 2, sameAs(1), noKernel[float64], noKernel[float32])
	st.dx.dead = func() { st.noDX = true }
	st.dx.after = true
	dw := newFuncOp("MatMulGradW", 3, sameAs(1), linGradKernel[float64](st), linGradKernel[float32](st))
	dw.sumsIn = true // a summand of dx's shape, added to dx
	dw.sumShape = func(s []tensor.Shape) tensor.Shape { return s[0] }
	st.dx.fillBy = dw
	dW, err := apply(dw, in[0], in[1], g)
	if err != nil {
		return nil, err
	}
	dX, err := apply(st.dx, dW, in[0])
	if err != nil {
		return nil, err
	}
	if len(in) < 3 {
		return gorgonia.Nodes{dX, dW}, nil
	}
	st.bias = true
	db := newFuncOp("MatMulGradB", 2, sameAs(1), takeOther[float64](&st.db), takeOther[float32](&st.db))
	db.ranks = []int{2, 1, 1}
	db.after = true
	dB, err := apply(db, dW, in[2])
	if err != nil {
		return nil, err
	}
	return gorgonia.Nodes{dX, dW, dB}, nil
}

// linGrad is the state of a product's gradient ops.
type linGrad struct {
	dx     *funcOp // its output buffer receives dx
	noDX   bool    // nothing needs dx
	bias   bool    // db is wanted
	db     any     // []T
	nt, tn tnScratch
	fused  tnBuffers
}

func noKernel[T Float](_ []T, _ [][]T, _ []tensor.Shape) {}

// linGradKernel: inputs x [M, a], w [a, b], g [M, b]; out = dw = xᵀ·g, and into st: dx = g·wᵀ
// and db = Σ rows g.
func linGradKernel[T Float](st *linGrad) kernel[T] {
	return func(dw []T, in [][]T, s []tensor.Shape) {
		x, w, g := in[0], in[1], in[2]
		m, a, b := s[0][0], s[0][1], s[1][1]
		var dx, db []T
		if !st.noDX {
			var z T
			dt := tensor.Float64
			if _, ok := any(z).(float32); ok {
				dt = tensor.Float32
			}
			dx = st.dx.out.get(dt, m, a).Data().([]T)
		}
		if st.bias {
			db = grow[T](st.db, b)
			st.db = db
		}
		var sum []T // a summand the executor folded in (funcOp.sumsIn), added to dx
		if len(in) > 3 {
			sum = in[3]
		}
		if d32, ok := any(dw).([]float32); ok && linearGrad32(any(dx).([]float32), d32, any(db).([]float32),
			any(x).([]float32), any(w).([]float32), any(g).([]float32), any(sum).([]float32), m, a, b, &st.fused) {
			return
		}
		if dx != nil {
			matmulNT[T](&st.nt)(dx, [][]T{g, w}, []tensor.Shape{{m, b}, {a, b}})
			if sum != nil {
				addTo(dx, sum)
			}
		}
		matmulTN[T](&st.tn)(dw, [][]T{x, g}, []tensor.Shape{{m, a}, {m, b}})
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
