package nn

import (
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/chewxy/hm"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Gather returns the rows of x picked by ix: out[i] = W[i]·x[ix[i]] (zero row where ix[i] = -1).
// x is [rows, d]; the result is [ix.Len(), d]. Its gradient with respect to x is ScatterAdd.
func Gather(x *gorgonia.Node, ix *Index) (*gorgonia.Node, error) {
	if x.Dims() != 2 {
		return nil, fmt.Errorf("gather %q: input has shape %v, want a matrix", ix.Name, x.Shape())
	}
	n, err := gorgonia.ApplyOp(&gatherOp{ix: ix}, x)
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
	n, err := gorgonia.ApplyOp(&scatterOp{ix: ix, rows: rows}, x)
	if err != nil {
		return nil, fmt.Errorf("scatter-add %q: %w", ix.Name, err)
	}
	return n, nil
}

type gatherOp struct {
	base
	ix  *Index
	out buffer
}

func (op *gatherOp) Arity() int { return 1 }
func (op *gatherOp) String() string {
	return fmt.Sprintf("Gather{%s,%d}", op.ix.Name, op.ix.Len())
}
func (op *gatherOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%s%p", op, op) }
func (op *gatherOp) Hashcode() uint32      { return hashOf(op) }
func (op *gatherOp) Type() hm.Type         { return fnType(1) }
func (op *gatherOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := inShape(op, in, 0)
	if err != nil {
		return nil, err
	}
	return tensor.Shape{op.ix.Len(), s[1]}, nil
}

func (op *gatherOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	if err := arity(op, vs); err != nil {
		return nil, err
	}
	x, err := dense(op, vs[0], 0)
	if err != nil {
		return nil, err
	}
	rows, cols := rowsCols(x)
	if err := op.ix.check(rows); err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	out := op.out.get(x.Dtype(), op.ix.Len(), cols)
	switch x.Dtype() {
	case tensor.Float64:
		GatherRows(out.Float64s(), x.Float64s(), cols, op.ix.Idx, op.ix.W)
	default:
		GatherRows(out.Float32s(), x.Float32s(), cols, op.ix.Idx, op.ix.W)
	}
	return out, nil
}

func (op *gatherOp) DiffWRT(int) []bool { return []bool{true} }
func (op *gatherOp) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	g, err := ScatterAdd(grad, op.ix, in[0].Shape()[0])
	if err != nil {
		return nil, err
	}
	return gorgonia.Nodes{g}, nil
}

type scatterOp struct {
	base
	ix   *Index
	rows int
	out  buffer
}

func (op *scatterOp) Arity() int { return 1 }
func (op *scatterOp) String() string {
	return fmt.Sprintf("ScatterAdd{%s,%d→%d}", op.ix.Name, op.ix.Len(), op.rows)
}
func (op *scatterOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%s%p", op, op) }
func (op *scatterOp) Hashcode() uint32      { return hashOf(op) }
func (op *scatterOp) Type() hm.Type         { return fnType(1) }
func (op *scatterOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := inShape(op, in, 0)
	if err != nil {
		return nil, err
	}
	return tensor.Shape{op.rows, s[1]}, nil
}

func (op *scatterOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	if err := arity(op, vs); err != nil {
		return nil, err
	}
	x, err := dense(op, vs[0], 0)
	if err != nil {
		return nil, err
	}
	rows, cols := rowsCols(x)
	if rows != op.ix.Len() {
		return nil, fmt.Errorf("%v: input has %d rows", op, rows)
	}
	if err := op.ix.check(op.rows); err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	out := op.out.get(x.Dtype(), op.rows, cols)
	switch x.Dtype() {
	case tensor.Float64:
		ScatterAddRows(out.Float64s(), x.Float64s(), cols, op.ix.Idx, op.ix.W)
	default:
		ScatterAddRows(out.Float32s(), x.Float32s(), cols, op.ix.Idx, op.ix.W)
	}
	return out, nil
}

func (op *scatterOp) DiffWRT(int) []bool { return []bool{true} }
func (op *scatterOp) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	g, err := Gather(grad, op.ix)
	if err != nil {
		return nil, err
	}
	return gorgonia.Nodes{g}, nil
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
