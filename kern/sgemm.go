package kern

import "math"

// nr is the width of the block of C a micro-kernel computes; maxRows its largest height.
const nr, maxRows = 16, 12

// microKernel is an assembly kernel computing rows × nr blocks of C (see kern6x16); f calls it
// (a direct call, so slices of stack arrays passed to it stay on the stack). The AVX-512 kernel
// computes any number of columns, cols, in blocks of nr, the last masked; cols is ignored by the
// other.
type microKernel struct {
	name   string
	rows   int
	masked bool
}

func (mk microKernel) f(a []float32, rs, cs int, b []float32, ldb int, c []float32, ldc int, k, acc int, bias []float32, cols int) {
	if mk.masked {
		kern12x16(a, rs, cs, b, ldb, c, ldc, k, acc, bias, cols)
	} else {
		kern6x16(a, rs, cs, b, ldb, c, ldc, k, acc, bias)
	}
}

// micro is the kernel in use (the first of kernels; tests switch it).
var micro = func() microKernel {
	if len(kernels) > 0 {
		return kernels[0]
	}
	return microKernel{}
}()

// blockAt returns where block b of the range [lo, hi) (hi ≥ size) starts, and how many of its
// leading rows (or columns) are not its own: blocks start at lo, lo+size, …, except that the
// last, when the range is not a multiple of size, is moved back to end at hi (overlapping the
// one before it, or rows before lo).
func blockAt(b, size, lo, hi int) (start, skip int) {
	start = min(lo+b*size, hi-size)
	return start, lo + b*size - start
}

// sgemmNN sets C [m, n] = A [m, k] · B [k, n] (+ bias [n] on every row, if not nil; row-major,
// leading dimensions lda, ldb, ldc) on the micro-kernel, row blocks shared between GOMAXPROCS
// workers (see nnRows). It reports false, doing nothing, where no kernel is available or the
// matrix is smaller than one block.
func sgemmNN(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, bias []float32) bool {
	mk := micro
	mr := mk.rows
	if mk.rows == 0 || !haveKernel || m < mr || n < nr || k == 0 {
		return false
	}
	if skipZeroRows {
		if real := zeroSuffix(m, k, a, lda); real < m && real >= mr && finite(b, k, n, ldb) {
			zeroRowsProduct(c[real*ldc:], m-real, n, ldc, bias)
			m = real
		}
	}
	const rowsPer = 96 // rows per chunk of work
	ParallelChunks((m+rowsPer-1)/rowsPer, func(ch int) {
		nnRows(mk, ch*rowsPer, min((ch+1)*rowsPer, m), n, k, a, lda, b, ldb, c, ldc, bias)
	})
	return true
}

// A batch's padding rows come last and are zero through the layers (an edge bucket is about a
// fifth padding: AQSOL r = 8, one epoch, 21.6 % of the edge rows), so sgemmNN leaves the
// trailing rows of A that are all zero to zeroRowsProduct. That is bit for bit what the
// micro-kernels compute for them where B is finite: every sum starts at +0 and each fused
// multiply-add adds a product ±0 (+0 + −0 is +0), then the bias is added.

// zeroSuffix is the number of rows of A [m, k] before its trailing rows of zeros (±0).
func zeroSuffix(m, k int, a []float32, lda int) int {
	for ; m > 0; m-- {
		if !allZero(a[(m-1)*lda : (m-1)*lda+k]) {
			return m
		}
	}
	return 0
}

// allZero reports whether every value of v is ±0: their bits, the sign shifted out, or-ed
// eight at a time.
func allZero(v []float32) bool {
	var or uint32
	i := 0
	for ; i+8 <= len(v); i += 8 {
		w := v[i : i+8 : i+8]
		or |= bits32(w[0]) | bits32(w[1]) | bits32(w[2]) | bits32(w[3]) |
			bits32(w[4]) | bits32(w[5]) | bits32(w[6]) | bits32(w[7])
		if or != 0 {
			return false
		}
	}
	for _, x := range v[i:] {
		or |= bits32(x)
	}
	return or == 0
}

// bits32 is x's bits without its sign, shifted left by one.
func bits32(x float32) uint32 { return math.Float32bits(x) << 1 }

// finite reports whether B [k, n] holds no infinity or NaN (where a zero times it is not
// zero): the largest exponent field of each row, eight values at a time, below all ones.
func finite(b []float32, k, n, ldb int) bool {
	const inf = 0xff << 24 // bits32 of an infinity; a NaN's are larger
	for l := range k {
		row := b[l*ldb : l*ldb+n]
		var hi uint32
		i := 0
		for ; i+8 <= len(row); i += 8 {
			w := row[i : i+8 : i+8]
			hi = max(hi, bits32(w[0]), bits32(w[1]), bits32(w[2]), bits32(w[3]),
				bits32(w[4]), bits32(w[5]), bits32(w[6]), bits32(w[7]))
		}
		for _, x := range row[i:] {
			hi = max(hi, bits32(x))
		}
		if hi >= inf {
			return false
		}
	}
	return true
}

// zeroRowsProduct sets the rows rows of C [·, n] that A's zero rows give: +0 + bias[j] (+0
// without a bias), as the micro-kernels add the bias to a sum of +0.
func zeroRowsProduct(c []float32, rows, n, ldc int, bias []float32) {
	for i := range rows {
		row := c[i*ldc : i*ldc+n]
		if bias == nil {
			clear(row)
			continue
		}
		for j, v := range bias[:n] {
			row[j] = zero32 + v
		}
	}
}

// gradRows is how many leading rows of dy [m, b] LinearGrad32 computes: those before its trailing
// zero rows where the rest is exact without them (dx = +0 there, as nnRows gives where wT is
// finite; dw's and db's terms ±0 where x's rows are finite, adding nothing to sums that are never
// −0), at least mr; m otherwise.
func gradRows(m, a, b int, dx, dw, x, wT, dy []float32, mr int) int {
	real := zeroSuffix(m, b, dy, b)
	if !skipZeroRows || real == m || real < mr || (dx != nil && !finite(wT, b, a, a)) ||
		(dw != nil && !finite(x[real*a:], m-real, a, a)) {
		return m
	}
	return real
}

// skipZeroRows lets sgemmNN, LinearGrad32 and narrowNN leave trailing zero rows out (tests switch
// it off for the reference).
var skipZeroRows = true

// zero32 is +0 in a variable, so that zero32 + v is an addition the compiler keeps (it turns
// −0 into +0).
var zero32 float32

// nnRows sets rows [r0, r1) of C = A·B (+ bias) for r1 ≥ mk.rows and n ≥ nr, in blocks of
// mk.rows × nr; the last block of each dimension overlaps the one before (it is computed into a
// scratch block of which only its own part is copied), so nothing outside the rows is written.
func nnRows(mk microKernel, r0, r1, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, bias []float32) {
	mr := mk.rows
	var tmp [maxRows * nr]float32
	var bj16 []float32
	nbi, nbj := (r1-r0+mr-1)/mr, (n+nr-1)/nr
	for bi := 0; bi < nbi; bi++ {
		i, di := blockAt(bi, mr, r0, r1)
		if mk.masked && di == 0 { // the whole row block in one call
			mk.f(a[i*lda:], lda, 1, b, ldb, c[i*ldc:], ldc, k, 0, bias, n)
			continue
		}
		for bj := 0; bj < nbj; bj++ {
			j, dj, cols := bj*nr, 0, min(nr, n-bj*nr)
			if !mk.masked {
				j, dj = blockAt(bj, nr, 0, n)
				cols = nr
			}
			if bias != nil {
				bj16 = bias[j : j+cols]
			}
			if di == 0 && dj == 0 {
				mk.f(a[i*lda:], lda, 1, b[j:], ldb, c[i*ldc+j:], ldc, k, 0, bj16, cols)
				continue
			}
			mk.f(a[i*lda:], lda, 1, b[j:], ldb, tmp[:], nr, k, 0, bj16, cols)
			for r := di; r < mr; r++ {
				copy(c[(i+r)*ldc+j+dj:(i+r)*ldc+j+cols], tmp[r*nr+dj:r*nr+cols])
			}
		}
	}
}

// tnChunk is how many rows of X and G one pass over the blocks of C reads (they stay in cache).
const tnChunk = 128

// TNBuffers are sgemmTN's reusable buffers: the partial sums (see Parts) and a padded copy of a
// narrow X.
type TNBuffers struct {
	parts [][]float32
	pad   []float32
}

// grow makes n partial-sum buffers of size values (not cleared) and returns them.
func (sc *TNBuffers) grow(n, size int) [][]float32 {
	for len(sc.parts) < n {
		sc.parts = append(sc.parts, nil)
	}
	for p := range sc.parts[:n] {
		if cap(sc.parts[p]) < size {
			sc.parts[p] = make([]float32, size)
		}
		sc.parts[p] = sc.parts[p][:size]
	}
	return sc.parts[:n]
}

// tnLayout is the accumulator layout of Xᵀ·G's blocks for C [m, n]: block (bi, bj) at
// (bi·rows)·ldw + bj·nr, rows of ldw values.
func tnLayout(rows, m, n int) (nbi, nbj, ldw, size int) {
	nbi, nbj = (m+rows-1)/rows, (n+nr-1)/nr
	ldw = nbj * nr
	return nbi, nbj, ldw, nbi * rows * ldw
}

// tnAccum adds rows [p0, p1) of Xᵀ·G to the blocks in acc (tnLayout), tnChunk rows at a time;
// m ≥ mk.rows, n ≥ nr.
func tnAccum(mk microKernel, m, n int, x []float32, ldx int, g []float32, ldg int, acc []float32, p0, p1 int) {
	mr := mk.rows
	nbi, nbj, ldw, _ := tnLayout(mr, m, n)
	for q := p0; q < p1; q += tnChunk {
		kl := min(tnChunk, p1-q)
		for bj := 0; bj < nbj; bj++ {
			j, _ := blockAt(bj, nr, 0, n)
			for bi := 0; bi < nbi; bi++ {
				i, _ := blockAt(bi, mr, 0, m)
				mk.f(x[q*ldx+i:], 1, ldx, g[q*ldg+j:], ldg, acc[bi*mr*ldw+bj*nr:], ldw, kl, 1, nil, nr)
			}
		}
	}
}

// tnReduce sets C = the sum of the accumulators parts (tnLayout).
func tnReduce(mk microKernel, m, n int, c []float32, ldc int, parts [][]float32) {
	mr := mk.rows
	nbi, nbj, ldw, _ := tnLayout(mr, m, n)
	for bi := 0; bi < nbi; bi++ {
		i, di := blockAt(bi, mr, 0, m)
		for bj := 0; bj < nbj; bj++ {
			j, dj := blockAt(bj, nr, 0, n)
			for r := di; r < mr; r++ {
				cr := c[(i+r)*ldc+j+dj : (i+r)*ldc+j+nr]
				off := (bi*mr+r)*ldw + bj*nr + dj
				copy(cr, parts[0][off:off+len(cr)])
				for _, p := range parts[1:] {
					AddTo(cr, p[off:off+len(cr)])
				}
			}
		}
	}
}

// sgemmTN sets C [m, n] = Xᵀ · G for X [k, m] and G [k, n] (row-major, leading dimensions ldx,
// ldg, ldc) without transposing X: the kernel reads X with unit row and ldx column strides. The
// long dimension k is split into partial sums of C's blocks fixed by k (Parts), computed in
// parallel and added in order at the end. It reports false, doing nothing, where the
// kernel is unavailable or n < nr.
func sgemmTN(m, n, k int, x []float32, ldx int, g []float32, ldg int, c []float32, ldc int, sc *TNBuffers) bool {
	mk := micro
	mr := mk.rows
	if mk.rows == 0 || !haveKernel || m < 1 || n < nr {
		return false
	}
	if m < mr {
		// Fewer than mr columns of X (a narrow input): run on a copy padded with zero columns.
		pad := Grow[float32](sc.pad, k*mr+mr*n)
		sc.pad = pad
		xp, cp := pad[:k*mr], pad[k*mr:]
		for p := 0; p < k; p++ {
			copy(xp[p*mr:p*mr+m], x[p*ldx:p*ldx+m])
			clear(xp[p*mr+m : (p+1)*mr])
		}
		sgemmTN(mr, n, k, xp, mr, g, ldg, cp, n, sc)
		for i := 0; i < m; i++ {
			copy(c[i*ldc:i*ldc+n], cp[i*n:(i+1)*n])
		}
		return true
	}
	_, _, _, size := tnLayout(mr, m, n)
	const rowsPer = 4 * tnChunk
	nc := (k + rowsPer - 1) / rowsPer
	np := Parts(nc)
	parts := sc.grow(np, size)
	ParallelChunks(np, func(p int) {
		lo, hi := PartChunks(p, np, nc)
		clear(parts[p])
		tnAccum(mk, m, n, x, ldx, g, ldg, parts[p], lo*rowsPer, min(hi*rowsPer, k))
	})
	tnReduce(mk, m, n, c, ldc, parts)
	return true
}

// linChunk is the number of rows of the fused linear gradient's passes (see LinearGrad32).
const linChunk = 240

// LinearGrad32 computes the gradients of y = x·w (+ b) from dy in one pass over dy, a chunk of
// linChunk rows at a time (in cache for all three): dx = dy·wᵀ (+ sum, unless nil), dw = xᵀ·dy
// and db = Σ rows dy, each unless nil; x [m, a], w [a, b] (x may be nil where dw is, w where
// dx is). The chunks are grouped into
// partial dw and db sums fixed by m (Parts), computed in parallel and added in order. It reports false, doing nothing, where there
// is no kernel or a dimension is smaller than a block.
func LinearGrad32(dx, dw, db, x, w, dy, sum []float32, m, a, b int, sc *TNBuffers) bool {
	mk := micro
	mr := mk.rows
	if mk.rows == 0 || !haveKernel || m < mr || a < max(mr, nr) || b < nr {
		return false
	}
	var wT []float32
	if dx != nil { // (w is only read for dx: nil where dx is)
		wT = Grow[float32](sc.pad, a*b)
		sc.pad = wT
		Transpose(wT, w, a, b)
	}
	real := gradRows(m, a, b, dx, dw, x, wT, dy, mr)
	_, _, _, size := tnLayout(mr, a, b)
	nc := (m + linChunk - 1) / linChunk
	np := Parts(nc)
	parts := sc.grow(np, size+b)
	ParallelChunks(np, func(p int) {
		acc := parts[p]
		clear(acc)
		lo, hi := PartChunks(p, np, nc)
		for c := lo; c < hi; c++ {
			r0, r1 := c*linChunk, min((c+1)*linChunk, m)
			live := max(r0, min(r1, real)) // rows [live, r1) are dy's trailing zero rows
			if dx != nil {
				if live > r0 {
					nnRows(mk, r0, live, a, b, dy, b, wT, a, dx, a, nil)
				}
				clear(dx[live*a : r1*a]) // what nnRows gives a zero row of dy: +0
				if sum != nil {
					AddTo(dx[r0*a:r1*a], sum[r0*a:r1*a])
				}
			}
			if r1 = live; r1 == r0 {
				continue // dy's zero rows add ±0 to dw and db: nothing
			}
			if dw != nil { // (x is only read for dw: nil where dw is)
				tnAccum(mk, a, b, x, a, dy, b, acc[:size], r0, r1)
			}
			if db != nil {
				SumRows(acc[size:size+b], dy[r0*b:], r1-r0, b)
			}
		}
	})
	if dw != nil {
		tnReduce(mk, a, b, dw, b, parts)
	}
	if db != nil {
		copy(db, parts[0][size:size+b])
		for _, p := range parts[1:] {
			AddTo(db, p[size:size+b])
		}
	}
	return true
}
