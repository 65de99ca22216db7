package kern

import "fmt"

// The forward state of the ops whose gradient reads what their forward pass computed, one type
// per op, and the passes that fill and read it. The Gorgonia ops (package ops) and the CPU
// executor (package cpuexec) keep one of these per op node and call the same functions, so an
// op's CPU arithmetic exists once.

// Resize returns b if it holds n values, else a new slice of n (state every value of which is
// written before it is read).
func Resize(b []float64, n int) []float64 {
	if len(b) != n {
		return make([]float64, n)
	}
	return b
}

// LayerNormState is what a layer norm keeps for its gradient: x̂ and 1/σ per row.
type LayerNormState struct {
	Xhat, InvStd []float64
}

// LayerNormForward is LayerNorm over x [rows, d], keeping x̂ and 1/σ in s.
func LayerNormForward[T Float](s *LayerNormState, out, x, gamma, beta []T, keep []bool, rows, d int, eps float64) {
	s.Xhat, s.InvStd = Resize(s.Xhat, rows*d), Resize(s.InvStd, rows)
	LayerNorm(LayerNormBufs[T]{X: x, Gamma: gamma, Beta: beta, Keep: keep, Out: out,
		Xhat: s.Xhat, InvStd: s.InvStd}, rows, d, eps)
}

// Ready reports an error unless a forward pass of shape [rows, d] ran.
func (s *LayerNormState) Ready(rows, d int) error {
	if len(s.Xhat) != rows*d || len(s.InvStd) != rows {
		return fmt.Errorf("no forward pass of shape [%d, %d] to differentiate", rows, d)
	}
	return nil
}

// LayerNormGrad is LayerNormBackward from the forward pass's state: dx, dγ and dβ, each
// computed where not nil.
func LayerNormGrad[T Float](s *LayerNormState, dx, dgamma, dbeta, gamma, dy []T, keep []bool, rows, d int) {
	LayerNormBackward(dx, dgamma, dbeta, dy, LayerNormBufs[T]{Gamma: gamma, Keep: keep,
		Xhat: s.Xhat, InvStd: s.InvStd}, rows, d)
}

// EdgeSumState is what an edge sum keeps for its gradient: the edges grouped by source and by
// destination, over rows nodes each.
type EdgeSumState struct {
	bySrc, byDst Segments
	rows, edges  int
	ran          bool
}

// EdgeSumForward is EdgeSum over m = len(src) edges into rows nodes, grouping the edges for
// the gradient.
func EdgeSumForward[T Float](s *EdgeSumState, out, e, hs, ht []T, src, dst []int32, rows, d int) {
	s.bySrc.Group(src, rows, nil)
	s.byDst.Group(dst, rows, nil)
	s.rows, s.edges, s.ran = rows, len(src), true
	EdgeSum(out, e, hs, ht, src, dst, d)
}

// Ready reports an error unless a forward pass of m edges into rows nodes ran.
func (s *EdgeSumState) Ready(m, rows int) error {
	if !s.ran || s.rows != rows || s.edges != m {
		return fmt.Errorf("no forward pass of %d edges into %d rows", m, rows)
	}
	return nil
}

// EdgeSumGrad sums g [m, d] along src into dsrc and along dst into ddst ([rows, d] each,
// either nil), node by node over the forward's grouped edges, each sum in edge order.
func EdgeSumGrad[T Float](s *EdgeSumState, dsrc, ddst, g []T, m, rows, d int) {
	sum := func(o []T, edges []int32) {
		clear(o)
		SumRowsAt(o, g, edges, d)
	}
	ParallelRange(rows, d*max(1, 2*m/max(rows, 1)), func(lo, hi int) {
		for v := lo; v < hi; v++ {
			if dsrc != nil {
				sum(dsrc[v*d:(v+1)*d], s.bySrc.Of(v))
			}
			if ddst != nil {
				sum(ddst[v*d:(v+1)*d], s.byDst.Of(v))
			}
		}
	})
}

// SegmentMaxState is what a segment max keeps for its gradient: the edges grouped by
// destination and the arg-max per (node, column).
type SegmentMaxState struct {
	byDst Segments
	arg   []int32
	d     int
	ran   bool
}

// SegmentMaxForward is SegmentMaxRows of x [len(dst), d] into nodes rows, grouping the edges
// by dst and keeping the arg-maxes.
func SegmentMaxForward[T Float](s *SegmentMaxState, out, x []T, dst []int32, nodes, d int) {
	s.byDst.Group(dst, nodes, nil)
	if n := nodes * d; cap(s.arg) < n {
		s.arg = make([]int32, n)
	} else {
		s.arg = s.arg[:n]
	}
	SegmentMaxRows(out, s.arg, x, d, &s.byDst)
	s.d, s.ran = d, true
}

// Ready reports an error unless a forward pass of width d ran.
func (s *SegmentMaxState) Ready(d int) error {
	if !s.ran || s.d != d {
		return fmt.Errorf("no forward pass of width %d to differentiate", d)
	}
	return nil
}

// SegmentMaxGrad puts g [nodes, d] at each column's arg-max edge (kept by the forward).
func SegmentMaxGrad[T Float](s *SegmentMaxState, dx, g []T, dst []int32, d int) {
	SegmentMaxGradRows(dx, g, s.arg, d, dst)
}

// ReluAll is Relu over all of out, in parallel chunks.
func ReluAll[T Float](out, x []T) {
	ParallelRange(len(out), 1, func(lo, hi int) { Relu(out[lo:hi], x[lo:hi]) })
}

// ReluGradAll is ReluGrad over all of out, in parallel chunks.
func ReluGradAll[T Float](out, y, g []T) {
	ParallelRange(len(out), 1, func(lo, hi int) { ReluGrad(out[lo:hi], y[lo:hi], g[lo:hi]) })
}

// BatchNormState is what a batch norm keeps for its gradient: the statistics it normalised
// with, and the passes' scratch.
type BatchNormState struct {
	Mean, InvStd []float64
	Scratch      BNScratch
}

// BatchNormForward is BatchNorm of b (its statistics and scratch s's), keeping the statistics.
func BatchNormForward[T Float](s *BatchNormState, b BatchNormBufs[T], rows, d int, training bool, o BNOpts) {
	s.Mean, s.InvStd = Resize(s.Mean, d), Resize(s.InvStd, d)
	b.Mean, b.InvStd, b.Scratch = s.Mean, s.InvStd, &s.Scratch
	BatchNorm(b, rows, d, training, o)
}

// BatchNormGrad is BatchNormBackward from the forward pass's statistics.
func BatchNormGrad[T Float](s *BatchNormState, dx, dgamma, dbeta, dy []T, b BatchNormBufs[T], rows, d int, training, relu bool, sum []T) {
	b.Mean, b.InvStd, b.Scratch = s.Mean, s.InvStd, &s.Scratch
	BatchNormBackward(dx, dgamma, dbeta, dy, b, rows, d, training, relu, sum)
}

// GatedState is what a gated aggregation keeps for its gradient: the denominators ([]T
// [nodes, d], kept only for a gradient), the grouped edges and the shape of ê.
type GatedState struct {
	Den  any
	Work GatedWork
	M, D int
}

// GatedForward is GatedAggregate of b; keep: the denominators go into s (for the gradient),
// else into b.Den.
func GatedForward[T Float](s *GatedState, b GatedBufs[T], keep bool, m, nbh, nodes, d int) {
	s.M, s.D = m, d
	if keep {
		den := Grow[T](s.Den, nodes*d)
		s.Den, b.Den = den, den
	}
	GatedAggregate(b, &s.Work, m, nbh, nodes, d)
}

// Ready reports an error unless a forward pass of ê [m, d] into nodes rows kept its
// denominators in T.
func GatedReady[T Float](s *GatedState, m, nodes, d int) error {
	if den, ok := s.Den.([]T); !ok || s.M != m || s.D != d || len(den) != nodes*d {
		return fmt.Errorf("no forward pass of shape [%d, %d] to differentiate", m, d)
	}
	return nil
}

// GatedGrad is GatedAggregateBackward from the forward pass's state.
func GatedGrad[T Float](s *GatedState, de, dbh, g []T, b GatedBufs[T], m, nbh, nodes, d int, sum []T) {
	b.Den = s.Den.([]T)
	GatedAggregateBackward(de, dbh, g, b, m, nbh, nodes, d, sum, &s.Work)
}
