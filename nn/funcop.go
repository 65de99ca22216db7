package nn

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// funcOp is a matrix op defined by a shape rule, a CPU kernel instantiated for float32 and
// float64, and a symbolic gradient rule. The smaller model-specific ops (Gaussian kernel
// weights, per-head dot products and scaling) are built from it.
type funcOp struct {
	base
	name  string
	arity int
	shape func(in []tensor.Shape) (tensor.Shape, error)
	k64   func(out []float64, in [][]float64, shapes []tensor.Shape)
	k32   func(out []float32, in [][]float32, shapes []tensor.Shape)
	grad  func(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error)
	diff  []bool
	out   buffer
	in64  [][]float64
	in32  [][]float32
	shp   []tensor.Shape
}

// kernel is the generic form of a funcOp's kernel.
type kernel[T Float] func(out []T, in [][]T, shapes []tensor.Shape)

func newFuncOp(name string, arity int, shape func([]tensor.Shape) (tensor.Shape, error),
	k64 kernel[float64], k32 kernel[float32]) *funcOp {
	return &funcOp{name: name, arity: arity, shape: shape, k64: k64, k32: k32,
		in64: make([][]float64, arity), in32: make([][]float32, arity), shp: make([]tensor.Shape, arity)}
}

func (op *funcOp) Arity() int            { return op.arity }
func (op *funcOp) String() string        { return op.name }
func (op *funcOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%s%p", op.name, op) }
func (op *funcOp) Hashcode() uint32      { return hashOf(op) }
func (op *funcOp) Type() hm.Type         { return fnType(op.arity) }
func (op *funcOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	shapes := make([]tensor.Shape, len(in))
	for i := range in {
		s, err := inShape(op, in, i)
		if err != nil {
			return nil, err
		}
		shapes[i] = s
	}
	return op.shape(shapes)
}

func (op *funcOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	if err := arity(op, vs); err != nil {
		return nil, err
	}
	ds := make([]*tensor.Dense, len(vs))
	for i, v := range vs {
		d, err := dense(op, v, i)
		if err != nil {
			return nil, err
		}
		ds[i] = d
		op.shp[i] = d.Shape()
	}
	if err := sameType(op, ds...); err != nil {
		return nil, err
	}
	s, err := op.shape(op.shp)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	out := op.out.get(ds[0].Dtype(), s...)
	if ds[0].Dtype() == tensor.Float64 {
		for i, d := range ds {
			op.in64[i] = d.Float64s()
		}
		op.k64(out.Float64s(), op.in64, op.shp)
	} else {
		for i, d := range ds {
			op.in32[i] = d.Float32s()
		}
		op.k32(out.Float32s(), op.in32, op.shp)
	}
	return out, nil
}

func (op *funcOp) DiffWRT(n int) []bool {
	if op.diff != nil {
		return op.diff
	}
	d := make([]bool, n)
	for i := range d {
		d[i] = op.grad != nil
	}
	return d
}

func (op *funcOp) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	if op.grad == nil {
		return nil, fmt.Errorf("%v has no gradient", op)
	}
	return op.grad(in, out, grad)
}

// apply runs op on the inputs with its name as error context.
func apply(op *funcOp, in ...*gorgonia.Node) (*gorgonia.Node, error) {
	n, err := gorgonia.ApplyOp(op, in...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op.name, err)
	}
	return n, nil
}

// sameAs returns a shape rule copying input i's shape.
func sameAs(i int) func([]tensor.Shape) (tensor.Shape, error) {
	return func(s []tensor.Shape) (tensor.Shape, error) { return s[i].Clone(), nil }
}
