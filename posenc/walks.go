// Package posenc computes the positional encodings of the paper: hop distances and walk counts
// between ordered pairs of nodes (the shortest-path and adjacency-power edge encodings), the
// Laplacian eigenvector node encoding with its training-time sign flips, and the random-walk
// node encoding (return probabilities of the simple random walk).
package posenc

import (
	"fmt"
	"math"
	"math/bits"
)

// Unreached marks a pair of nodes with no directed path of at most R steps.
const Unreached = -1

// Walks holds, for one graph, which nodes each node reaches within R directed steps, the hop
// distance of every reached pair, and optionally the walk counts (A^k)[u][v] for k = 1..R.
//
// Reachability is computed on bitsets, all sources at once: the set reached from u within k
// steps is u itself plus the union of the sets its out-neighbours reach within k−1 steps, one
// word operation per edge and 64 nodes. Walk counts are dense rows with the same recurrence,
// (A^k)[u][·] = Σ_{u→x} (A^{k−1})[x][·]. Both are branch-free inner loops, which matters more
// than asymptotics on graphs of a few dozen nodes.
//
// A Walks value is a reusable workspace that stops allocating once its buffers are large enough.
// It is not safe for concurrent use; keep one per goroutine.
type Walks struct {
	N, R   int
	Counts bool // whether Count is valid

	// SkipDist, set before Reset, leaves distances uncomputed (Dist and DistRow are then
	// invalid) when only reachability and walk counts are needed.
	SkipDist bool

	words      int      // 64-bit words per bitset row
	reach      []uint64 // (R+1) levels × N rows × words: nodes within k steps of u
	levels     int      // levels computed (R+1, or fewer when reachability stopped growing)
	dist       []int32  // N×N hop distances, valid for reached pairs only
	count      []float64
	start, nbr []int32 // out-neighbours (CSR)
	eid, stamp []int32 // input edge index of each CSR entry; duplicate check
}

// Reset computes reachability, distances and (with counts) walk counts for the graph with n
// nodes and directed edges src[m]→dst[m]. An edge outside [0,n), a repeated directed edge or
// r < 1 is an error, and so is, with counts, a walk count that float32 cannot hold (see
// CountOverflowError).
func (w *Walks) Reset(n int, src, dst []int32, r int, counts bool) error {
	if r < 1 {
		return fmt.Errorf("walks: hop radius %d: must be at least 1", r)
	}
	if n < 0 {
		return fmt.Errorf("walks: negative node count %d", n)
	}
	if len(src) != len(dst) {
		return fmt.Errorf("walks: %d edge sources but %d destinations", len(src), len(dst))
	}
	w.N, w.R, w.Counts = n, r, counts
	if err := w.buildCSR(n, src, dst); err != nil {
		return err
	}
	w.reachability()
	if !w.SkipDist {
		w.distances()
	}
	if counts {
		return w.walkCounts()
	}
	return nil
}

// buildCSR sorts the edges by source (counting sort) and rejects bad or repeated edges.
func (w *Walks) buildCSR(n int, src, dst []int32) error {
	w.start = fitInt32(w.start, n+2)
	clear(w.start)
	for m := range src {
		s, d := src[m], dst[m]
		if s < 0 || int(s) >= n || d < 0 || int(d) >= n {
			return fmt.Errorf("walks: edge %d (%d→%d) points outside the %d nodes", m, s, d, n)
		}
		w.start[s+2]++
	}
	for u := 2; u < n+2; u++ {
		w.start[u] += w.start[u-1]
	}
	w.nbr, w.eid = fitInt32(w.nbr, len(src)), fitInt32(w.eid, len(src))
	for m := range src { // start[s+1] is the fill pointer of s
		s := src[m] + 1
		k := w.start[s]
		w.nbr[k], w.eid[k] = dst[m], int32(m)
		w.start[s]++
	}
	w.start = w.start[:n+1]
	w.stamp = fitInt32(w.stamp, n)
	for v := range w.stamp {
		w.stamp[v] = -1
	}
	for u := 0; u < n; u++ {
		for k := w.start[u]; k < w.start[u+1]; k++ {
			v := w.nbr[k]
			if w.stamp[v] == int32(u) {
				return fmt.Errorf("walks: two edges join %d→%d (edge %d is a repeat)", u, v, w.eid[k])
			}
			w.stamp[v] = int32(u)
		}
	}
	return nil
}

// reachability fills the bitset levels k = 0..R, stopping early once a level adds nothing
// (every later level would equal it).
func (w *Walks) reachability() {
	n, W := w.N, (w.N+63)/64
	w.words = W
	rowLen := n * W
	// Distances never exceed n−1, so at most n levels can differ.
	maxLevel := min(w.R, max(n-1, 1))
	w.reach = fitUint64(w.reach, (maxLevel+1)*rowLen)
	lvl0 := w.reach[:rowLen]
	clear(lvl0)
	for u := 0; u < n; u++ {
		lvl0[u*W+u/64] = 1 << (u % 64)
	}
	w.levels = 1
	for k := 1; k <= maxLevel; k++ {
		prev := w.reach[(k-1)*rowLen : k*rowLen]
		cur := w.reach[k*rowLen : (k+1)*rowLen]
		copy(cur, prev)
		grew := uint64(0)
		for u := 0; u < n; u++ {
			row := cur[u*W : (u+1)*W]
			for _, x := range w.nbr[w.start[u]:w.start[u+1]] {
				from := prev[int(x)*W : int(x+1)*W]
				for i := range row {
					row[i] |= from[i]
				}
			}
			old := prev[u*W : (u+1)*W]
			for i := range row {
				grew |= row[i] &^ old[i]
			}
		}
		w.levels = k + 1
		if grew == 0 {
			break
		}
	}
}

// distances sets dist[u][v] = k for the nodes that level k adds to u's reach.
func (w *Walks) distances() {
	n, W := w.N, w.words
	rowLen := n * W
	w.dist = fitInt32(w.dist, n*n)
	for u := 0; u < n; u++ {
		w.dist[u*n+u] = 0
	}
	for k := 1; k < w.levels; k++ {
		prev := w.reach[(k-1)*rowLen : k*rowLen]
		cur := w.reach[k*rowLen : (k+1)*rowLen]
		for u := 0; u < n; u++ {
			d := w.dist[u*n : (u+1)*n]
			for i := 0; i < W; i++ {
				for added := cur[u*W+i] &^ prev[u*W+i]; added != 0; added &= added - 1 {
					d[i*64+bits.TrailingZeros64(added)] = int32(k)
				}
			}
		}
	}
}

// MaxCount is the largest walk count the adjacency-power encoding can carry: the encoding is
// stored as float32 (data.Graph.Adj), and a larger count would become +Inf there.
const MaxCount = math.MaxFloat32

// CountOverflowError is Reset's error when a walk count of length K, the first length whose
// counts exceed MaxCount, would make the encoding at radius R (which holds lengths 1…R) not
// finite. K−1 is the largest radius whose encoding is finite on this graph.
type CountOverflowError struct {
	R, K int
	Peak float64 // the largest count of length K (may be +Inf)
}

func (e *CountOverflowError) Error() string {
	return fmt.Sprintf("walks: adjacency-power encoding at rewiring radius r = %d (dataset.r): walks of length %d number up to %.3g, more than float32, which stores the encoding, can hold (%.4g); on this graph r must be at most %d",
		e.R, e.K, e.Peak, float64(MaxCount), e.K-1)
}

// walkCounts fills the walk counts (A^k)[u][·], k = 1..R, as R consecutive N×N row-major
// matrices. Each row is a sum of whole rows of the previous level: dense, contiguous and
// branch-free, which on graphs of a few dozen nodes beats visiting only the nonzero entries.
// The table grows a level at a time, so a radius whose counts overflow (CountOverflowError) is
// refused at the first level past MaxCount without first allocating all R levels.
func (w *Walks) walkCounts() error {
	n, R := w.N, w.R
	nn := n * n
	w.count = fitFloat64(w.count, nn)
	first := w.count[:nn]
	clear(first)
	for u := 0; u < n; u++ {
		for _, x := range w.nbr[w.start[u]:w.start[u+1]] {
			first[u*n+int(x)] = 1
		}
	}
	bound, deg := 1.0, float64(w.maxOutDegree()) // bound ≥ every count of the last level
	for k := 2; k <= R; k++ {
		w.count = growFloat64(w.count, k*nn)
		prev := w.count[(k-2)*nn : (k-1)*nn]
		cur := w.count[(k-1)*nn : k*nn]
		clear(cur)
		for u := 0; u < n; u++ {
			row := cur[u*n : (u+1)*n]
			for _, x := range w.nbr[w.start[u]:w.start[u+1]] {
				addTo(row, prev[int(x)*n:int(x+1)*n])
			}
		}
		// Each count of length k sums at most Δ counts of length k−1 (Δ the largest out-degree),
		// so bound·Δ bounds this level; only when that bound passes MaxCount are the counts
		// themselves scanned (never on the paper's graphs and radii).
		if bound *= deg; bound > MaxCount {
			if bound = maxOf(cur); bound > MaxCount {
				return &CountOverflowError{R: R, K: k, Peak: bound}
			}
		}
	}
	return nil
}

// maxOutDegree is the largest out-degree of the graph (0 without nodes).
func (w *Walks) maxOutDegree() int32 {
	d := int32(0)
	for u := 0; u < w.N; u++ {
		d = max(d, w.start[u+1]-w.start[u])
	}
	return d
}

// maxOf is the largest element of xs (−Inf for none).
func maxOf(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// addTo adds src to dst elementwise (equal lengths).
func addTo(dst, src []float64) {
	dst = dst[:len(src)]
	i := 0
	for ; i+4 <= len(src); i += 4 {
		dst[i] += src[i]
		dst[i+1] += src[i+1]
		dst[i+2] += src[i+2]
		dst[i+3] += src[i+3]
	}
	for ; i < len(src); i++ {
		dst[i] += src[i]
	}
}

// Reach returns the bitset of nodes within R steps of u (bit v of word v/64).
func (w *Walks) Reach(u int) []uint64 {
	lvl := w.levels - 1
	W := w.words
	base := lvl*w.N*W + u*W
	return w.reach[base : base+W]
}

// Reached reports whether v is within R steps of u.
func (w *Walks) Reached(u, v int) bool {
	return w.Reach(u)[v/64]&(1<<(v%64)) != 0
}

// Dist returns the hop distance from u to v, or Unreached.
func (w *Walks) Dist(u, v int) int32 {
	if !w.Reached(u, v) {
		return Unreached
	}
	return w.dist[u*w.N+v]
}

// DistRow returns the distances from u; entries of unreached nodes are meaningless (check
// Reach).
func (w *Walks) DistRow(u int) []int32 { return w.dist[u*w.N : (u+1)*w.N] }

// Count returns (A^k)[u][v] for 1 ≤ k ≤ R; Reset must have asked for counts.
func (w *Walks) Count(k, u, v int) float64 { return w.count[(k-1)*w.N*w.N+u*w.N+v] }

// CountTable returns the walk counts as R consecutive N×N row-major matrices.
func (w *Walks) CountTable() []float64 { return w.count }

// OutEdges returns the out-neighbours of u and the indices of the input edges to them.
func (w *Walks) OutEdges(u int) (nbr, edge []int32) {
	a, b := w.start[u], w.start[u+1]
	return w.nbr[a:b], w.eid[a:b]
}

func fitInt32(b []int32, n int) []int32 {
	if cap(b) < n {
		return make([]int32, n)
	}
	return b[:n]
}

func fitUint64(b []uint64, n int) []uint64 {
	if cap(b) < n {
		return make([]uint64, n)
	}
	return b[:n]
}

// growFloat64 extends b to length n, keeping its elements (doubling the capacity when it must
// reallocate).
func growFloat64(b []float64, n int) []float64 {
	if cap(b) >= n {
		return b[:n]
	}
	out := make([]float64, n, max(n, 2*cap(b)))
	copy(out, b)
	return out
}

func fitFloat64(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}
