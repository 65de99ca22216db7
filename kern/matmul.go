package kern

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

var blasImpl gonum.Implementation

// MatMulNN sets out [m, n] = a [m, k] · b [k, n] (+ bias [n] on every row, if not nil): on
// the assembly micro-kernel in float32 where there is one and the matrix holds a block, else
// gonum's GEMM.
func MatMulNN[T Float](out, a, b, bias []T, m, k, n int) {
	o, is32 := any(out).([]float32)
	switch {
	case is32 && sgemmNN(m, n, k, any(a).([]float32), k, any(b).([]float32), n, o, n, any(bias).([]float32)):
		return
	case is32 && n < nr:
		narrowNN(o, any(a).([]float32), any(b).([]float32), m, k, n)
	default:
		gemm(blas.NoTrans, blas.NoTrans, m, n, k, a, k, b, n, out, n)
	}
	if bias != nil {
		ParallelRange(m, n, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				AddTo(out[r*n:(r+1)*n], bias)
			}
		})
	}
}

// narrowNN sets out [m, n] = a [m, k] · b [k, n] for a narrow b (n < nr, below the
// micro-kernel's blocks): bit for bit gonum's float32 GEMM, which served these products before
// (each out[i, j] summed from +0 over l in order, a[i, l]·b[l, j] rounded, then added, the terms
// of a[i, l] = 0 left out), without its per-term calls; rows in parallel chunks, on vNarrow8
// (AVX2) up to 8 columns.
func narrowNN(out, a, b []float32, m, k, n int) {
	if skipZeroRows && k > 0 { // a's trailing zero rows (a batch's padding): every term left out, +0
		real := zeroSuffix(m, k, a, k)
		clear(out[real*n : m*n])
		m = real
	}
	if haveKernel && n <= 8 && k > 0 {
		b8 := make([]float32, k*8) // b's rows padded to 8 columns with zeros
		for l := range k {
			copy(b8[l*8:l*8+n], b[l*n:(l+1)*n])
		}
		ParallelRange(m, k*8, func(lo, hi int) { vNarrow8(out[lo*n:hi*n], a[lo*k:hi*k], b8, k, n) })
		return
	}
	ParallelRange(m, k*n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			c := out[i*n : (i+1)*n]
			clear(c)
			for l, v := range a[i*k : (i+1)*k] {
				if v == 0 {
					continue
				}
				bl := b[l*n : (l+1)*n]
				for j := range c {
					c[j] += float32(v * bl[j]) // (the conversion keeps the product rounded: no FMA on any GOAMD64)
				}
			}
		}
	})
}

// MatMulNT sets out [m, k] = g [m, n] · wᵀ for w [k, n]; with the float32 kernel, w is
// transposed into sc first; otherwise every entry is a dot product.
func MatMulNT[T Float](sc *Scratch, out, g, w []T, m, n, k int) {
	if o, ok := any(out).([]float32); ok && haveKernel && m >= micro.rows && k >= nr && n > 0 {
		wT := Grow[float32](sc.wT, k*n)
		sc.wT = wT
		Transpose(wT, any(w).([]float32), k, n)
		sgemmNN(m, k, n, any(g).([]float32), n, wT, k, o, k, nil)
		return
	}
	// Row by row with dot, not gonum's GEMM, whose transposed product sums in an order that
	// depends on the operands' addresses (see dot).
	ParallelRange(m, k*n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			gi := g[i*n : (i+1)*n]
			for j := range k {
				out[i*k+j] = dot(gi, w[j*n:(j+1)*n])
			}
		}
	})
}

func gemm[T Float](ta, tb blas.Transpose, m, n, k int, a []T, lda int, b []T, ldb int, c []T, ldc int) {
	switch cc := any(c).(type) {
	case []float32:
		blasImpl.Sgemm(ta, tb, m, n, k, 1, any(a).([]float32), lda, any(b).([]float32), ldb, 0, cc, ldc)
	case []float64:
		blasImpl.Dgemm(ta, tb, m, n, k, 1, any(a).([]float64), lda, any(b).([]float64), ldb, 0, cc, ldc)
	}
}

// Scratch holds the transposed w of MatMulNT and the per-worker partial sums of MatMulTN,
// reused between calls.
type Scratch struct {
	wT   any // MatMulNT's transposed w
	part []any
	tn   TNBuffers
}

// Grow returns buf (a []T, or nil) if it has room for n values, cut to n, and a new slice
// otherwise. Room is its capacity: a buffer cut shorter by one call serves a longer one after.
func Grow[T Float](buf any, n int) []T {
	if b, ok := buf.([]T); ok && cap(b) >= n {
		return b[:n]
	}
	return make([]T, n)
}

// Transpose writes the [rows, cols] matrix src transposed into dst [cols, rows].
func Transpose[T Float](dst, src []T, rows, cols int) {
	for r := 0; r < rows; r++ {
		for c, v := range src[r*cols : (r+1)*cols] {
			dst[c*rows+r] = v
		}
	}
}

// MatMulTN sets out [k, n] = xᵀ·g for x [m, k], g [m, n]. In float32 the kernel reads x
// transposed in place where n ≥ nr; otherwise out[i, j] is, for each block of tnBlock rows,
// the dot of column i of x with column j of g summed as dot sums (row r of the block into
// partial sum r mod 4, the rows past the last multiple of 4 into the first), the blocks
// grouped into partial sums fixed by m (Parts) and added in order. The columns are read row by
// row (tnRows), not transposed.
func MatMulTN[T Float](sc *Scratch, out, x, g []T, m, k, n int) {
	if o, ok := any(out).([]float32); ok && sgemmTN(k, n, m, any(x).([]float32), k, any(g).([]float32), n, o, n, &sc.tn) {
		return
	}
	nb := (m + tnBlock - 1) / tnBlock
	np := Parts(nb)
	for len(sc.part) < np {
		sc.part = append(sc.part, nil)
	}
	for p := range np {
		sc.part[p] = Grow[T](sc.part[p], 5*k*n) // the part's sum, then four partial sums
	}
	ParallelChunks(np, func(p int) {
		buf := sc.part[p].([]T)
		acc, s := buf[:k*n], buf[k*n:]
		clear(acc)
		lo, hi := PartChunks(p, np, nb)
		for b := lo; b < hi; b++ {
			r0 := b * tnBlock
			tnRows(acc, s, x, g, r0, min(tnBlock, m-r0), k, n)
		}
	})
	copy(out, sc.part[0].([]T)[:k*n])
	for p := 1; p < np; p++ {
		AddTo(out, sc.part[p].([]T)[:k*n])
	}
}

// tnBlock is the number of rows of MatMulTN's dot products.
const tnBlock = 2048

// tnRows adds to acc [k, n] the block of l rows from r0 of xᵀ·g as dot computes each value
// from the block's columns: s (4·n·k values of scratch) holds the four partial sums, laid out
// [4][n][k], row r0+r added to sum r mod 4 (the rows from l &^ 3 on to sum 0), each product
// rounded before it is added (AxpyTo: c·x[i] rounded, then added); then
// acc[i, j] += (s0 + s1) + (s2 + s3).
func tnRows[T Float](acc, s, x, g []T, r0, l, k, n int) {
	kn := k * n
	clear(s[:4*kn])
	for r := 0; r < l; r++ {
		q := r & 3
		if r >= l&^3 {
			q = 0
		}
		sq := s[q*kn : (q+1)*kn]
		xr := x[(r0+r)*k : (r0+r+1)*k]
		for j, gv := range g[(r0+r)*n : (r0+r+1)*n] {
			AxpyTo(sq[j*k:(j+1)*k], xr, gv)
		}
	}
	for i := 0; i < k; i++ {
		for j := 0; j < n; j++ {
			acc[i*n+j] += (s[j*k+i] + s[kn+j*k+i]) + (s[2*kn+j*k+i] + s[3*kn+j*k+i])
		}
	}
}

// dot is Σ a[i]·b[i] in a fixed order: four interleaved partial sums (element i into sum i mod
// 4) added as (s0 + s1) + (s2 + s3). The order depends on the length only, never on where the
// slices lie in memory (gonum's Sdot/Ddot align their vector loop to the address, so that the
// same values at other addresses summed differently), and the products are rounded before they
// are added (no fused multiply-add).
func dot[T Float](a, b []T) T {
	b = b[:len(a)]
	var s0, s1, s2, s3 T
	n := len(a) &^ 3
	for i := 0; i < n; i += 4 {
		s0 += T(a[i] * b[i])
		s1 += T(a[i+1] * b[i+1])
		s2 += T(a[i+2] * b[i+2])
		s3 += T(a[i+3] * b[i+3])
	}
	for i := n; i < len(a); i++ {
		s0 += T(a[i] * b[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// ProductGrads computes the gradients of y = x·w (+ b) from g [m, b]: dx = g·wᵀ (+ sum), dw =
// xᵀ·g and db = Σ rows g, each unless nil (x may be nil where dw is, w where dx is): one pass
// over g in float32 where LinearGrad32 applies, else MatMulNT, MatMulTN and ColSum.
func ProductGrads[T Float](sc *Scratch, dx, dw, db, x, w, g, sum []T, m, a, b int) {
	if d32, ok := any(dx).([]float32); ok && LinearGrad32(d32, any(dw).([]float32), any(db).([]float32),
		any(x).([]float32), any(w).([]float32), any(g).([]float32), any(sum).([]float32), m, a, b, sc.TN()) {
		return
	}
	if dx != nil {
		MatMulNT(sc, dx, g, w, m, b, a)
		if sum != nil {
			AddTo(dx, sum)
		}
	}
	if dw != nil {
		MatMulTN(sc, dw, x, g, m, a, b)
	}
	if db != nil {
		ColSum(db, g)
	}
}
