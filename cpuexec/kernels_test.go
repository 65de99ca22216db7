package cpuexec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/rewiregnn/rewiregnn/dispatch"
	"github.com/rewiregnn/rewiregnn/kern"
	"github.com/rewiregnn/rewiregnn/ops"
	"github.com/rewiregnn/rewiregnn/prog"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The kernels (kernels.go) against the CPU ops they replace (package ops, Gorgonia's
// operators), bit for bit: every test builds a program's values and a Runner by hand, runs a
// step through the kernel table and the op's Do on the same inputs (the product's fused bias and
// gradient steps against a float64 reference instead, testMatMul).

// testHost is a Host of fixed per-step inputs.
type testHost struct {
	idx      [][]int32
	w        [][]float64
	masks    [][]bool
	train    []bool
	seed     []uint64
	mean, vr [][]float64
	average  int
}

func (h *testHost) Index(i int) ([]int32, []float64) { return h.idx[i], h.w[i] }
func (h *testHost) Mask(i int) []bool                { return h.masks[i] }
func (h *testHost) Input(int) any                    { return nil }
func (h *testHost) Training(s int) bool              { return h.train[s] }
func (h *testHost) DropSeed(s int) uint64            { return h.seed[s] }
func (h *testHost) Param(string) any                 { return nil }
func (h *testHost) BN(s int, _ bool) ([]float64, []float64, int) {
	return h.mean[s], h.vr[s], h.average
}

// rig is a program under construction with its values' contents and a Runner over them.
type rig[T kern.Float] struct {
	t   *testing.T
	r   *Runner
	h   *testHost
	rng *rand.Rand
}

func is32[T kern.Float]() bool {
	var z T
	return unsafe.Sizeof(z) == 4
}

func progDtype[T kern.Float]() tensor.Dtype {
	if is32[T]() {
		return tensor.Float32
	}
	return tensor.Float64
}

func newRig[T kern.Float](t *testing.T, seed uint64) *rig[T] {
	h := &testHost{}
	p := &prog.Program{Groups: 8, Train: true} // (a training program: forward ops keep what their gradients read)
	return &rig[T]{t: t, h: h, rng: rand.New(rand.NewPCG(seed, seed+1)),
		r: &Runner{P: p, host: h, groups: make([]any, 8), scratch: new(kern.Scratch)}}
}

func (g *rig[T]) add(kind prog.Kind, shape []int, v []T) int {
	dt := prog.Float64
	if is32[T]() {
		dt = prog.Float32
	}
	id := len(g.r.P.Vals)
	g.r.P.Vals = append(g.r.P.Vals, prog.Value{Name: fmt.Sprintf("v%d", id), Kind: kind, Dtype: dt, Shape: shape, Node: -1})
	g.r.data = append(g.r.data, v)
	return id
}

// in adds an input of the given shape (nil: a scalar) and contents.
func (g *rig[T]) in(shape []int, v []T) int { return g.add(prog.Input, shape, v) }

// rand adds an input of normal random contents.
func (g *rig[T]) rand(shape ...int) int {
	v := make([]T, prod(shape))
	for i := range v {
		v[i] = T(g.rng.NormFloat64())
	}
	return g.in(shape, v)
}

// res adds a result, filled with NaN (a kernel must write all of it).
func (g *rig[T]) res(shape ...int) int {
	v := make([]T, prod(shape))
	for i := range v {
		v[i] = T(math.NaN())
	}
	return g.add(prog.Computed, shape, v)
}

func prod(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

func (g *rig[T]) data(v int) []T { return g.r.data[v].([]T) }

// index adds an index input.
func (g *rig[T]) index(idx []int32, w []float64) int {
	g.r.P.Indexes = append(g.r.P.Indexes, prog.IndexInput{Name: fmt.Sprintf("ix%d", len(g.h.idx)), Len: len(idx), Weighted: w != nil})
	g.h.idx, g.h.w = append(g.h.idx, idx), append(g.h.w, w)
	return len(g.h.idx) - 1
}

func (g *rig[T]) mask(keep []bool) int {
	g.r.P.Masks = append(g.r.P.Masks, prog.MaskInput{Name: "mask", Len: len(keep)})
	g.h.masks = append(g.h.masks, keep)
	return len(g.h.masks) - 1
}

// bnState adds a batch norm's state with the running statistics of st (copied).
func (g *rig[T]) bnState(st *ops.BNState) int {
	g.r.P.States = append(g.r.P.States, prog.State{Kind: prog.BNState, Name: st.Name, Size: len(st.RunMean)})
	g.h.train = append(g.h.train, st.Training)
	g.h.seed = append(g.h.seed, 0)
	g.h.mean = append(g.h.mean, append([]float64(nil), st.RunMean...))
	g.h.vr = append(g.h.vr, append([]float64(nil), st.RunVar...))
	return len(g.h.train) - 1
}

// table returns the dispatch table of element type T.
func table[T kern.Float]() *dispatch.Table[[]T, index, []bool] {
	if is32[T]() {
		return any(table32).(*dispatch.Table[[]T, index, []bool])
	}
	return any(table64).(*dispatch.Table[[]T, index, []bool])
}

func (g *rig[T]) run(st Step) error {
	g.r.steps = []Step{st}
	return run(g.r, table[T]())
}

func (g *rig[T]) mustRun(st Step) {
	g.t.Helper()
	if err := g.run(st); err != nil {
		g.t.Fatal(err)
	}
}

// node returns a program node with no index, mask, state or group.
func node(op prog.Op) prog.Node {
	return prog.Node{Op: op, Index: -1, Src: -1, Dst: -1, Mask: -1, State: -1, Group: -1}
}

// single is the step of one node.
func single(nd prog.Node, out int, in ...int) Step {
	return Step{Kind: nd.Op, Node: nd, Outs: []int{out}, Ins: [][]int{in}, Summand: -1, ColSum: -1}
}

// value is v's contents as a Gorgonia value (a copy).
func (g *rig[T]) value(v int) gorgonia.Value {
	d := g.data(v)
	if g.r.P.Vals[v].Scalar() {
		if is32[T]() {
			return gorgonia.NewF32(float32(d[0]))
		}
		return gorgonia.NewF64(float64(d[0]))
	}
	return tensor.New(tensor.WithShape(g.r.P.Vals[v].Shape...), tensor.WithBacking(append([]T(nil), d...)))
}

func (g *rig[T]) values(vs ...int) []gorgonia.Value {
	out := make([]gorgonia.Value, len(vs))
	for i, v := range vs {
		out[i] = g.value(v)
	}
	return out
}

// gnode is a graph node of v's shape and type.
func (g *rig[T]) gnode(gg *gorgonia.ExprGraph, v int) *gorgonia.Node {
	s := g.r.P.Vals[v].Shape
	name := gorgonia.WithName(g.r.P.Vals[v].Name)
	switch len(s) {
	case 0:
		return gorgonia.NewScalar(gg, progDtype[T](), name)
	case 1:
		return gorgonia.NewVector(gg, progDtype[T](), gorgonia.WithShape(s...), name)
	}
	return gorgonia.NewMatrix(gg, progDtype[T](), gorgonia.WithShape(s...), name)
}

func (g *rig[T]) gnodes(gg *gorgonia.ExprGraph, vs ...int) gorgonia.Nodes {
	out := make(gorgonia.Nodes, len(vs))
	for i, v := range vs {
		out[i] = g.gnode(gg, v)
	}
	return out
}

// do runs n's op on the values, failing the test on an error.
func do(t *testing.T, n *gorgonia.Node, vs ...gorgonia.Value) gorgonia.Value {
	t.Helper()
	v, err := n.Op().Do(vs...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// grads returns the gradient nodes of n's op (SymDiff) for an output gradient node gn.
func grads(t *testing.T, n *gorgonia.Node, in gorgonia.Nodes, gn *gorgonia.Node) gorgonia.Nodes {
	t.Helper()
	gs, err := n.Op().(gorgonia.SDOp).SymDiff(in, n, gn)
	if err != nil {
		t.Fatal(err)
	}
	return gs
}

// vals copies a value's numbers (a scalar as one).
func vals[T kern.Float](t *testing.T, v gorgonia.Value) []T {
	t.Helper()
	switch d := v.Data().(type) {
	case []T:
		return append([]T(nil), d...)
	case T:
		return []T{d}
	}
	t.Fatalf("value %T holds %T", v, v.Data())
	return nil
}

// plus returns a + s element by element (a step's summand added to an op's result, as the
// kernels add it: one rounding per element).
func plus[T kern.Float](a, s []T) []T {
	out := make([]T, len(a))
	for i := range a {
		out[i] = a[i] + s[i]
	}
	return out
}

func bitsOf[T kern.Float](v T) uint64 {
	if is32[T]() {
		return uint64(math.Float32bits(float32(v)))
	}
	return math.Float64bits(float64(v))
}

// same fails t where got and want differ in bits (two NaNs count as equal).
func same[T kern.Float](t *testing.T, what string, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	bad := 0
	for i := range want {
		if g, w := got[i], want[i]; bitsOf(g) != bitsOf(w) && (g == g || w == w) {
			if bad++; bad <= 5 {
				t.Errorf("%s[%d] = %v, ops %v", what, i, g, w)
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d values differ", what, bad)
	}
}

func same64(t *testing.T, what string, got, want []float64) {
	t.Helper()
	same(t, what, got, want)
}

// forEach runs f in float32 and float64.
func forEach(t *testing.T, f32 func(*testing.T), f64 func(*testing.T)) {
	t.Run("float32", f32)
	t.Run("float64", f64)
}

func TestKernelsElementwise(t *testing.T) {
	forEach(t, testElementwise[float32], testElementwise[float64])
}

func testElementwise[T kern.Float](t *testing.T) {
	g := newRig[T](t, 1)
	const r, c = 7, 45
	a, b := g.rand(r, c), g.rand(r, c)
	g.data(a)[0], g.data(b)[1], g.data(b)[2], g.data(a)[3], g.data(b)[3] = 0, 0, T(math.Copysign(0, -1)), 0, 0
	g.data(b)[4] = T(math.Inf(1))
	scalars := []int{g.in(nil, []T{1.75}), g.in(nil, []T{0}), g.in(nil, []T{T(math.Copysign(0, -1))}), g.in(nil, []T{-3})}
	one := g.in([]int{1, 1}, []T{2.5})
	binops := []struct {
		op prog.Op
		f  func(a, b *gorgonia.Node) (*gorgonia.Node, error)
	}{{prog.Add, gorgonia.Add}, {prog.Sub, gorgonia.Sub}, {prog.Mul, gorgonia.HadamardProd}, {prog.Div, gorgonia.HadamardDiv}}
	check := func(op prog.Op, f func(a, b *gorgonia.Node) (*gorgonia.Node, error), x, y int) {
		t.Helper()
		shape := g.r.P.Vals[x].Shape
		if shape == nil {
			shape = g.r.P.Vals[y].Shape
		}
		out := g.res(shape...)
		g.mustRun(single(node(op), out, x, y))
		gg := gorgonia.NewGraph()
		n, err := f(g.gnode(gg, x), g.gnode(gg, y))
		if err != nil {
			t.Fatal(err)
		}
		same(t, fmt.Sprintf("%v %v %v", g.r.P.Vals[x].Shape, op, g.r.P.Vals[y].Shape), g.data(out), vals[T](t, do(t, n, g.values(x, y)...)))
	}
	for _, o := range binops {
		check(o.op, o.f, a, b)
		for _, s := range scalars {
			check(o.op, o.f, a, s)
			check(o.op, o.f, s, b)
			check(o.op, o.f, one, s)
			check(o.op, o.f, s, one)
			for _, s2 := range scalars {
				check(o.op, o.f, s, s2)
			}
		}
	}
	// the project's own add (ops.Add)
	check(prog.Add, ops.Add, a, b)

	unops := []struct {
		op prog.Op
		f  func(a *gorgonia.Node) (*gorgonia.Node, error)
	}{{prog.Tanh, gorgonia.Tanh}, {prog.Sigmoid, gorgonia.Sigmoid}, {prog.Exp, gorgonia.Exp}, {prog.Abs, gorgonia.Abs}, {prog.Sqrt, gorgonia.Sqrt}}
	xs := append([]int{a, one}, scalars...)
	for range 60 { // scalars: float32 tanh differs on a scalar node for some
		xs = append(xs, g.in(nil, []T{T(g.rng.NormFloat64())}))
	}
	for _, o := range unops {
		for _, x := range xs {
			out := g.res(g.r.P.Vals[x].Shape...)
			g.mustRun(single(node(o.op), out, x))
			gg := gorgonia.NewGraph()
			n, err := o.f(g.gnode(gg, x))
			if err != nil {
				t.Fatal(err)
			}
			same(t, fmt.Sprintf("%v %v", o.op, g.r.P.Vals[x].Shape), g.data(out), vals[T](t, do(t, n, g.value(x))))
		}
	}
	// Relu and its gradient (ops.Relu)
	gg := gorgonia.NewGraph()
	xn := g.gnode(gg, a)
	y, err := ops.Relu(xn)
	if err != nil {
		t.Fatal(err)
	}
	out := g.res(r, c)
	g.mustRun(single(node(prog.Relu), out, a))
	same(t, "relu", g.data(out), vals[T](t, do(t, y, g.value(a))))
	gn := g.gnode(gg, b)
	dx := g.res(r, c)
	g.mustRun(single(node(prog.ReluGrad), dx, out, b))
	same(t, "relu gradient", g.data(dx), vals[T](t, do(t, grads(t, y, gorgonia.Nodes{xn}, gn)[0], g.values(out, b)...)))
}

func TestKernelsGradSum(t *testing.T) { forEach(t, testGradSum[float32], testGradSum[float64]) }

func testGradSum[T kern.Float](t *testing.T) {
	g := newRig[T](t, 2)
	const r, c = 130, 37 // more than one block of the sum
	t0, t1, t2 := g.rand(r, c), g.rand(r, c), g.rand(r, c)
	out := g.res(r, c)
	st := single(node(prog.GradSum), out, t0, t1, t2)
	g.mustRun(st)
	want := make([]T, r*c)
	for i := range want {
		want[i] = g.data(t0)[i] + g.data(t1)[i]
		want[i] += g.data(t2)[i]
	}
	same(t, "sum", g.data(out), want)
}

func TestKernelsMatMul(t *testing.T) {
	for _, s := range [][3]int{{300, 24, 20}, {5, 3, 4}} { // the float32 pass (kern.LinearGrad32), and below its blocks
		t.Run(fmt.Sprint(s), func(t *testing.T) {
			forEach(t, func(t *testing.T) { testMatMul[float32](t, s[0], s[1], s[2]) }, func(t *testing.T) { testMatMul[float64](t, s[0], s[1], s[2]) })
		})
	}
}

// testMatMul checks the product against ops' Do bit for bit, and the product with a fused bias
// and the gradient steps (the pair with the column sums and a summand, the pair bare, dx alone,
// dw alone with the column sums) against a float64 reference (matMulRef); the members computed
// alone must have the bits of the pair's.
func testMatMul[T kern.Float](t *testing.T, m, a, b int) {
	g := newRig[T](t, 3)
	x, w, bias, gr, sum := g.rand(m, a), g.rand(a, b), g.rand(b), g.rand(m, b), g.rand(m, a)
	gg := gorgonia.NewGraph()
	in := g.gnodes(gg, x, w)
	y, err := ops.MatMul(in[0], in[1])
	if err != nil {
		t.Fatal(err)
	}
	ref := newMatMulRef(g.data(x), g.data(w), g.data(bias), g.data(gr), g.data(sum), m, a, b)

	out := g.res(m, b)
	g.mustRun(single(node(prog.MatMul), out, x, w))
	same(t, "x·w", g.data(out), vals[T](t, do(t, y, g.values(x, w)...)))
	g.mustRun(single(node(prog.MatMul), out, x, w, bias))
	near(t, "x·w + b", g.data(out), ref.y, ref.yMag)

	grad := func(dx, dw, sum, db int) {
		t.Helper()
		ins := [][]int{{gr, w}, {x, gr}}
		kind := prog.MatMulGradX
		if dx < 0 {
			ins[0], kind = nil, prog.MatMulGradW
		}
		if dw < 0 {
			ins[1] = nil
		}
		g.mustRun(Step{Kind: kind, Node: node(kind), Outs: []int{dx, dw}, Ins: ins, Summand: sum, ColSum: db})
	}

	// both members, with the column sums and a summand
	dx, dw, db := g.res(m, a), g.res(a, b), g.res(b)
	grad(dx, dw, sum, db)
	near(t, "dx + summand", g.data(dx), ref.dxSum, ref.dxSumMag)
	near(t, "dw", g.data(dw), ref.dw, ref.dwMag)
	near(t, "db", g.data(db), ref.db, ref.dbMag)

	// both members, bare
	dx0, dw0 := g.res(m, a), g.res(a, b)
	grad(dx0, dw0, -1, -1)
	near(t, "dx", g.data(dx0), ref.dx, ref.dxMag)
	near(t, "dw bare", g.data(dw0), ref.dw, ref.dwMag)

	// dx alone, without a summand: the bare pair's dx
	dx1 := g.res(m, a)
	grad(dx1, -1, -1, -1)
	near(t, "dx alone", g.data(dx1), ref.dx, ref.dxMag)
	same(t, "dx alone against the pair's", g.data(dx1), g.data(dx0))

	// dw alone, with the column sums: the pair's dw and db
	dw1, db1 := g.res(a, b), g.res(b)
	grad(-1, dw1, -1, db1)
	near(t, "dw alone", g.data(dw1), ref.dw, ref.dwMag)
	near(t, "db with dw alone", g.data(db1), ref.db, ref.dbMag)
	same(t, "dw alone against the pair's", g.data(dw1), g.data(dw))
	same(t, "db with dw alone against the pair's", g.data(db1), g.data(db))
}

// matMulRef is y = x·w + b for x [m, a], w [a, b] and its gradients from g [m, b] (dx = g·wᵀ,
// with a summand dxSum = g·wᵀ + sum; dw = xᵀ·g; db = Σ rows g), computed in float64 by brute
// force, each with its magnitude (the sum of the absolute values of its terms), which scales
// the tolerance of near.
type matMulRef struct {
	y, dx, dxSum, dw, db                []float64
	yMag, dxMag, dxSumMag, dwMag, dbMag []float64
}

func newMatMulRef[T kern.Float](x, w, bias, g, sum []T, m, a, b int) *matMulRef {
	r := &matMulRef{y: make([]float64, m*b), yMag: make([]float64, m*b),
		dx: make([]float64, m*a), dxMag: make([]float64, m*a), dxSum: make([]float64, m*a), dxSumMag: make([]float64, m*a),
		dw: make([]float64, a*b), dwMag: make([]float64, a*b), db: make([]float64, b), dbMag: make([]float64, b)}
	for i := range m {
		for j := range b {
			v, mag := float64(bias[j]), math.Abs(float64(bias[j]))
			for k := range a {
				p := float64(x[i*a+k]) * float64(w[k*b+j])
				v, mag = v+p, mag+math.Abs(p)
			}
			r.y[i*b+j], r.yMag[i*b+j] = v, mag
		}
		for k := range a {
			var v, mag float64
			for j := range b {
				p := float64(g[i*b+j]) * float64(w[k*b+j])
				v, mag = v+p, mag+math.Abs(p)
			}
			s := float64(sum[i*a+k])
			r.dx[i*a+k], r.dxMag[i*a+k] = v, mag
			r.dxSum[i*a+k], r.dxSumMag[i*a+k] = v+s, mag+math.Abs(s)
		}
	}
	for k := range a {
		for j := range b {
			var v, mag float64
			for i := range m {
				p := float64(x[i*a+k]) * float64(g[i*b+j])
				v, mag = v+p, mag+math.Abs(p)
			}
			r.dw[k*b+j], r.dwMag[k*b+j] = v, mag
		}
	}
	for i := range m {
		for j := range b {
			r.db[j] += float64(g[i*b+j])
			r.dbMag[j] += math.Abs(float64(g[i*b+j]))
		}
	}
	return r
}

// near fails t where got differs from the float64 reference want by more than a relative
// tolerance (1e-5 in float32, 1e-12 in float64) of the magnitude mag of want's terms.
func near[T kern.Float](t *testing.T, what string, got []T, want, mag []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	tol := 1e-12
	if is32[T]() {
		tol = 1e-5
	}
	bad := 0
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= tol*mag[i]) {
			if bad++; bad <= 5 {
				t.Errorf("%s[%d] = %v, reference %v (magnitude %g)", what, i, got[i], want[i], mag[i])
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d values differ", what, bad)
	}
}

func TestKernelsBatchNorm(t *testing.T) {
	for _, c := range []struct {
		relu, res, training bool
	}{{false, false, true}, {true, false, true}, {true, true, true}, {false, false, false}, {true, true, false}} {
		t.Run(fmt.Sprintf("relu=%v,res=%v,training=%v", c.relu, c.res, c.training), func(t *testing.T) {
			forEach(t, func(t *testing.T) { testBatchNorm[float32](t, c.relu, c.res, c.training) },
				func(t *testing.T) { testBatchNorm[float64](t, c.relu, c.res, c.training) })
		})
	}
}

func testBatchNorm[T kern.Float](t *testing.T, relu, withRes, training bool) {
	g := newRig[T](t, 4)
	const rows, d = 300, 6 // more than one chunk of rows (kern.BNChunk)
	keep := make([]bool, rows)
	for i := range keep {
		keep[i] = i%7 != 3
	}
	bst := ops.NewBNState("bn", d)
	for i := range bst.RunMean {
		bst.RunMean[i], bst.RunVar[i] = 0.1*float64(i), 1+0.2*float64(i)
	}
	bst.Training = training
	omask := &ops.Mask{Name: "mask", Keep: keep}
	x, gamma, beta, res, dy, sum := g.rand(rows, d), g.rand(d), g.rand(d), g.rand(rows, d), g.rand(rows, d), g.rand(rows, d)
	nd := node(prog.BatchNorm)
	nd.Mask, nd.State, nd.Group = g.mask(keep), g.bnState(bst), 0
	gg := gorgonia.NewGraph()
	in := g.gnodes(gg, x, gamma, beta, res)
	var y *gorgonia.Node
	var err error
	ins := []int{x, gamma, beta}
	kind, gkind := prog.BatchNorm, prog.BatchNormGrad
	switch {
	case relu && withRes:
		y, err = ops.BatchNormRelu(in[0], in[1], in[2], bst, omask, in[3])
		ins = append(ins, res)
	case relu:
		y, err = ops.BatchNormRelu(in[0], in[1], in[2], bst, omask, nil)
	default:
		y, err = ops.BatchNorm(in[0], in[1], in[2], bst, omask)
	}
	if err != nil {
		t.Fatal(err)
	}
	if relu {
		kind, gkind = prog.BatchNormRelu, prog.BatchNormReluGrad
	}
	nd.Op = kind
	out := g.res(rows, d)
	g.mustRun(single(nd, out, ins...))
	same(t, "y", g.data(out), vals[T](t, do(t, y, g.values(ins...)...)))
	same64(t, "running mean", g.h.mean[nd.State], bst.RunMean)
	same64(t, "running variance", g.h.vr[nd.State], bst.RunVar)

	gs := grads(t, y, in[:len(ins)], g.gnode(gg, dy))
	dxv := do(t, gs[0], g.values(x, gamma, beta, dy)...)
	wantDX := plus(vals[T](t, dxv), g.data(sum)) // the summand the step folds in
	wantDG := vals[T](t, do(t, gs[1], dxv, g.value(gamma)))
	wantDB := vals[T](t, do(t, gs[2], dxv, g.value(beta)))
	dx, dg, db := g.res(rows, d), g.res(d), g.res(d)
	gnd := nd
	gnd.Op = gkind
	st := Step{Kind: gkind, Node: gnd, Outs: []int{dx, dg, db}, Ins: [][]int{{x, gamma, beta, dy}, {dx, gamma}, {dx, beta}}, Summand: sum, ColSum: -1}
	g.mustRun(st)
	same(t, "dx", g.data(dx), wantDX)
	same(t, "dγ", g.data(dg), wantDG)
	same(t, "dβ", g.data(db), wantDB)

	// without dγ: the same dx and dβ
	dx2, db2 := g.res(rows, d), g.res(d)
	st.Outs = []int{dx2, -1, db2}
	g.mustRun(st)
	same(t, "dx without dγ", g.data(dx2), wantDX)
	same(t, "dβ without dγ", g.data(db2), wantDB)

	// training needs 2 kept rows
	if training {
		for i := range keep {
			keep[i] = i == 5
		}
		if err := g.run(single(nd, out, ins...)); err == nil {
			t.Errorf("a training batch norm of 1 kept row runs")
		}
	}
}

// edges returns m random edges between n nodes, some of them padding (-1 at either end).
func edges(rng *rand.Rand, m, n int) (src, dst []int32) {
	src, dst = make([]int32, m), make([]int32, m)
	for i := range src {
		src[i], dst[i] = int32(rng.IntN(n)), int32(rng.IntN(n))
		switch i % 11 {
		case 3:
			src[i] = -1
		case 7:
			dst[i] = -1
		case 9:
			src[i], dst[i] = -1, -1
		}
	}
	return src, dst
}

func TestKernelsEdgeSum(t *testing.T) { forEach(t, testEdgeSum[float32], testEdgeSum[float64]) }

func testEdgeSum[T kern.Float](t *testing.T) {
	g := newRig[T](t, 5)
	const m, n, d = 200, 23, 9
	src, dst := edges(g.rng, m, n)
	osrc, odst := &ops.Index{Name: "src", Idx: src}, &ops.Index{Name: "dst", Idx: dst}
	e, hs, ht, gr := g.rand(m, d), g.rand(n, d), g.rand(n, d), g.rand(m, d)
	nd := node(prog.EdgeSum)
	nd.Src, nd.Dst, nd.Group = g.index(src, nil), g.index(dst, nil), 1
	gg := gorgonia.NewGraph()
	in := g.gnodes(gg, e, hs, ht)
	y, err := ops.EdgeSum(in[0], in[1], in[2], osrc, odst)
	if err != nil {
		t.Fatal(err)
	}
	out := g.res(m, d)
	g.mustRun(single(nd, out, e, hs, ht))
	same(t, "edge sum", g.data(out), vals[T](t, do(t, y, g.values(e, hs, ht)...)))

	gs := grads(t, y, in, g.gnode(gg, gr))
	dsv := do(t, gs[1], g.value(gr))
	wantS := vals[T](t, dsv)
	wantT := vals[T](t, do(t, gs[2], dsv))
	gnd := nd
	gnd.Op, gnd.Rows = prog.EdgeSumGrad, n
	ds, dt := g.res(n, d), g.res(n, d)
	st := Step{Kind: prog.EdgeSumGrad, Node: gnd, Outs: []int{ds, dt}, Ins: [][]int{{gr}, {gr}}, Summand: -1, ColSum: -1}
	g.mustRun(st)
	same(t, "g along src", g.data(ds), wantS)
	same(t, "g along dst", g.data(dt), wantT)
	dt2 := g.res(n, d)
	st.Outs = []int{-1, dt2}
	g.mustRun(st)
	same(t, "g along dst alone", g.data(dt2), wantT)
}

func TestKernelsGatedAggregate(t *testing.T) {
	forEach(t, testGatedAggregate[float32], testGatedAggregate[float64])
}

func testGatedAggregate[T kern.Float](t *testing.T) {
	g := newRig[T](t, 6)
	const m, n, nodes, d = 250, 31, 29, 8
	src, dst := edges(g.rng, m, min(n, nodes))
	osrc, odst := &ops.Index{Name: "src", Idx: src}, &ops.Index{Name: "dst", Idx: dst}
	ehat, bh, gr, sum := g.rand(m, d), g.rand(n, d), g.rand(nodes, d), g.rand(m, d)
	nd := node(prog.GatedAggregate)
	nd.Src, nd.Dst, nd.Rows, nd.Group = g.index(src, nil), g.index(dst, nil), nodes, 2
	gg := gorgonia.NewGraph()
	in := g.gnodes(gg, ehat, bh)
	y, err := ops.GatedAggregate(in[0], in[1], osrc, odst, nodes)
	if err != nil {
		t.Fatal(err)
	}
	out := g.res(nodes, d)
	g.mustRun(single(nd, out, ehat, bh))
	same(t, "aggregate", g.data(out), vals[T](t, do(t, y, g.values(ehat, bh)...)))

	gs := grads(t, y, in, g.gnode(gg, gr))
	dev := do(t, gs[0], g.values(ehat, bh, out, gr)...)
	wantDE := plus(vals[T](t, dev), g.data(sum)) // the summand the step folds in
	wantDB := vals[T](t, do(t, gs[1], dev, g.value(bh)))
	gnd := nd
	gnd.Op = prog.GatedAggregateGrad
	de, db := g.res(m, d), g.res(n, d)
	st := Step{Kind: prog.GatedAggregateGrad, Node: gnd, Outs: []int{de, db}, Ins: [][]int{{ehat, bh, out, gr}, {de, bh}}, Summand: sum, ColSum: -1}
	g.mustRun(st)
	same(t, "dê", g.data(de), wantDE)
	same(t, "dBh", g.data(db), wantDB)
	db2 := g.res(n, d)
	st.Outs, st.Summand = []int{-1, db2}, -1
	g.mustRun(st)
	same(t, "dBh alone", g.data(db2), wantDB)
}

// TestKernelsCoverPrograms checks that the table has a kernel for every program op.
func TestKernelsCoverPrograms(t *testing.T) {
	for _, o := range prog.Ops() {
		if !dispatch.Runs(o) {
			t.Errorf("no kernel for %v", o)
		}
	}
}

func TestKernelsOthers(t *testing.T) { forEach(t, testOthers[float32], testOthers[float64]) }

// testOthers checks the remaining ops, forward and gradient.
func testOthers[T kern.Float](t *testing.T) {
	g := newRig[T](t, 7)
	gg := gorgonia.NewGraph()
	const m, n, d = 150, 17, 12
	src, dst := edges(g.rng, m, n)
	wts := make([]float64, m)
	for i := range wts {
		wts[i] = g.rng.Float64()
	}
	check := func(what string, st Step, want gorgonia.Value) {
		t.Helper()
		g.mustRun(st)
		same(t, what, g.data(st.Outs[0]), vals[T](t, want))
	}
	apply := func(f func() (*gorgonia.Node, error)) *gorgonia.Node {
		t.Helper()
		y, err := f()
		if err != nil {
			t.Fatal(err)
		}
		return y
	}

	// gather and scatter-add, weighted
	x, e := g.rand(n, d), g.rand(m, d)
	ix := g.index(src, wts)
	oix := &ops.Index{Name: "src", Idx: src, W: wts}
	nd := node(prog.Gather)
	nd.Index = ix
	y := apply(func() (*gorgonia.Node, error) { return ops.Gather(g.gnode(gg, x), oix) })
	check("gather", single(nd, g.res(m, d), x), do(t, y, g.value(x)))
	nd.Op, nd.Rows = prog.ScatterAdd, n
	y = apply(func() (*gorgonia.Node, error) { return ops.ScatterAdd(g.gnode(gg, e), oix, n) })
	check("scatter-add", single(nd, g.res(n, d), e), do(t, y, g.value(e)))

	// segment softmax and max over dst
	odst := &ops.Index{Name: "dst", Idx: dst}
	nd = node(prog.SegmentSoftmax)
	nd.Index, nd.Rows, nd.Group = g.index(dst, nil), n, 3
	sc, dy := g.rand(m, 3), g.rand(m, 3)
	y = apply(func() (*gorgonia.Node, error) { return ops.SegmentSoftmax(g.gnode(gg, sc), odst, n) })
	out := g.res(m, 3)
	check("segment softmax", single(nd, out, sc), do(t, y, g.value(sc)))
	gnd := nd
	gnd.Op = prog.SegmentSoftmaxGrad
	check("segment softmax gradient", single(gnd, g.res(m, 3), out, dy),
		do(t, grads(t, y, gorgonia.Nodes{g.gnode(gg, sc)}, g.gnode(gg, dy))[0], g.values(out, dy)...))
	nd.Op = prog.SegmentMax
	gn := g.rand(n, d)
	y = apply(func() (*gorgonia.Node, error) { return ops.SegmentMax(g.gnode(gg, e), odst, n) })
	check("segment max", single(nd, g.res(n, d), e), do(t, y, g.value(e)))
	gnd.Op = prog.SegmentMaxGrad
	check("segment max gradient", single(gnd, g.res(m, d), gn),
		do(t, grads(t, y, gorgonia.Nodes{g.gnode(gg, e)}, g.gnode(gg, gn))[0], g.value(gn)))

	// layer norm, each gradient member its own step
	keep := make([]bool, m)
	for i := range keep {
		keep[i] = i%5 != 2
	}
	gamma, beta, ey := g.rand(d), g.rand(d), g.rand(m, d)
	nd = node(prog.LayerNorm)
	nd.Mask, nd.Group = g.mask(keep), 4
	in := g.gnodes(gg, e, gamma, beta)
	y = apply(func() (*gorgonia.Node, error) {
		return ops.LayerNorm(in[0], in[1], in[2], &ops.Mask{Name: "mask", Keep: keep})
	})
	check("layer norm", single(nd, g.res(m, d), e, gamma, beta), do(t, y, g.values(e, gamma, beta)...))
	gs := grads(t, y, in, g.gnode(gg, ey))
	for which, shape := range [][]int{{m, d}, {d}, {d}} {
		gnd := nd
		gnd.Op, gnd.Which = prog.LayerNormGrad, which
		outs, ins := []int{-1, -1, -1}, make([][]int, 3)
		for w := range ins {
			ins[w] = []int{gamma, ey}
		}
		outs[which] = g.res(shape...)
		g.mustRun(Step{Kind: prog.LayerNormGrad, Node: gnd, Outs: outs, Ins: ins, Summand: -1, ColSum: -1})
		same(t, fmt.Sprint("layer norm gradient ", which), g.data(outs[which]), vals[T](t, do(t, gs[which], g.values(gamma, ey)...)))
	}

	// MoNet: Gaussian weights and the kernel mix
	const kk, p = 4, 2
	u, mu, is, gw := g.rand(m, p), g.rand(kk, p), g.rand(kk, p), g.rand(m, kk)
	in = g.gnodes(gg, u, mu, is)
	y = apply(func() (*gorgonia.Node, error) { return ops.GaussianWeights(in[0], in[1], in[2]) })
	wv := g.res(m, kk)
	check("gaussian weights", single(node(prog.GaussianWeights), wv, u, mu, is), do(t, y, g.values(u, mu, is)...))
	gs = grads(t, y, in, g.gnode(gg, gw))
	for which, shape := range [][]int{{m, p}, {kk, p}, {kk, p}} {
		gnd := node(prog.GaussianWeightsGrad)
		gnd.Which = which
		outs, ins := []int{-1, -1, -1}, make([][]int, 3)
		for w := range ins {
			ins[w] = []int{u, mu, is, wv, gw}
		}
		outs[which] = g.res(shape...)
		g.mustRun(Step{Kind: prog.GaussianWeightsGrad, Node: gnd, Outs: outs, Ins: ins, Summand: -1, ColSum: -1})
		same(t, fmt.Sprint("gaussian weights gradient ", which), g.data(outs[which]), vals[T](t, do(t, gs[which], g.values(u, mu, is, wv, gw)...)))
	}
	xk, gk := g.rand(m, kk*3), g.rand(m, 3)
	in = g.gnodes(gg, xk, wv)
	y = apply(func() (*gorgonia.Node, error) { return ops.KernelMix(in[0], in[1]) })
	check("kernel mix", single(node(prog.KernelMix), g.res(m, 3), xk, wv), do(t, y, g.values(xk, wv)...))
	gs = grads(t, y, in, g.gnode(gg, gk))
	check("kernel mix dx", single(node(prog.KernelMixGradX), g.res(m, kk*3), gk, wv), do(t, gs[0], g.values(gk, wv)...))
	check("kernel mix dw", single(node(prog.KernelMixGradW), g.res(m, kk), xk, gk, wv), do(t, gs[1], g.values(xk, gk, wv)...))

	// heads, bias, column sums
	q, k, hw := g.rand(m, d), g.rand(m, d), g.rand(m, 3)
	nd = node(prog.HeadDot)
	nd.Heads = 3
	y = apply(func() (*gorgonia.Node, error) { return ops.HeadDot(g.gnode(gg, q), g.gnode(gg, k), 3) })
	check("head dot", single(nd, g.res(m, 3), q, k), do(t, y, g.values(q, k)...))
	y = apply(func() (*gorgonia.Node, error) { return ops.HeadScale(g.gnode(gg, q), g.gnode(gg, hw)) })
	check("head scale", single(node(prog.HeadScale), g.res(m, d), q, hw), do(t, y, g.values(q, hw)...))
	y = apply(func() (*gorgonia.Node, error) { return ops.AddBias(g.gnode(gg, q), g.gnode(gg, gamma)) })
	check("add bias", single(node(prog.AddBias), g.res(m, d), q, gamma), do(t, y, g.values(q, gamma)...))
	y = apply(func() (*gorgonia.Node, error) { return ops.ColSum(g.gnode(gg, q)) })
	check("column sums", single(node(prog.ColSum), g.res(d), q), do(t, y, g.value(q)))

	// dropout, in training and not
	var step uint64 = 12
	dst0 := ops.NewDropState("drop", 0.3, 99, &step)
	g.r.P.States = append(g.r.P.States, prog.State{Kind: prog.DropState, Name: "drop"})
	g.h.train, g.h.seed = append(g.h.train, true), append(g.h.seed, dst0.StepSeed())
	g.h.mean, g.h.vr = append(g.h.mean, nil), append(g.h.vr, nil)
	nd = node(prog.Dropout)
	nd.State, nd.Rate = len(g.h.train)-1, 0.3
	xn := g.gnode(gg, q)
	y = apply(func() (*gorgonia.Node, error) { return ops.Dropout(xn, dst0) })
	gd := grads(t, y, gorgonia.Nodes{xn}, g.gnode(gg, k))[0]
	for _, training := range []bool{true, false} {
		dst0.Training, g.h.train[nd.State] = training, training
		check(fmt.Sprint("dropout, training ", training), single(nd, g.res(m, d), q), do(t, y, g.value(q)))
		gnd := nd
		gnd.Op = prog.DropoutGrad
		check(fmt.Sprint("dropout gradient, training ", training), single(gnd, g.res(m, d), k), do(t, gd, g.value(k)))
	}

	// the losses: scalar results, scalar upstream gradients
	pred, target, lw, up := g.rand(m, 1), g.rand(m, 1), g.rand(m, 1), g.in(nil, []T{0.625})
	g.data(target)[3] = g.data(pred)[3]
	in = g.gnodes(gg, pred, target, lw)
	y = apply(func() (*gorgonia.Node, error) { return ops.MaskedL1(in[0], in[1], in[2]) })
	check("masked L1", single(node(prog.MaskedL1), g.res(), pred, target, lw), do(t, y, g.values(pred, target, lw)...))
	check("masked L1 gradient", single(node(prog.MaskedL1Grad), g.res(m, 1), pred, target, lw, up),
		do(t, grads(t, y, in, g.gnode(gg, up))[0], g.values(pred, target, lw, up)...))
	// binary cross-entropy with logits: targets in [0, 1], some weights 0 (missing labels)
	bz, by, bw := g.rand(m, 3), g.rand(m, 3), g.rand(m, 3)
	for i, v := range g.data(by) {
		g.data(by)[i] = T(math.Abs(float64(v)) / (1 + math.Abs(float64(v))))
		if i%7 == 2 {
			g.data(bw)[i] = 0
		}
	}
	in = g.gnodes(gg, bz, by, bw)
	y = apply(func() (*gorgonia.Node, error) { return ops.MaskedBCE(in[0], in[1], in[2]) })
	check("masked BCE", single(node(prog.MaskedBCE), g.res(), bz, by, bw), do(t, y, g.values(bz, by, bw)...))
	check("masked BCE gradient", single(node(prog.MaskedBCEGrad), g.res(m, 3), bz, by, bw, up),
		do(t, grads(t, y, in, g.gnode(gg, up))[0], g.values(bz, by, bw, up)...))
	labels, cw := make([]int32, m), make([]float64, m)
	for i := range labels {
		labels[i], cw[i] = int32(g.rng.IntN(5)), g.rng.Float64()
		if i%9 == 4 {
			labels[i] = -1
		}
	}
	z := g.rand(m, 5)
	nd = node(prog.WeightedCE)
	nd.Index = g.index(labels, cw)
	zn := g.gnode(gg, z)
	y = apply(func() (*gorgonia.Node, error) {
		return ops.WeightedCE(zn, &ops.Index{Name: "labels", Idx: labels, W: cw})
	})
	check("weighted cross-entropy", single(nd, g.res(), z), do(t, y, g.value(z)))
	gnd = nd
	gnd.Op = prog.WeightedCEGrad
	check("weighted cross-entropy gradient", single(gnd, g.res(m, 5), z, up), do(t, grads(t, y, gorgonia.Nodes{zn}, g.gnode(gg, up))[0], g.values(z, up)...))
}
