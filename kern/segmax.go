package kern

// SegmentMaxRows is the CPU kernel of ops.SegmentMax (GPU twin: cuda/kernels/segmax.cu): for
// every node n and column j, out[n,j] = max of x[e,j] over node n's edges e (seg.Of(n), in
// increasing order), and arg[n,j] = the edge that gave it. x is [edges, cols]; out and arg are
// [nodes, cols] with nodes = len(out)/cols.
//
// The arg-max is the lowest edge index among the maxima: an edge replaces the current one only
// when strictly greater, and -0 equals +0. A NaN wins over every number (the lowest-index NaN
// of the column), so a NaN input propagates to its node. out[n,j] is always x[arg[n,j], j],
// bit for bit. A node without edges gets out 0 and arg -1.
//
// Nodes are shared between goroutines and each node's loop runs in edge order, so the result
// does not depend on their number.
func SegmentMaxRows[T Float](out []T, arg []int32, x []T, cols int, seg *Segments) {
	if cols == 0 {
		return
	}
	nodes := len(out) / cols
	per := max(1, len(seg.edge)/max(nodes, 1))
	ParallelRange(nodes, cols*per, func(lo, hi int) {
		for n := lo; n < hi; n++ {
			o, a := out[n*cols:(n+1)*cols], arg[n*cols:(n+1)*cols]
			edges := seg.Of(n)
			if len(edges) == 0 {
				clear(o)
				for j := range a {
					a[j] = -1
				}
				continue
			}
			e0 := edges[0]
			copy(o, x[int(e0)*cols:int(e0+1)*cols])
			for j := range a {
				a[j] = e0
			}
			for _, e := range edges[1:] {
				for j, v := range x[int(e)*cols : int(e+1)*cols] {
					if b := o[j]; v > b || (v != v && b == b) {
						o[j], a[j] = v, e
					}
				}
			}
		}
	})
}

// SegmentMaxGradRows is the gradient of SegmentMaxRows: dx[e,j] = g[dst[e],j] where e is the
// arg-max of node dst[e] in column j (arg, from the forward pass), else 0; padding edges
// (dst -1) get 0. dx is [edges, cols], g and arg [nodes, cols]. Every element of dx is written
// once, by one edge's row, so nothing is summed.
func SegmentMaxGradRows[T Float](dx, g []T, arg []int32, cols int, dst []int32) {
	ParallelRange(len(dst), cols, func(lo, hi int) {
		for e := lo; e < hi; e++ {
			d := dx[e*cols : (e+1)*cols]
			t := int(dst[e])
			if t < 0 {
				clear(d)
				continue
			}
			a, gt := arg[t*cols:(t+1)*cols], g[t*cols:(t+1)*cols]
			for j := range d {
				if a[j] == int32(e) {
					d[j] = gt[j]
				} else {
					d[j] = 0
				}
			}
		}
	})
}
