// Package posenc computes the positional encodings of the paper: hop distances and walk counts
// between every ordered pair of nodes (the shortest-path and adjacency-power edge encodings), and
// the Laplacian eigenvector node encoding with its training-time sign flips.
package posenc

import "fmt"

// Unreached marks a pair of nodes with no directed path of at most R steps.
const Unreached = -1

// Walks holds, for one graph, the directed hop distance between every ordered pair of nodes up
// to R, and optionally the walk counts (A^k)[u][v] for k = 1..R. A Walks value is a reusable
// workspace: Compute overwrites it without allocating once its buffers are large enough.
// It is not safe for concurrent use; keep one per goroutine.
type Walks struct {
	N, R   int
	Counts bool // whether Count was computed

	// Dist[u*N+v] is the least k ≥ 0 with (A^k)[u][v] > 0, or Unreached if none is ≤ R.
	Dist []int32
	// Count[(k-1)*N*N + u*N+v] = (A^k)[u][v], the number of directed walks u→v of length k.
	Count []float64

	// Edge[u*N+v] is the index of the input edge u→v, or -1.
	Edge []int32

	start, nbr, fill, queue []int32 // out-neighbour lists (CSR) and BFS queue
}

// Compute fills w for the graph with n nodes and directed edges src[m]→dst[m]. With counts it
// also computes the walk counts of every length 1..r (and derives distances from them);
// without, distances come from a breadth-first search per node. An edge outside [0,n) or a
// repeated directed edge is an error.
func (w *Walks) Compute(n int, src, dst []int32, r int, counts bool) error {
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
	nn := n * n
	w.Edge = fitInt32(w.Edge, nn)
	for i := range w.Edge {
		w.Edge[i] = -1
	}
	w.start = fitInt32(w.start, n+1)
	clear(w.start)
	for m := range src {
		s, d := src[m], dst[m]
		if s < 0 || int(s) >= n || d < 0 || int(d) >= n {
			return fmt.Errorf("walks: edge %d (%d→%d) points outside the %d nodes", m, s, d, n)
		}
		if prev := w.Edge[int(s)*n+int(d)]; prev >= 0 {
			return fmt.Errorf("walks: edges %d and %d both join %d→%d", prev, m, s, d)
		}
		w.Edge[int(s)*n+int(d)] = int32(m)
		w.start[s+1]++
	}
	for u := 0; u < n; u++ {
		w.start[u+1] += w.start[u]
	}
	w.nbr = fitInt32(w.nbr, len(src))
	// Neighbours in increasing order: scan the dense edge index row by row.
	k := 0
	for u := 0; u < n; u++ {
		row := w.Edge[u*n : (u+1)*n]
		for v, e := range row {
			if e >= 0 {
				w.nbr[k] = int32(v)
				k++
			}
		}
	}
	w.Dist = fitInt32(w.Dist, nn)
	if counts {
		w.powers()
	} else {
		w.bfs()
	}
	return nil
}

// powers computes (A^k) row by row for k = 1..R by sparse-times-dense products, and the
// distances as the first k with a positive count.
func (w *Walks) powers() {
	n, r := w.N, w.R
	nn := n * n
	w.Count = fitFloat64(w.Count, r*nn)
	for i := range w.Dist {
		w.Dist[i] = Unreached
	}
	for u := 0; u < n; u++ {
		w.Dist[u*n+u] = 0
	}
	a1 := w.Count[:nn]
	clear(a1)
	for u := 0; u < n; u++ {
		row := a1[u*n : (u+1)*n]
		dist := w.Dist[u*n : (u+1)*n]
		for _, v := range w.nbr[w.start[u]:w.start[u+1]] {
			row[v] = 1
			if dist[v] == Unreached {
				dist[v] = 1
			}
		}
	}
	for k := 2; k <= r; k++ {
		prev := w.Count[(k-2)*nn : (k-1)*nn]
		next := w.Count[(k-1)*nn : k*nn]
		clear(next)
		for u := 0; u < n; u++ {
			p := prev[u*n : (u+1)*n]
			q := next[u*n : (u+1)*n]
			for x, c := range p {
				if c == 0 {
					continue
				}
				for _, v := range w.nbr[w.start[x]:w.start[x+1]] {
					q[v] += c
				}
			}
			dist := w.Dist[u*n : (u+1)*n]
			for v, c := range q {
				if c != 0 && dist[v] == Unreached {
					dist[v] = int32(k)
				}
			}
		}
	}
}

// bfs computes the distances with one breadth-first search per source node, cut at depth R.
func (w *Walks) bfs() {
	n, r := w.N, w.R
	w.queue = fitInt32(w.queue, n)
	for i := range w.Dist {
		w.Dist[i] = Unreached
	}
	for s := 0; s < n; s++ {
		dist := w.Dist[s*n : (s+1)*n]
		dist[s] = 0
		q := w.queue[:1]
		q[0] = int32(s)
		for head := 0; head < len(q); head++ {
			x := q[head]
			dx := dist[x]
			if int(dx) == r {
				continue
			}
			for _, v := range w.nbr[w.start[x]:w.start[x+1]] {
				if dist[v] == Unreached {
					dist[v] = dx + 1
					q = append(q, v)
				}
			}
		}
	}
}

// At returns (A^k)[u][v] for 1 ≤ k ≤ R; Compute must have been called with counts.
func (w *Walks) At(k, u, v int) float64 { return w.Count[(k-1)*w.N*w.N+u*w.N+v] }

func fitInt32(b []int32, n int) []int32 {
	if cap(b) < n {
		return make([]int32, n)
	}
	return b[:n]
}

func fitFloat64(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}
