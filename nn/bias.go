package nn

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// AddBias returns x + b with b ([d]) added to every row of x ([rows, d]).
func AddBias(x, b *gorgonia.Node) (*gorgonia.Node, error) {
	if x.Dims() != 2 || b.Dims() != 1 || x.Shape()[1] != b.Shape()[0] {
		return nil, fmt.Errorf("add bias: shapes %v and %v, want [rows, d] and [d]", x.Shape(), b.Shape())
	}
	n, err := gorgonia.ApplyOp(&addBiasOp{}, x, b)
	if err != nil {
		return nil, fmt.Errorf("add bias: %w", err)
	}
	return n, nil
}

// ColSum returns the column sums ([d]) of x ([rows, d]).
func ColSum(x *gorgonia.Node) (*gorgonia.Node, error) {
	if x.Dims() != 2 {
		return nil, fmt.Errorf("column sum: shape %v, want a matrix", x.Shape())
	}
	n, err := gorgonia.ApplyOp(&colSumOp{}, x)
	if err != nil {
		return nil, fmt.Errorf("column sum: %w", err)
	}
	return n, nil
}

type addBiasOp struct {
	base
	out buffer
}

func (op *addBiasOp) Arity() int            { return 2 }
func (op *addBiasOp) String() string        { return "AddBias" }
func (op *addBiasOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "AddBias%p", op) }
func (op *addBiasOp) Hashcode() uint32      { return hashOf(op) }
func (op *addBiasOp) Type() hm.Type {
	a, b := matT(), vecT()
	return hm.NewFnType(a, b, a)
}
func (op *addBiasOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := inShape(op, in, 0)
	if err != nil {
		return nil, err
	}
	return s.Clone(), nil
}

func (op *addBiasOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	if err := arity(op, vs); err != nil {
		return nil, err
	}
	x, err := dense(op, vs[0], 0)
	if err != nil {
		return nil, err
	}
	b, err := dense(op, vs[1], 1)
	if err != nil {
		return nil, err
	}
	if err := sameType(op, x, b); err != nil {
		return nil, err
	}
	rows, cols := rowsCols(x)
	if b.Shape().TotalSize() != cols {
		return nil, fmt.Errorf("%v: bias has %d values for %d columns", op, b.Shape().TotalSize(), cols)
	}
	out := op.out.get(x.Dtype(), rows, cols)
	switch x.Dtype() {
	case tensor.Float64:
		addBias(out.Float64s(), x.Float64s(), b.Float64s())
	default:
		addBias(out.Float32s(), x.Float32s(), b.Float32s())
	}
	return out, nil
}

func addBias[T Float](dst, x, b []T) {
	cols := len(b)
	parallelRange(len(x)/cols, cols, func(lo, hi int) {
		for r := lo * cols; r < hi*cols; r += cols {
			d, s := dst[r:r+cols], x[r:r+cols]
			for k, v := range b {
				d[k] = s[k] + v
			}
		}
	})
}

func (op *addBiasOp) DiffWRT(int) []bool { return []bool{true, true} }
func (op *addBiasOp) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	db, err := ColSum(grad)
	if err != nil {
		return nil, err
	}
	return gorgonia.Nodes{grad, db}, nil
}

type colSumOp struct {
	base
	out buffer
}

func (op *colSumOp) Arity() int            { return 1 }
func (op *colSumOp) String() string        { return "ColSum" }
func (op *colSumOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "ColSum%p", op) }
func (op *colSumOp) Hashcode() uint32      { return hashOf(op) }
func (op *colSumOp) Type() hm.Type {
	a, b := matT(), vecT()
	return hm.NewFnType(a, b)
}
func (op *colSumOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := inShape(op, in, 0)
	if err != nil {
		return nil, err
	}
	return tensor.Shape{s[1]}, nil
}

func (op *colSumOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	if err := arity(op, vs); err != nil {
		return nil, err
	}
	x, err := dense(op, vs[0], 0)
	if err != nil {
		return nil, err
	}
	_, cols := rowsCols(x)
	out := op.out.get(x.Dtype(), cols)
	switch x.Dtype() {
	case tensor.Float64:
		colSum(out.Float64s(), x.Float64s())
	default:
		colSum(out.Float32s(), x.Float32s())
	}
	return out, nil
}

func colSum[T Float](dst, x []T) {
	cols := len(dst)
	parallelCols(cols, len(x)/max(cols, 1), func(c0, c1 int) {
		clear(dst[c0:c1])
		for r := 0; r+cols <= len(x); r += cols {
			for k := c0; k < c1; k++ {
				dst[k] += x[r+k]
			}
		}
	})
}

func (op *colSumOp) DiffWRT(int) []bool { return []bool{true} }
func (op *colSumOp) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	// d/dx of a column sum broadcasts the gradient to every row: out = 0 + grad per row.
	zero := gorgonia.NewMatrix(in[0].Graph(), in[0].Dtype(), gorgonia.WithShape(in[0].Shape()...), gorgonia.WithInit(gorgonia.Zeroes()))
	dx, err := AddBias(zero, grad)
	if err != nil {
		return nil, err
	}
	return gorgonia.Nodes{dx}, nil
}
