package ops

import (
	"fmt"
	"github.com/rewiregnn/rewiregnn/prog"
	"hash"

	"github.com/chewxy/hm"
	"github.com/rewiregnn/rewiregnn/kern"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Func is an op given by its signature, a shape rule, a CPU kernel instantiated for float32
// and float64, and a symbolic gradient rule. Every op of this package except the losses is one:
// the Op boilerplate (arity, type, hashing, shape inference), unpacking and checking the inputs,
// reusing the output buffer and dispatching on the element type live here once, so an op's own
// file holds only its maths.
type Func struct {
	base
	kind  prog.Op // the program op it lowers to (Describe)
	name  string
	arity int
	ranks []int // rank (1 vector, 2 matrix) of every input, then of the output; nil: all matrices
	shape func(in []tensor.Shape) (tensor.Shape, error)
	check func(in []tensor.Shape) error // optional run-time check (index contents, forward state)
	k64   kernel[float64]
	k32   kernel[float32]
	grad  func(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error)
	dev   DeviceOp // attributes the lowering reads (device.go); Op is filled from kind
	out   Buffer
	ds    []*tensor.Dense
	in64  [][]float64
	in32  [][]float32
	shp   []tensor.Shape
}

// kernel is the generic form of a Func's kernel: it fully overwrites out from the inputs,
// whose shapes are given.
type kernel[T kern.Float] func(out []T, in [][]T, shapes []tensor.Shape)

// newFuncOp returns an op of program op kind (what the lowering translates it to) with the
// given name, arity, shape rule and kernels.
func newFuncOp(kind prog.Op, name string, arity int, shape func([]tensor.Shape) (tensor.Shape, error),
	k64 kernel[float64], k32 kernel[float32]) *Func {
	return &Func{kind: kind, name: name, arity: arity, shape: shape, k64: k64, k32: k32,
		ds: make([]*tensor.Dense, arity), in64: make([][]float64, arity), in32: make([][]float32, arity),
		shp: make([]tensor.Shape, arity)}
}

func (op *Func) Arity() int            { return op.arity }
func (op *Func) String() string        { return op.name }
func (op *Func) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%s%p", op.name, op) }
func (op *Func) Hashcode() uint32      { return hashOf(op) }
func (op *Func) Type() hm.Type {
	if op.ranks == nil {
		return fnType(op.arity)
	}
	ts := make([]hm.Type, len(op.ranks))
	for i, r := range op.ranks {
		ts[i] = vecT()
		if r == 2 {
			ts[i] = matT()
		}
	}
	return hm.NewFnType(ts...)
}

func (op *Func) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
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

// Do runs the op's CPU kernel on its inputs, into the op's output buffer (reused between runs).
func (op *Func) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	if len(vs) != op.arity {
		return nil, fmt.Errorf("%v: %d inputs, want %d", op, len(vs), op.arity)
	}
	ds, shp := op.ds, op.shp
	for i, v := range vs {
		d, err := dense(op, v, i)
		if err != nil {
			return nil, err
		}
		ds[i] = d
		shp[i] = d.Shape()
	}
	if err := sameType(op, ds...); err != nil {
		return nil, err
	}
	s, err := op.shape(shp)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	if op.check != nil {
		if err := op.check(shp); err != nil {
			return nil, fmt.Errorf("%v: %w", op, err)
		}
	}
	out := op.out.Get(ds[0].Dtype(), s...)
	if ds[0].Dtype() == tensor.Float64 {
		for i, d := range ds {
			op.in64[i] = d.Float64s()
		}
		op.k64(out.Float64s(), op.in64, shp)
	} else {
		for i, d := range ds {
			op.in32[i] = d.Float32s()
		}
		op.k32(out.Float32s(), op.in32, shp)
	}
	return out, nil
}

func (op *Func) DiffWRT(n int) []bool {
	d := make([]bool, n)
	for i := range d {
		d[i] = op.grad != nil
	}
	return d
}

func (op *Func) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	if op.grad == nil {
		return nil, fmt.Errorf("%v has no gradient", op)
	}
	return op.grad(in, out, grad)
}

// apply runs op on the inputs with its name as error context.
func apply(op *Func, in ...*gorgonia.Node) (*gorgonia.Node, error) {
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

// rowsOf returns a shape rule giving a matrix of rows rows and input i's columns.
func rowsOf(rows, i int) func([]tensor.Shape) (tensor.Shape, error) {
	return func(s []tensor.Shape) (tensor.Shape, error) {
		if len(s[i]) != 2 {
			return nil, fmt.Errorf("input %d has shape %v, want a matrix", i, s[i])
		}
		return tensor.Shape{rows, s[i][1]}, nil
	}
}
