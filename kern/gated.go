package kern

// GatedEps is added to the gate sums of GatedAggregate (docs/protocol.md §"GatedGCN layer").
const GatedEps = 1e-6

// GatedBufs are the buffers of one gated aggregation (the twin of cuda.GatedBufs): inputs Ehat
// [m, d], Bh [nbh, d], Src and Dst [m] (−1: a padding edge); outputs Out [nodes, d] and the
// denominators Den [nodes, d], both read by the backward pass, which also reads Ehat to
// recompute the gate.
type GatedBufs[T Float] struct {
	Ehat, Bh []T
	Src, Dst []int32
	Out, Den []T
}

// GatedWork is what the CPU's gated aggregation keeps besides its buffers: the real edges
// (source and destination ≥ 0) grouped by destination and by source and the padding edges,
// which GatedAggregate fills and GatedAggregateBackward reads, and scratch reused between
// calls. The zero value is ready to use.
type GatedWork struct {
	byDst, bySrc Segments
	pad          []int32
	rows, gd     any // per-worker rows (one edge's η, 2d of scratch); g ⊘ D [nodes, d]
}

// GatedAggregate is the CPU kernel of ops.GatedAggregate (GPU twin: cuda/ops.go
// GatedAggregate): with η = σ(ê) per edge,
//
//	Out_i = Σ_{k: Dst[k]=i} η_k ⊙ Bh[Src[k]]  ⊘  Den_i,   Den_i = Σ_{k: Dst[k]=i} η_k + GatedEps,
//
// over the real edges; a node without in-edges gets Out 0 and Den GatedEps. It groups the edges
// into wk, then, per destination node (nodes shared between goroutines), sums over the node's
// in-edges in edge order, so the result does not depend on the number of goroutines.
func GatedAggregate[T Float](b GatedBufs[T], wk *GatedWork, m, nbh, nodes, d int) {
	e, bh, out, den := b.Ehat, b.Bh, b.Out, b.Den
	src, dst := b.Src[:m], b.Dst[:m]
	wk.byDst.Group(dst, nodes, src)
	wk.bySrc.Group(src, nbh, dst)
	wk.pad = wk.pad[:0]
	for k, v := range src {
		if !realEdge(v, dst[k]) {
			wk.pad = append(wk.pad, int32(k))
		}
	}
	rows := Grow[T](wk.rows, Workers()*3*d) // per worker: one edge's η, and 2d of scratch
	wk.rows = rows
	ParallelRangeW(nodes, d*max(1, m/max(nodes, 1)), func(w, lo, hi int) {
		eta := rows[w*3*d : w*3*d+d]
		for t := lo; t < hi; t++ {
			o, de := out[t*d:(t+1)*d], den[t*d:(t+1)*d]
			clear(o)
			for c := range de {
				de[c] = GatedEps
			}
			for _, k := range wk.byDst.Of(t) {
				so := int(src[k]) * d
				GatedFwdSigRow(eta, o, de, e[int(k)*d:int(k+1)*d], bh[so:so+d])
			}
			for c := range o {
				o[c] /= de[c]
			}
		}
	})
}

// GatedAggregateBackward is the gradient of GatedAggregate from the output gradient g
// [nodes, d] and the buffers and wk of the forward pass (which it reads, never writes): with
// η_k = σ(ê_k) recomputed bit for bit (GatedEtaRow) and q = η_k ⊙ g_t ⊘ Den_t for edge k =
// (s → t), de_k = q ⊙ (1 − η_k) ⊙ (Bh_s − Out_t) [m, d] and dbh_s = Σ_k q [nbh, d], summed per
// source node over its out-edges in edge order (nodes shared between goroutines). Padding
// edges get de 0. With sum non-nil (a summand [m, d] the CPU executor folds in), de += sum.
func GatedAggregateBackward[T Float](de, dbh, g []T, b GatedBufs[T], m, nbh, nodes, d int, sum []T, wk *GatedWork) {
	e, bh, o, den := b.Ehat, b.Bh, b.Out, b.Den
	gd := Grow[T](wk.gd, nodes*d)
	wk.gd = gd
	for i, v := range g[:nodes*d] {
		gd[i] = v / den[i]
	}
	for _, k := range wk.pad {
		clear(de[int(k)*d : int(k+1)*d])
		if sum != nil {
			copy(de[int(k)*d:int(k+1)*d], sum[int(k)*d:int(k+1)*d])
		}
	}
	dst := b.Dst[:m]
	rows := Grow[T](wk.rows, Workers()*3*d)
	wk.rows = rows
	ParallelRangeW(nbh, d*max(1, m/max(nbh, 1)), func(w, lo, hi int) {
		r := rows[w*3*d : (w+1)*3*d]
		eta, tmp := r[:d], r[d:] // one edge's η, and the sums GatedEtaRow discards
		for sv := lo; sv < hi; sv++ {
			db, bs := dbh[sv*d:(sv+1)*d], bh[sv*d:(sv+1)*d]
			clear(db)
			for _, k := range wk.bySrc.Of(sv) {
				to := int(dst[k]) * d
				GatedEtaRow(eta, e[int(k)*d:int(k+1)*d], tmp)
				GatedBwdRow(de[int(k)*d:int(k+1)*d], db, eta, gd[to:to+d], bs, o[to:to+d])
				if sum != nil {
					AddTo(de[int(k)*d:int(k+1)*d], sum[int(k)*d:int(k+1)*d])
				}
			}
		}
	})
}
