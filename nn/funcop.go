package nn

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// funcOp is an op given by its signature, a shape rule, a CPU kernel instantiated for float32
// and float64, and a symbolic gradient rule. Every op of this package except the losses is one:
// the Op boilerplate (arity, type, hashing, shape inference), unpacking and checking the inputs,
// reusing the output buffer and dispatching on the element type live here once, so an op's own
// file holds only its maths.
type funcOp struct {
	base
	name  string
	arity int
	ranks []int // rank (1 vector, 2 matrix) of every input, then of the output; nil: all matrices
	shape func(in []tensor.Shape) (tensor.Shape, error)
	check func(in []tensor.Shape) error // optional run-time check (index contents, forward state)
	k64   kernel[float64]
	k32   kernel[float32]
	grad  func(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error)
	diff  []bool
	dead  func() // optional: called when the executor finds that no output needs the op
	after bool   // input 0 is not read: it only makes the op run after input 0's op
	// sumsIn says the kernels accept one more input, a matrix of the output's shape they add to
	// their result (in[arity]); withSum, set by the executor, says that it is given. An op
	// computed together with another names it in pair; given a summand, it must run first.
	sumsIn, withSum bool
	pair            *funcOp
	// withBias, for a product, returns an op computing the product plus a bias row (the
	// executor runs MatMul followed by AddBias as it); addsBias marks AddBias.
	withBias func() *funcOp
	addsBias bool
	// colSum marks ColSum; lin links a product's gradient ops to their state; filled, set by
	// the executor, says another op writes this op's output buffer (Do runs no kernel).
	colSum bool
	lin    *linGrad
	filled bool
	dev    DeviceOp // attributes another executor needs (nn/device.go); Kind is filled from name
	out    buffer
	ds     []*tensor.Dense
	in64   [][]float64
	in32   [][]float32
	shp    []tensor.Shape
}

// kernel is the generic form of a funcOp's kernel: it fully overwrites out from the inputs,
// whose shapes are given.
type kernel[T Float] func(out []T, in [][]T, shapes []tensor.Shape)

func newFuncOp(name string, arity int, shape func([]tensor.Shape) (tensor.Shape, error),
	k64 kernel[float64], k32 kernel[float32]) *funcOp {
	n := arity + 1 // room for the summand
	return &funcOp{name: name, arity: arity, shape: shape, k64: k64, k32: k32,
		ds: make([]*tensor.Dense, n), in64: make([][]float64, n), in32: make([][]float32, n),
		shp: make([]tensor.Shape, n)}
}

func (op *funcOp) Arity() int            { return op.arity }
func (op *funcOp) String() string        { return op.name }
func (op *funcOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%s%p", op.name, op) }
func (op *funcOp) Hashcode() uint32      { return hashOf(op) }
func (op *funcOp) Type() hm.Type {
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
	n := op.arity
	if op.withSum {
		n++
	}
	if len(vs) != n {
		return nil, fmt.Errorf("%v: %d inputs, want %d", op, len(vs), n)
	}
	ds, shp := op.ds[:n], op.shp[:n]
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
	s, err := op.shape(shp[:op.arity])
	if err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	if op.withSum && !shp[op.arity].Eq(s) {
		return nil, fmt.Errorf("%v: summand %v, output %v", op, shp[op.arity], s)
	}
	if op.check != nil {
		if err := op.check(shp[:op.arity]); err != nil {
			return nil, fmt.Errorf("%v: %w", op, err)
		}
	}
	out := op.out.get(ds[0].Dtype(), s...)
	if op.filled {
		return out, nil
	}
	if ds[0].Dtype() == tensor.Float64 {
		for i, d := range ds {
			op.in64[i] = d.Float64s()
		}
		op.k64(out.Float64s(), op.in64[:n], shp[:op.arity])
	} else {
		for i, d := range ds {
			op.in32[i] = d.Float32s()
		}
		op.k32(out.Float32s(), op.in32[:n], shp[:op.arity])
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

// rowsOf returns a shape rule giving a matrix of rows rows and input i's columns.
func rowsOf(rows, i int) func([]tensor.Shape) (tensor.Shape, error) {
	return func(s []tensor.Shape) (tensor.Shape, error) {
		if len(s[i]) != 2 {
			return nil, fmt.Errorf("input %d has shape %v, want a matrix", i, s[i])
		}
		return tensor.Shape{rows, s[i][1]}, nil
	}
}
