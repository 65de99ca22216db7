package ops

import (
	"fmt"
	"github.com/rewiregnn/rewiregnn/prog"

	"github.com/rewiregnn/rewiregnn/kern"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// AddBias returns x + b with b ([d]) added to every row of x ([rows, d]).
func AddBias(x, b *gorgonia.Node) (*gorgonia.Node, error) {
	if x.Dims() != 2 || b.Dims() != 1 || x.Shape()[1] != b.Shape()[0] {
		return nil, fmt.Errorf("add bias: shapes %v and %v, want [rows, d] and [d]", x.Shape(), b.Shape())
	}
	op := newFuncOp(prog.AddBias, "AddBias", 2, sameAs(0), addBiasKernel[float64], addBiasKernel[float32])
	op.ranks = []int{2, 1, 2}
	op.check = func(s []tensor.Shape) error {
		if s[1].TotalSize() != s[0][1] {
			return fmt.Errorf("bias has %d values for %d columns", s[1].TotalSize(), s[0][1])
		}
		return nil
	}
	op.grad = func(_ gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		db, err := ColSum(g)
		return gorgonia.Nodes{g, db}, err
	}
	return apply(op, x, b)
}

// ColSum returns the column sums ([d]) of x ([rows, d]).
func ColSum(x *gorgonia.Node) (*gorgonia.Node, error) {
	if x.Dims() != 2 {
		return nil, fmt.Errorf("column sum: shape %v, want a matrix", x.Shape())
	}
	op := newFuncOp(prog.ColSum, "ColSum", 1, func(s []tensor.Shape) (tensor.Shape, error) {
		return tensor.Shape{s[0][1]}, nil
	}, colSumKernel[float64], colSumKernel[float32])
	op.ranks = []int{2, 1}
	op.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		// d/dx of a column sum broadcasts the gradient to every row: out = 0 + grad per row.
		zero := gorgonia.NewMatrix(in[0].Graph(), in[0].Dtype(), gorgonia.WithShape(in[0].Shape()...), gorgonia.WithInit(gorgonia.Zeroes()))
		dx, err := AddBias(zero, g)
		return gorgonia.Nodes{dx}, err
	}
	return apply(op, x)
}

func addBiasKernel[T kern.Float](out []T, in [][]T, _ []tensor.Shape) {
	kern.AddBias(out, in[0], in[1])
}

func colSumKernel[T kern.Float](out []T, in [][]T, _ []tensor.Shape) { kern.ColSum(out, in[0]) }
