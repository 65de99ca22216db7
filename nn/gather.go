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
			for k := range d {
				d[k] += s[k]
			}
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
