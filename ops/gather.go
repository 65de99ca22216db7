package ops

import (
	"fmt"
	"github.com/rewiregnn/rewiregnn/prog"
	"hash/fnv"

	"github.com/rewiregnn/rewiregnn/kern"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Gather returns the rows of x picked by ix: out[i] = W[i]·x[ix[i]] (zero row where ix[i] = -1).
// x is [rows, d]; the result is [ix.Len(), d]. Its gradient with respect to x is ScatterAdd.
func Gather(x *gorgonia.Node, ix *Index) (*gorgonia.Node, error) {
	if x.Dims() != 2 {
		return nil, fmt.Errorf("gather %q: input has shape %v, want a matrix", ix.Name, x.Shape())
	}
	op := newFuncOp(prog.Gather, fmt.Sprintf("Gather{%s,%d}", ix.Name, ix.Len()), 1, rowsOf(ix.Len(), 0),
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
	op := newFuncOp(prog.ScatterAdd, fmt.Sprintf("ScatterAdd{%s,%d→%d}", ix.Name, ix.Len(), rows), 1, rowsOf(rows, 0),
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
	op := newFuncOp(prog.EdgeSum, fmt.Sprintf("EdgeSum{%s,%s}", src.Name, dst.Name), 3, sameAs(0), edgeSum[float64](st), edgeSum[float32](st))
	op.dev = DeviceOp{Src: src, Dst: dst, State: st} // the grouped edges, for the gradient
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
		ds := newFuncOp(prog.EdgeSumGrad, fmt.Sprintf("EdgeSumGrad{%s}", src.Name), 1, rowsOf(in[1].Shape()[0], 0),
			edgeSumGrad[float64](st), edgeSumGrad[float32](st))
		ds.dev = DeviceOp{Src: src, Dst: dst, Rows: in[1].Shape()[0], State: st}
		ds.check = func(s []tensor.Shape) error { return st.Ready(s[0][0], in[1].Shape()[0]) }
		dS, err := apply(ds, g)
		if err != nil {
			return nil, err
		}
		dt := newFuncOp(prog.EdgeSumGrad, fmt.Sprintf("EdgeSumGrad{%s}", dst.Name), 1, sameAs(0), takeOther[float64](&st.other), takeOther[float32](&st.other))
		dt.dev = DeviceOp{Src: src, Dst: dst, Rows: in[1].Shape()[0], State: st, Which: 1}
		dT, err := apply(dt, dS)
		if err != nil {
			return nil, err
		}
		return gorgonia.Nodes{g, dS, dT}, nil
	}
	return apply(op, e, hs, ht)
}

// edgeSumState keeps the edges grouped by source and by destination for the gradient
// (kern.EdgeSumState), and the gradient along dst for its second op.
type edgeSumState struct {
	src, dst *Index
	kern.EdgeSumState
	other any
}

func edgeSum[T kern.Float](st *edgeSumState) kernel[T] {
	return func(out []T, in [][]T, sh []tensor.Shape) {
		kern.EdgeSumForward(&st.EdgeSumState, out, in[0], in[1], in[2], st.src.Idx, st.dst.Idx, sh[1][0], sh[0][1])
	}
}

// edgeSumGrad sums the rows of g along src into out and along dst into st.other (both
// [rows, d]; kern.EdgeSumGrad).
func edgeSumGrad[T kern.Float](st *edgeSumState) kernel[T] {
	return func(out []T, in [][]T, sh []tensor.Shape) {
		d := sh[0][1]
		od := kern.Grow[T](st.other, len(out))
		st.other = od
		kern.EdgeSumGrad(&st.EdgeSumState, out, od, in[0], len(st.src.Idx), len(out)/d, d)
	}
}

// takeOther copies out the result a previous op left in *other.
func takeOther[T kern.Float](other *any) kernel[T] {
	return func(out []T, _ [][]T, _ []tensor.Shape) { copy(out, (*other).([]T)) }
}

func gatherKernel[T kern.Float](ix *Index) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) { kern.GatherRows(out, in[0], s[0][1], ix.Idx, ix.W) }
}

func scatterKernel[T kern.Float](ix *Index) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) { kern.ScatterAddRows(out, in[0], s[0][1], ix.Idx, ix.W) }
}

func hashOf(op gorgonia.Op) uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}
