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
//
// Its exported methods tell an executor what else the op can do (take a summand, run with a
// bias, share a pass with another op); what the executor makes of it, it keeps itself and
// passes to Run.
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
	// p64 and p32, when set, replace k64 and k32: kernels that read the executor's RunOpts.
	p64  planKernel[float64]
	p32  planKernel[float32]
	grad func(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error)
	diff []bool
	// after: input 0 is not read, it only makes the op run after input 0's op.
	after bool
	// sumsIn says the kernels accept one more input, a matrix of the output's shape they add to
	// their result (in[arity]). An op computed together with another names it in pair.
	sumsIn bool
	pair   *Func
	// withBias, for a product, returns an op computing the product plus a bias row; addsBias
	// marks AddBias, colSum ColSum; lin is the product gradient's shared pass (lin.ops).
	withBias func() *Func
	addsBias bool
	colSum   bool
	lin      *linGrad
	dev      DeviceOp // attributes the lowering reads (device.go); Op is filled from kind
	// keeps, when set, gives the bytes the op keeps between runs besides its output (forward
	// results its gradient ops read, grouped edges, scratch) for inputs of the given shapes and
	// element size in bytes; see KeptBytes.
	keeps func(in []tensor.Shape, elem int) int
	// aux, when set, gives the sizes in elements of the buffers a forward op keeps for its
	// gradient ops (gated aggregation: η and the denominators), which an executor may provide
	// (RunOpts.Aux) so that they live only as long as a gradient op can read them.
	aux func(in []tensor.Shape) []int
	// inPlace lists the inputs the kernels may write their output over (element-wise ops:
	// out[i] depends on in[k][i] only, read before out[i] is written).
	inPlace []int
	out     Buffer
	ds      []*tensor.Dense
	in64    [][]float64
	in32    [][]float32
	shp     []tensor.Shape
}

// RunOpts is what an executor decided about one node of a Func, given to Run. The zero RunOpts (and
// Do) computes everything the op's pass can compute.
type RunOpts struct {
	// Alone, for an op that computes its pair's result in the same pass (a product's
	// gradients): nothing needs the pair's result, so the pass leaves it out.
	Alone bool
	// ColSum, for a product's gradient op: a vector of the product's output columns that the
	// pass also fills with the column sums of the output gradient (the bias gradient).
	ColSum *tensor.Dense
	// Out, when set, is the tensor the op writes its result to (of the result's type and shape)
	// instead of its own buffer: the executor's slot for the value. PairOut is the same for the
	// result of the pair (Func.Pair) that this op's pass computes too.
	Out, PairOut *tensor.Dense
	// Scratch, for a product's gradient op, is the pass's scratch (transposed copies, partial
	// sums), which an executor shares between the steps it runs one at a time (nil: the op's).
	Scratch *kern.Scratch
	// Aux, for an op with aux buffers (Func.Aux), are those buffers ([]float32 or []float64 of
	// at least the sizes Aux gives), which the executor keeps until the op's gradient ops (those
	// of the same Func.State) have run. Nil: the op's own.
	Aux []any
	// Replay says the executor runs the op again on the same inputs to recompute its result for
	// the backward pass: the result must be the same, and side effects (a batch norm's running
	// statistics) must not happen twice.
	Replay bool
}

// planKernel is a kernel that reads the executor's plan (nil: the zero RunOpts).
type planKernel[T kern.Float] func(p *RunOpts, out []T, in [][]T, shapes []tensor.Shape)

// kernel is the generic form of a Func's kernel: it fully overwrites out from the inputs,
// whose shapes are given.
type kernel[T kern.Float] func(out []T, in [][]T, shapes []tensor.Shape)

// newFuncOp returns an op of program op kind (what the lowering translates it to; prog.Invalid
// for an op the executor makes and no graph holds) with the given name, arity, shape rule and
// kernels.
func newFuncOp(kind prog.Op, name string, arity int, shape func([]tensor.Shape) (tensor.Shape, error),
	k64 kernel[float64], k32 kernel[float32]) *Func {
	n := arity + 1 // room for the summand
	return &Func{kind: kind, name: name, arity: arity, shape: shape, k64: k64, k32: k32,
		ds: make([]*tensor.Dense, n), in64: make([][]float64, n), in32: make([][]float32, n),
		shp: make([]tensor.Shape, n)}
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

// Do runs the op on its inputs (and, for an op that SumsIn, optionally a summand after them).
func (op *Func) Do(vs ...gorgonia.Value) (gorgonia.Value, error) { return op.Run(nil, vs...) }

// Run is Do with an executor's plan for the node (nil: the zero RunOpts).
func (op *Func) Run(p *RunOpts, vs ...gorgonia.Value) (gorgonia.Value, error) {
	n := op.arity
	if op.sumsIn && len(vs) == n+1 {
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
	if n > op.arity && !shp[op.arity].Eq(s) {
		return nil, fmt.Errorf("%v: summand %v, output %v", op, shp[op.arity], s)
	}
	if op.check != nil {
		if err := op.check(shp[:op.arity]); err != nil {
			return nil, fmt.Errorf("%v: %w", op, err)
		}
	}
	var out *tensor.Dense
	if p != nil && p.Out != nil {
		if out = p.Out; out.Dtype() != ds[0].Dtype() || !out.Shape().Eq(s) {
			return nil, fmt.Errorf("%v: output buffer %v %v, want %v %v", op, out.Dtype(), out.Shape(), ds[0].Dtype(), s)
		}
	} else {
		out = op.out.Get(ds[0].Dtype(), s...)
	}
	if ds[0].Dtype() == tensor.Float64 {
		for i, d := range ds {
			op.in64[i] = d.Float64s()
		}
		if op.p64 != nil {
			op.p64(p, out.Float64s(), op.in64[:n], shp[:op.arity])
		} else {
			op.k64(out.Float64s(), op.in64[:n], shp[:op.arity])
		}
	} else {
		for i, d := range ds {
			op.in32[i] = d.Float32s()
		}
		if op.p32 != nil {
			op.p32(p, out.Float32s(), op.in32[:n], shp[:op.arity])
		} else {
			op.k32(out.Float32s(), op.in32[:n], shp[:op.arity])
		}
	}
	return out, nil
}

// KeptBytes returns the bytes the op holds between runs besides its output and aux buffers, for inputs
// of the given shapes and element size in bytes (4 for float32): what its kernels allocate on
// the first run and reuse after (kept forward results, edges grouped by node, scratch). Small
// scratch of the parameters' size is left out. Executors add it to their output buffers to
// know the memory a compiled graph takes before running it.
func (op *Func) KeptBytes(in []tensor.Shape, elem int) int64 {
	if op.keeps == nil || len(in) < op.arity {
		return 0
	}
	return int64(op.keeps(in[:op.arity], elem))
}

// Aux returns the sizes in elements of the buffers the op keeps for its gradient ops that an
// executor may provide (RunOpts.Aux), for inputs of the given shapes; nil for most ops. KeptBytes
// does not count them.
func (op *Func) Aux(in []tensor.Shape) []int {
	if op.aux == nil || len(in) < op.arity {
		return nil
	}
	return op.aux(in[:op.arity])
}

// InPlace returns the inputs whose buffer the op's output may be (an executor may give the op
// such an input's buffer as RunOpts.Out when nothing reads the input after the op).
func (op *Func) InPlace() []int { return op.inPlace }

// State returns the forward state the op shares with its forward or gradient ops (nil: none):
// an executor providing a forward op's aux buffers keeps them until the last op of the same
// state has run.
func (op *Func) State() any { return op.dev.State }

// auxBuf returns aux buffer i of the plan, cut to n values, or else own grown to n.
func auxBuf[T kern.Float](p *RunOpts, i int, own any, n int) []T {
	if p != nil && i < len(p.Aux) {
		if b, ok := p.Aux[i].([]T); ok && len(b) >= n {
			return b[:n]
		}
	}
	return kern.Grow[T](own, n)
}

// segmentsBytes is the size of a kern.Segments grouping edges edges by nodes nodes.
func segmentsBytes(nodes, edges int) int { return 4 * (2*nodes + 1 + edges) }

// OrderOnly reports that the op does not read its input 0: the input only makes it run after
// input 0's op (a gradient op handing out what that op's pass computed).
func (op *Func) OrderOnly() bool { return op.after }

// SumsIn reports that the op takes an optional summand after its inputs: a matrix of the
// output's shape that it adds to its result.
func (op *Func) SumsIn() bool { return op.sumsIn }

// Pair returns the op whose result this op's pass computes too (a product's other gradient),
// or nil. Given a summand, this op must run before its pair.
func (op *Func) Pair() *Func { return op.pair }

// WithBias returns, for a product x·W, an op of inputs (x, W, b) computing x·W + b in one
// kernel; nil for other ops.
func (op *Func) WithBias() *Func {
	if op.withBias == nil {
		return nil
	}
	return op.withBias()
}

// AddsBias reports that the op is AddBias (inputs x, b).
func (op *Func) AddsBias() bool { return op.addsBias }

// IsColSum reports that the op is ColSum.
func (op *Func) IsColSum() bool { return op.colSum }

// ProductGrad reports, for the gradient ops of a product x·W, which it is: 0 for dx (inputs
// g, W), 1 for dW (inputs x, g); ok is false for other ops. Their pass can also compute the
// column sums of g (RunOpts.ColSum).
func (op *Func) ProductGrad() (which int, ok bool) {
	if op.lin == nil {
		return 0, false
	}
	if op == op.lin.ops[1] {
		return 1, true
	}
	return 0, true
}

func (op *Func) DiffWRT(n int) []bool {
	if op.diff != nil {
		return op.diff
	}
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
