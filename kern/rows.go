package kern

import "math"

// Float is the element type every kernel supports.
type Float interface{ ~float32 | ~float64 }

// GatherRows is the CPU kernel of Gather: dst[i,:] = w[i]·src[idx[i],:] (zero where idx[i] < 0).
func GatherRows[T Float](dst, src []T, cols int, idx []int32, w []float64) {
	ParallelRange(len(idx), cols, func(lo, hi int) {
		var ws []float64
		if w != nil {
			ws = w[lo:hi]
		}
		gatherRows(dst[lo*cols:hi*cols], src, cols, idx[lo:hi], ws)
	})
}

func gatherRows[T Float](dst, src []T, cols int, idx []int32, w []float64) {
	for i, j := range idx {
		d := dst[i*cols : (i+1)*cols]
		if j < 0 {
			clear(d)
			continue
		}
		s := src[int(j)*cols : (int(j)+1)*cols]
		if w == nil {
			copy(d, s)
			continue
		}
		c := T(w[i])
		for k := range d {
			d[k] = c * s[k]
		}
	}
}

// ScatterAddRows is the CPU kernel of ScatterAdd: dst = 0, then dst[idx[i],:] += w[i]·src[i,:].
func ScatterAddRows[T Float](dst, src []T, cols int, idx []int32, w []float64) {
	ParallelCols(cols, len(idx), func(c0, c1 int) { scatterAddCols(dst, src, cols, idx, w, c0, c1) })
}

// scatterAddCols does columns [c0, c1) of ScatterAddRows.
func scatterAddCols[T Float](dst, src []T, cols int, idx []int32, w []float64, c0, c1 int) {
	for r := 0; r < len(dst)/cols; r++ {
		clear(dst[r*cols+c0 : r*cols+c1])
	}
	for i, j := range idx {
		if j < 0 {
			continue
		}
		d := dst[int(j)*cols+c0 : int(j)*cols+c1]
		s := src[i*cols+c0 : i*cols+c1]
		if w == nil {
			AddTo(d, s)
			continue
		}
		c := T(w[i])
		for k := range d {
			d[k] += c * s[k]
		}
	}
}

// Segments lists edges grouped by a node: those of node v are edge[start[v]:start[v+1]], in
// increasing order.
type Segments struct {
	start, edge, next []int32
}

// Group fills s with the real edges k, grouped by key[k] (a counting sort; n keys): those with
// key[k] ≥ 0 and, where also is not nil, also[k] ≥ 0 (a padding edge has −1 at both ends).
func (s *Segments) Group(key []int32, n int, also []int32) {
	if len(s.start) != n+1 {
		s.start, s.next = make([]int32, n+1), make([]int32, n)
	}
	if also == nil {
		also = key
	}
	also = also[:len(key)]
	clear(s.start)
	for k, v := range key {
		if realEdge(v, also[k]) {
			s.start[v+1]++
		}
	}
	for v := 0; v < n; v++ {
		s.start[v+1] += s.start[v]
	}
	if total := int(s.start[n]); cap(s.edge) < total {
		s.edge = make([]int32, total)
	} else {
		s.edge = s.edge[:total]
	}
	copy(s.next, s.start[:n])
	for k, v := range key {
		if realEdge(v, also[k]) {
			s.edge[s.next[v]] = int32(k)
			s.next[v]++
		}
	}
}

// realEdge reports whether an edge with these two ends is real: a padding edge has −1 at its ends.
func realEdge(a, b int32) bool { return a >= 0 && b >= 0 }

// Of returns node v's edges.
func (s *Segments) Of(v int) []int32 { return s.edge[s.start[v]:s.start[v+1]] }

// SegmentSoftmaxRows is the CPU kernel of SegmentSoftmax; acc is scratch of nodes×cols.
func SegmentSoftmaxRows[T Float](dst, src []T, cols int, seg []int32, acc []float64) {
	for i := range acc {
		acc[i] = math.Inf(-1)
	}
	for m, t := range seg {
		if t < 0 {
			continue
		}
		a := acc[int(t)*cols : (int(t)+1)*cols]
		for k, v := range src[m*cols : (m+1)*cols] {
			a[k] = max(a[k], float64(v))
		}
	}
	// d = exp(src − the segment's max), the exponentials through Exps a block of rows at a time
	var block [expBlock]float64
	buf, rows := expRows(&block, cols)
	for m0 := 0; m0 < len(seg); m0 += rows {
		m1 := min(m0+rows, len(seg))
		b := buf[:(m1-m0)*cols]
		for m := m0; m < m1; m++ {
			o, t := b[(m-m0)*cols:(m-m0+1)*cols], int(seg[m])
			if t < 0 {
				clear(o)
				continue
			}
			a := acc[t*cols : (t+1)*cols]
			for k, v := range src[m*cols : (m+1)*cols] {
				o[k] = float64(v) - a[k]
			}
		}
		Exps(b, b)
		for m := m0; m < m1; m++ {
			d := dst[m*cols : (m+1)*cols]
			if seg[m] < 0 {
				clear(d)
				continue
			}
			for k, v := range b[(m-m0)*cols : (m-m0+1)*cols] {
				d[k] = T(v)
			}
		}
	}
	clear(acc)
	for m, t := range seg {
		if t < 0 {
			continue
		}
		a := acc[int(t)*cols : (int(t)+1)*cols]
		for k, v := range dst[m*cols : (m+1)*cols] {
			a[k] += float64(v)
		}
	}
	for m, t := range seg {
		if t < 0 {
			continue
		}
		a := acc[int(t)*cols : (int(t)+1)*cols]
		d := dst[m*cols : (m+1)*cols]
		for k := range d {
			d[k] = T(float64(d[k]) / a[k])
		}
	}
}

// SegmentSoftmaxGradRows is the gradient of SegmentSoftmaxRows: from its output y and the
// output gradient dy, dx[m] = y[m] ⊙ (dy[m] − Σ_{m' in m's segment} y[m'] ⊙ dy[m']); acc is
// scratch of nodes×cols.
func SegmentSoftmaxGradRows[T Float](dx, y, dy []T, cols int, seg []int32, acc []float64) {
	clear(acc)
	for m, t := range seg {
		if t < 0 {
			continue
		}
		a := acc[int(t)*cols : (int(t)+1)*cols]
		for k := range a {
			a[k] += float64(y[m*cols+k]) * float64(dy[m*cols+k])
		}
	}
	for m, t := range seg {
		d := dx[m*cols : (m+1)*cols]
		if t < 0 {
			clear(d)
			continue
		}
		a := acc[int(t)*cols : (int(t)+1)*cols]
		for k := range d {
			d[k] = T(float64(y[m*cols+k]) * (float64(dy[m*cols+k]) - a[k]))
		}
	}
}

// AddBias sets dst = x + b with b ([cols]) added to every row of x.
func AddBias[T Float](dst, x, b []T) {
	cols := len(b)
	ParallelRange(len(x)/cols, cols, func(lo, hi int) {
		for r := lo * cols; r < hi*cols; r += cols {
			Add2(dst[r:r+cols], x[r:r+cols], b)
		}
	})
}

// ColSum sets dst ([cols]) to the column sums of x ([rows, cols]).
func ColSum[T Float](dst, x []T) {
	cols := len(dst)
	if cols == 0 {
		return
	}
	ParallelCols(cols, len(x)/cols, func(c0, c1 int) {
		clear(dst[c0:c1])
		SumRows(dst[c0:c1], x[c0:], len(x)/cols, cols)
	})
}

// EdgeSum sets out [M, d] = e + hs[src] + ht[dst] row by row (a -1 entry adds nothing), in
// parallel over the edges.
func EdgeSum[T Float](out, e, hs, ht []T, src, dst []int32, d int) {
	ParallelRange(len(src), d, func(lo, hi int) {
		for m := lo; m < hi; m++ {
			o, em := out[m*d:(m+1)*d], e[m*d:(m+1)*d]
			s, t := int(src[m]), int(dst[m])
			switch {
			case s >= 0 && t >= 0:
				Add3(o, em, hs[s*d:(s+1)*d], ht[t*d:(t+1)*d])
			case s >= 0:
				Add2(o, em, hs[s*d:(s+1)*d])
			case t >= 0:
				Add2(o, em, ht[t*d:(t+1)*d])
			default:
				copy(o, em)
			}
		}
	})
}
