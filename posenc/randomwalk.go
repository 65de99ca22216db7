package posenc

import "fmt"

// rwBlock is how many walk sources RandomWalk follows at once: each node then holds a row of
// rwBlock probabilities, so that an edge's update is one contiguous scaled add, and the
// workspace stays at 2·n·rwBlock floats however large the graph.
const rwBlock = 64

// RandomWalk computes the random-walk structural encoding of docs/protocol.md §"Random-walk
// encoding": for each node i, the probabilities (M^t)_ii, t = 1..k, that the simple random walk
// started at i is back at i after t steps, where M = D⁻¹A is the row-normalised adjacency matrix
// (A_uv = 1 iff the graph has the edge u→v, taken as given, so directed graphs walk along their
// edges; D the out-degrees). A node without out-edges has a zero row of M: a walk that reaches it
// stops, and its own encoding is zero.
//
// The walks are followed source by source (in blocks of rwBlock sources): row i of M^t is
// e_iᵀM^t, and its entry for node y after step t is Σ_{x→y} (M^{t−1})_ix / deg(x), summed over
// y's in-edges in edge order. The sums are float64 and fixed in order by the graph alone, so the
// result does not depend on the block size or the number of threads; values are stored as
// float32. The cost is k·n·|E| multiply-adds and 2·n·min(n, rwBlock) floats of workspace.
//
// A RandomWalk value is a reusable workspace, not safe for concurrent use.
type RandomWalk struct {
	inv        []float64 // 1/out-degree, 0 for a node without out-edges
	start, in  []int32   // in-edges by destination (CSR): the sources of the edges into y
	fill, seen []int32   // build's fill pointers and repeated-edge check
	cur, next  []float64 // n rows × block columns: probability of each source's walk at each node
}

// Encode writes the encoding of the graph with n nodes and directed edges src[m]→dst[m] into
// out (n rows of k values: out[i*k+t−1] = (M^t)_ii). A repeated edge counts once.
func (w *RandomWalk) Encode(n int, src, dst []int32, k int, out []float32) error {
	if k < 1 {
		return fmt.Errorf("random-walk encoding: k = %d: needs at least one step", k)
	}
	if err := checkGraph(n, src, dst, k, out); err != nil {
		return fmt.Errorf("random-walk encoding: %w", err)
	}
	w.build(n, src, dst)
	for lo := 0; lo < n; lo += rwBlock {
		w.walkBlock(n, lo, min(lo+rwBlock, n), k, out)
	}
	return nil
}

// build makes the in-edge lists (sources by destination, in edge order, a repeated edge kept
// once) and the inverse out-degrees of the simple graph they describe.
func (w *RandomWalk) build(n int, src, dst []int32) {
	w.start = fitInt32(w.start, n+1)
	clear(w.start)
	for _, d := range dst {
		w.start[d+1]++
	}
	for y := 1; y <= n; y++ {
		w.start[y] += w.start[y-1]
	}
	w.fill = fitInt32(w.fill, n)
	copy(w.fill, w.start[:n])
	w.in = fitInt32(w.in, len(src))
	for m, d := range dst {
		w.in[w.fill[d]] = src[m]
		w.fill[d]++
	}
	// Drop repeats within each destination's list (stable), then count out-degrees.
	w.seen = fitInt32(w.seen, n)
	for v := range w.seen {
		w.seen[v] = -1
	}
	w.inv = fitFloat64(w.inv, n)
	clear(w.inv)
	at := int32(0)
	for y := 0; y < n; y++ {
		lo, hi := w.start[y], w.start[y+1]
		w.start[y] = at
		for _, x := range w.in[lo:hi] {
			if w.seen[x] == int32(y) {
				continue
			}
			w.seen[x] = int32(y)
			w.in[at] = x
			at++
			w.inv[x]++
		}
	}
	w.start[n] = at
	w.in = w.in[:at]
	for x, d := range w.inv {
		if d > 0 {
			w.inv[x] = 1 / d
		}
	}
}

// walkBlock follows the walks from sources lo..hi−1 for k steps and writes their return
// probabilities.
func (w *RandomWalk) walkBlock(n, lo, hi, k int, out []float32) {
	b := hi - lo
	w.cur, w.next = fitFloat64(w.cur, n*b), fitFloat64(w.next, n*b)
	cur, next := w.cur[:n*b], w.next[:n*b]
	clear(cur)
	for s := 0; s < b; s++ {
		cur[(lo+s)*b+s] = 1
	}
	for t := 1; t <= k; t++ {
		for y := 0; y < n; y++ {
			row := next[y*b : (y+1)*b]
			clear(row)
			for _, x := range w.in[w.start[y]:w.start[y+1]] {
				addScaled(row, cur[int(x)*b:int(x+1)*b], w.inv[x]) // x has an out-edge: inv[x] > 0
			}
		}
		for s := 0; s < b; s++ {
			out[(lo+s)*k+t-1] = float32(next[(lo+s)*b+s])
		}
		cur, next = next, cur
	}
}

// addScaled adds c·src to dst elementwise (equal lengths). The explicit float64 conversions
// keep the compiler from fusing the multiply and add (an FMA rounds once), so every platform
// gives the same bits.
func addScaled(dst, src []float64, c float64) {
	dst = dst[:len(src)]
	i := 0
	for ; i+4 <= len(src); i += 4 {
		dst[i] += float64(c * src[i])
		dst[i+1] += float64(c * src[i+1])
		dst[i+2] += float64(c * src[i+2])
		dst[i+3] += float64(c * src[i+3])
	}
	for ; i < len(src); i++ {
		dst[i] += float64(c * src[i])
	}
}
