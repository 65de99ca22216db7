package nn

import (
	"fmt"
	"hash/fnv"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Gather returns the rows of x picked by ix: out[i] = W[i]·x[ix[i]] (zero row where ix[i] = -1).
// x is [rows, d]; the result is [ix.Len(), d]. Its gradient with respect to x is ScatterAdd.
func Gather(x *gorgonia.Node, ix *Index) (*gorgonia.Node, error) {
	if x.Dims() != 2 {
		return nil, fmt.Errorf("gather %q: input has shape %v, want a matrix", ix.Name, x.Shape())
	}
	op := newFuncOp(fmt.Sprintf("Gather{%s,%d}", ix.Name, ix.Len()), 1, rowsOf(ix.Len(), 0),
		gatherKernel[float64](ix), gatherKernel[float32](ix))
	op.check = func(s []tensor.Shape) error { return ix.check(s[0][0]) }
	op.dev = DeviceOp{Index: ix}
	op.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		dx, err := ScatterAdd(g, ix, in[0].Shape()[0])
		return gorgonia.Nodes{dx}, err
	}
	n, err := gorgonia.ApplyOp(op, x)
	if err != nil {
		return nil, fmt.Errorf("gather %q: %w", ix.Name, err)
	}
	return n, nil
}

// Embed looks up the rows of table for the category ids in ids (an embedding layer). Ids of -1
// (padding) give zero rows; ids outside the table are an error at run time.
func Embed(table *gorgonia.Node, ids *Index) (*gorgonia.Node, error) { return Gather(table, ids) }

// ScatterAdd sums the rows of x into rows rows: out[ix[i]] += W[i]·x[i], skipping ix[i] = -1.
// x is [ix.Len(), d]; the result is [rows, d]. Its gradient with respect to x is Gather.
func ScatterAdd(x *gorgonia.Node, ix *Index, rows int) (*gorgonia.Node, error) {
	if x.Dims() != 2 || x.Shape()[0] != ix.Len() {
		return nil, fmt.Errorf("scatter-add %q: input has shape %v, want [%d, d]", ix.Name, x.Shape(), ix.Len())
	}
	op := newFuncOp(fmt.Sprintf("ScatterAdd{%s,%d→%d}", ix.Name, ix.Len(), rows), 1, rowsOf(rows, 0),
		scatterKernel[float64](ix), scatterKernel[float32](ix))
	op.check = func(s []tensor.Shape) error {
		if s[0][0] != ix.Len() {
			return fmt.Errorf("input has %d rows", s[0][0])
		}
		return ix.check(rows)
	}
	op.dev = DeviceOp{Index: ix, Rows: rows}
	op.grad = func(_ gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		dx, err := Gather(g, ix)
		return gorgonia.Nodes{dx}, err
	}
	n, err := gorgonia.ApplyOp(op, x)
	if err != nil {
		return nil, fmt.Errorf("scatter-add %q: %w", ix.Name, err)
	}
	return n, nil
}

// EdgeSum returns e + hs[src] + ht[dst] row by row: out[m] = e[m] + hs[src[m]] + ht[dst[m]] for
// e [M, d] and hs, ht [N, d] (GatedGCN's Ce + Dh_src + Eh_dst in one pass); an index of -1 adds
// nothing. src and dst must be unweighted. The gradients are the output gradient g for e and
// its sums scattered along src and dst for hs and ht, computed in one pass over g.
func EdgeSum(e, hs, ht *gorgonia.Node, src, dst *Index) (*gorgonia.Node, error) {
	if e.Dims() != 2 || hs.Dims() != 2 || !hs.Shape().Eq(ht.Shape()) || e.Shape()[1] != hs.Shape()[1] ||
		e.Shape()[0] != src.Len() || src.Len() != dst.Len() {
		return nil, fmt.Errorf("edge sum: e %v, hs %v, ht %v, %d sources, %d destinations", e.Shape(), hs.Shape(), ht.Shape(), src.Len(), dst.Len())
	}
	st := &edgeSumState{src: src, dst: dst}
	op := newFuncOp(fmt.Sprintf("EdgeSum{%s,%s}", src.Name, dst.Name), 3, sameAs(0), edgeSum[float64](st), edgeSum[float32](st))
	op.dev = DeviceOp{Src: src, Dst: dst}
	op.check = func(s []tensor.Shape) error {
		if src.W != nil || dst.W != nil {
			return fmt.Errorf("weighted index")
		}
		if err := src.check(s[1][0]); err != nil {
			return err
		}
		return dst.check(s[2][0])
	}
	op.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		ds := newFuncOp(fmt.Sprintf("EdgeSumGrad{%s}", src.Name), 1, rowsOf(in[1].Shape()[0], 0),
			edgeSumGrad[float64](st), edgeSumGrad[float32](st))
		ds.dev = DeviceOp{Src: src, Dst: dst, Rows: in[1].Shape()[0], State: st}
		dS, err := apply(ds, g)
		if err != nil {
			return nil, err
		}
		dt := newFuncOp(fmt.Sprintf("EdgeSumGrad{%s}", dst.Name), 1, sameAs(0), takeOther[float64](&st.other), takeOther[float32](&st.other))
		dt.after = true
		dt.dev = DeviceOp{Src: src, Dst: dst, Rows: in[1].Shape()[0], State: st, Which: 1}
		dT, err := apply(dt, dS)
		if err != nil {
			return nil, err
		}
		return gorgonia.Nodes{g, dS, dT}, nil
	}
	return apply(op, e, hs, ht)
}

// edgeSumState keeps the edges grouped by source and by destination for the gradient, and the
// gradient along dst for its second op.
type edgeSumState struct {
	src, dst     *Index
	bySrc, byDst segments
	other        any
}

func edgeSum[T Float](st *edgeSumState) kernel[T] {
	return func(out []T, in [][]T, sh []tensor.Shape) {
		e, hs, ht := in[0], in[1], in[2]
		d := sh[0][1]
		src, dst := st.src.Idx, st.dst.Idx
		st.bySrc.group(src, sh[1][0], func(k int) bool { return src[k] >= 0 })
		st.byDst.group(dst, sh[2][0], func(k int) bool { return dst[k] >= 0 })
		parallelRange(len(src), d, func(lo, hi int) {
			for m := lo; m < hi; m++ {
				o, em := out[m*d:(m+1)*d], e[m*d:(m+1)*d]
				s, t := int(src[m]), int(dst[m])
				switch {
				case s >= 0 && t >= 0:
					add3(o, em, hs[s*d:(s+1)*d], ht[t*d:(t+1)*d])
				case s >= 0:
					add2(o, em, hs[s*d:(s+1)*d])
				case t >= 0:
					add2(o, em, ht[t*d:(t+1)*d])
				default:
					copy(o, em)
				}
			}
		})
	}
}

// edgeSumGrad sums the rows of g along src into out and along dst into st.other (both
// [rows, d]), node by node over the grouped edges (nodes shared between goroutines; each sum
// in edge order).
func edgeSumGrad[T Float](st *edgeSumState) kernel[T] {
	return func(out []T, in [][]T, sh []tensor.Shape) {
		g := in[0]
		d := sh[0][1]
		od := grow[T](st.other, len(out))
		st.other = od
		rows := len(out) / d
		sum := func(o []T, edges []int32) {
			clear(o)
			for _, k := range edges {
				addTo(o, g[int(k)*d:int(k+1)*d])
			}
		}
		parallelRange(rows, d*max(1, 2*len(st.src.Idx)/max(rows, 1)), func(lo, hi int) {
			for v := lo; v < hi; v++ {
				sum(out[v*d:(v+1)*d], st.bySrc.of(v))
				sum(od[v*d:(v+1)*d], st.byDst.of(v))
			}
		})
	}
}

// segments lists edges grouped by a node: those of node v are edge[start[v]:start[v+1]], in
// increasing order.
type segments struct {
	start, edge, next []int32
}

// group fills s with the edges k where keep(k), grouped by key[k] (a counting sort; n keys).
func (s *segments) group(key []int32, n int, keep func(k int) bool) {
	if len(s.start) != n+1 {
		s.start, s.next = make([]int32, n+1), make([]int32, n)
	}
	clear(s.start)
	for k, v := range key {
		if keep(k) {
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
		if keep(k) {
			s.edge[s.next[v]] = int32(k)
			s.next[v]++
		}
	}
}

// of returns node v's edges.
func (s *segments) of(v int) []int32 { return s.edge[s.start[v]:s.start[v+1]] }

// takeOther copies out the result a previous op left in *other.
func takeOther[T Float](other *any) kernel[T] {
	return func(out []T, _ [][]T, _ []tensor.Shape) { copy(out, (*other).([]T)) }
}

func gatherKernel[T Float](ix *Index) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) { GatherRows(out, in[0], s[0][1], ix.Idx, ix.W) }
}

func scatterKernel[T Float](ix *Index) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) { ScatterAddRows(out, in[0], s[0][1], ix.Idx, ix.W) }
}

// GatherRows is the CPU kernel of Gather: dst[i,:] = w[i]·src[idx[i],:] (zero where idx[i] < 0).
func GatherRows[T Float](dst, src []T, cols int, idx []int32, w []float64) {
	parallelRange(len(idx), cols, func(lo, hi int) {
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
	parallelCols(cols, len(idx), func(c0, c1 int) { scatterAddCols(dst, src, cols, idx, w, c0, c1) })
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
			addTo(d, s)
			continue
		}
		c := T(w[i])
		for k := range d {
			d[k] += c * s[k]
		}
	}
}

func hashOf(op gorgonia.Op) uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}
