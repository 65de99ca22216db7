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
	op := newFuncOp("MatMul", 2, func(s []tensor.Shape) (tensor.Shape, error) {
		return tensor.Shape{s[0][0], s[1][1]}, nil
	}, matmulNN[float64], matmulNN[float32])
	op.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		wT := &tnScratch{}
		dx, err := apply(newFuncOp("MatMulGradX", 2, func(s []tensor.Shape) (tensor.Shape, error) {
			return tensor.Shape{s[0][0], s[1][0]}, nil
		}, matmulNT[float64](wT), matmulNT[float32](wT)), g, in[1])
		if err != nil {
			return nil, err
		}
		sc := &tnScratch{}
		dw, err := apply(newFuncOp("MatMulGradW", 2, func(s []tensor.Shape) (tensor.Shape, error) {
			return tensor.Shape{s[0][1], s[1][1]}, nil
		}, matmulTN[float64](sc), matmulTN[float32](sc)), in[0], g)
		if err != nil {
			return nil, err
		}
		return gorgonia.Nodes{dx, dw}, nil
	}
	return apply(op, x, w)
}

// matmulNN: out [M, n] = a [M, k] · b [k, n].
func matmulNN[T Float](out []T, in [][]T, s []tensor.Shape) {
	m, k, n := s[0][0], s[0][1], s[1][1]
	if o, ok := any(out).([]float32); ok && sgemmNN(m, n, k, any(in[0]).([]float32), k, any(in[1]).([]float32), n, o, n) {
		return
	}
	gemm(blas.NoTrans, blas.NoTrans, m, n, k, in[0], k, in[1], n, out, n)
}

// matmulNT: out [M, k] = g [M, n] · wᵀ for w [k, n]; with the float32 kernel, w is transposed
// into scratch first.
func matmulNT[T Float](sc *tnScratch) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) {
		m, n, k := s[0][0], s[0][1], s[1][0]
		if o, ok := any(out).([]float32); ok && haveKernel && m >= mr && k >= nr && n > 0 {
			wT := grow[float32](sc.xT, k*n)
			sc.xT = wT
			transposeInto(wT, any(in[1]).([]float32), k, n)
			sgemmNN(m, k, n, any(in[0]).([]float32), n, wT, k, o, k)
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
