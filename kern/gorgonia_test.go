package kern_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"

	"github.com/rewiregnn/rewiregnn/kern"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The element-wise kernels (elementwise.go) against Gorgonia itself: every op, dtype and operand
// form is built with Gorgonia's exported API, run by gorgonia.NewTapeMachine and by the op's Do
// (the call the project's CPU executor makes), and compared with the kernel bit for bit.
//
// NaN: where Gorgonia's result is a NaN the kernel's must be a NaN; the NaN's own bits (sign and
// payload) are counted and logged when they differ, not failed: IEEE 754 and Go leave them to
// the hardware (x86 makes 0/0 the negative default NaN and passes on the first operand's NaN
// when both are NaN; other processors differ) and to the operand order the compiler chooses for
// a commutative + or ·, so they are not part of what an algorithm computes. (The kernels keep
// Gorgonia's operand order, and on amd64 no NaN differs.) abs is the exception: it is a bit
// operation (clear the sign), so its NaNs must have the same bits too. Every other result must
// have the same bits.

type float interface{ float32 | float64 }

func is32[T float]() bool {
	var z T
	return unsafe.Sizeof(z) == 4
}

func dtypeOf[T float]() tensor.Dtype {
	if is32[T]() {
		return tensor.Float32
	}
	return tensor.Float64
}

func bitsOf[T float](v T) uint64 {
	if is32[T]() {
		return uint64(math.Float32bits(float32(v)))
	}
	return math.Float64bits(float64(v))
}

func isNaN[T float](v T) bool { return v != v }

// compare fails t where got and want differ in bits (NaN: see above; strictNaN: NaNs too) and
// returns the number of NaNs whose bits differ. in describes element i for the message.
func compare[T float](t *testing.T, what string, got, want []T, in func(i int) string, strictNaN ...bool) (nanBits int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, Gorgonia %d", what, len(got), len(want))
	}
	bad := 0
	for i := range want {
		g, w := got[i], want[i]
		switch {
		case isNaN(w) && isNaN(g) && len(strictNaN) == 0:
			if bitsOf(g) != bitsOf(w) {
				nanBits++
				if nanBits <= 3 {
					t.Logf("%s: %s = NaN %#x, Gorgonia NaN %#x", what, in(i), bitsOf(g), bitsOf(w))
				}
			}
		case bitsOf(g) != bitsOf(w):
			if bad++; bad <= 5 {
				t.Errorf("%s: %s = %v (%#x), Gorgonia %v (%#x)", what, in(i), g, bitsOf(g), w, bitsOf(w))
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d values differ in all", what, bad)
	}
	return nanBits
}

// specials are the values every op is tried on: zeros, infinities, NaN, subnormals, the ends
// of the normal range, ordinary values.
func specials[T float]() []T {
	inf, nan := math.Inf(1), math.NaN()
	vs := []float64{0, math.Copysign(0, -1), inf, -inf, nan, -nan, 1, -1, 0.5, -2, 3, 1e-3, -7.25, 1e10, -1e-10}
	if is32[T]() {
		vs = append(vs, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
			float64(math.Float32frombits(0x007fffff)), -float64(math.Float32frombits(0x007fffff)), // largest subnormal
			float64(math.Float32frombits(0x00800000)), -float64(math.Float32frombits(0x00800000)), // smallest normal
			math.MaxFloat32, -math.MaxFloat32, float64(math.Float32frombits(0x7fc12345))) // a NaN with a payload
	} else {
		vs = append(vs, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
			math.Float64frombits(0x000fffffffffffff), -math.Float64frombits(0x000fffffffffffff),
			math.Float64frombits(0x0010000000000000), -math.Float64frombits(0x0010000000000000),
			math.MaxFloat64, -math.MaxFloat64, math.Float64frombits(0x7ff8000000012345))
	}
	out := make([]T, len(vs))
	for i, v := range vs {
		out[i] = T(v)
	}
	return out
}

// randoms are n values: random bit patterns (every exponent, subnormals, NaNs with payloads) and
// normal values at scales from 1e-30 to 1e30.
func randoms[T float](rng *rand.Rand, n int) []T {
	out := make([]T, n)
	scales := []float64{1e-30, 1e-3, 1, 10, 100, 1e30}
	for i := range out {
		switch {
		case i%2 == 0 && is32[T]():
			out[i] = T(math.Float32frombits(rng.Uint32()))
		case i%2 == 0:
			out[i] = T(math.Float64frombits(rng.Uint64()))
		default:
			out[i] = T(rng.NormFloat64() * scales[rng.IntN(len(scales))])
		}
	}
	return out
}

// near returns the 25 representable values on either side of each of xs, and xs.
func near[T float](xs ...float64) []T {
	var out []T
	for _, x := range xs {
		v := T(x)
		lo, hi := v, v
		for k := 0; k < 25; k++ {
			if is32[T]() {
				lo, hi = T(math.Nextafter32(float32(lo), float32(math.Inf(-1)))), T(math.Nextafter32(float32(hi), float32(math.Inf(1))))
			} else {
				lo, hi = T(math.Nextafter(float64(lo), math.Inf(-1))), T(math.Nextafter(float64(hi), math.Inf(1)))
			}
			out = append(out, lo, hi)
		}
		out = append(out, v)
	}
	return out
}

// unaryInputs are the arguments the unary ops are tried on: specials, the neighbourhoods of
// every branch point of Gorgonia's functions (sigmoid's −88/15 and −709/19, tanh's 0.625 and
// 44.01 (math32) or 22 (math), exp's overflow and underflow (math32.Exp's own on amd64 too: its
// +Inf from 88.37627, 0 below −87.68313 and from 1.4885222e9) and the float32 subnormal range),
// sqrt's exact squares 1, 4 and 2²⁰ and float32's largest value, the first fixed of them, then
// a sweep of [−120, 120] and of [−750, 750], and randoms.
func unaryInputs[T float](rng *rand.Rand) (xs []T, fixed int) {
	xs = specials[T]()
	points := []float64{88, 15, 709, 19, 0.625, 0.5 * 88.02969187150841, 22, 88.72283935546875, 87.33654475, 103.97208, 709.782712893384, 708.3964185322641, 745.1332191019411, 1.0 / (1 << 28), 1e-8, 88.37627, 87.68313, 1.4885222e9, 1, 4, 1 << 20, math.MaxFloat32}
	for _, p := range points {
		xs = append(xs, near[T](p, -p)...)
	}
	fixed = len(xs)
	for x := -120.0; x <= 120; x += 0.0137 {
		xs = append(xs, T(x))
	}
	for x := -750.0; x <= 750; x += 0.37 {
		xs = append(xs, T(x))
	}
	return append(xs, randoms[T](rng, 40000)...), fixed
}

var binaryOps = []struct {
	op kern.BinaryOp
	g  func(a, b *gorgonia.Node) (*gorgonia.Node, error)
}{{kern.OpAdd, gorgonia.Add}, {kern.OpSub, gorgonia.Sub}, {kern.OpMul, gorgonia.HadamardProd}, {kern.OpDiv, gorgonia.HadamardDiv}}

var unaryOps = []struct {
	op kern.UnaryOp
	g  func(a *gorgonia.Node) (*gorgonia.Node, error)
}{{kern.OpTanh, gorgonia.Tanh}, {kern.OpSigmoid, gorgonia.Sigmoid}, {kern.OpExp, gorgonia.Exp}, {kern.OpAbs, gorgonia.Abs}, {kern.OpSqrt, gorgonia.Sqrt}}

// operand forms of a binary op
const (
	tensorTensor = iota
	tensorScalar
	scalarTensor
)

var formNames = []string{"tensor⊙tensor", "tensor⊙scalar", "scalar⊙tensor"}

// gorgoniaGraph is one op on a graph of its own, with its inputs (a tensor or scalar each),
// run by a tape machine and by the op's Do.
type gorgoniaGraph[T float] struct {
	g   *gorgonia.ExprGraph
	in  []*gorgonia.Node
	out *gorgonia.Node
	m   gorgonia.VM
}

func newGraph[T float](t *testing.T, n int, scalar []bool, build func(in []*gorgonia.Node) (*gorgonia.Node, error)) *gorgoniaGraph[T] {
	t.Helper()
	gg := &gorgoniaGraph[T]{g: gorgonia.NewGraph()}
	for i, s := range scalar {
		name := string(rune('a' + i))
		if s {
			gg.in = append(gg.in, gorgonia.NewScalar(gg.g, dtypeOf[T](), gorgonia.WithName(name)))
		} else {
			gg.in = append(gg.in, gorgonia.NewTensor(gg.g, dtypeOf[T](), 1, gorgonia.WithShape(n), gorgonia.WithName(name)))
		}
	}
	out, err := build(gg.in)
	if err != nil {
		t.Fatal(err)
	}
	gg.out = out
	gg.m = gorgonia.NewTapeMachine(gg.g)
	t.Cleanup(func() { gg.m.Close() })
	return gg
}

// value makes input i's value from v (a fresh copy; a scalar input takes v[0]).
func (gg *gorgoniaGraph[T]) value(i int, v []T) gorgonia.Value {
	if gg.in[i].IsScalar() {
		if is32[T]() {
			return gorgonia.NewF32(float32(v[0]))
		}
		return gorgonia.NewF64(float64(v[0]))
	}
	return tensor.New(tensor.WithShape(len(v)), tensor.WithBacking(append([]T(nil), v...)))
}

// run returns the op's result on the inputs by the tape machine and by Do.
func (gg *gorgoniaGraph[T]) run(t *testing.T, inputs ...[]T) (tape, do []T) {
	t.Helper()
	for i, v := range inputs {
		if err := gorgonia.Let(gg.in[i], gg.value(i, v)); err != nil {
			t.Fatal(err)
		}
	}
	gg.m.Reset()
	if err := gg.m.RunAll(); err != nil {
		t.Fatal(err)
	}
	return data[T](t, gg.out.Value()), gg.do(t, inputs...)
}

// do returns the op's result on the inputs by Do.
func (gg *gorgoniaGraph[T]) do(t *testing.T, inputs ...[]T) []T {
	t.Helper()
	vals := make([]gorgonia.Value, len(inputs))
	for i, v := range inputs {
		vals[i] = gg.value(i, v)
	}
	v, err := gg.out.Op().Do(vals...)
	if err != nil {
		t.Fatal(err)
	}
	return data[T](t, v)
}

// data copies a value's numbers.
func data[T float](t *testing.T, v gorgonia.Value) []T {
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

// TestBinaryMatchesGorgonia checks + − ⊙ ÷ in float32 and float64, tensor⊙tensor (every pair of
// specials, randoms; long enough to run in parallel), tensor⊙scalar and scalar⊙tensor (every
// special and some randoms as the scalar, against specials and randoms), and every form on
// one-element tensors (where Gorgonia's division takes another path).
func TestBinaryMatchesGorgonia(t *testing.T) {
	t.Run("float32", testBinary[float32])
	t.Run("float64", testBinary[float64])
}

func testBinary[T float](t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	sp := specials[T]()
	// tensor⊙tensor: the specials' cross product, then randoms against randoms and specials
	var a, b []T
	for _, x := range sp {
		for _, y := range sp {
			a, b = append(a, x), append(b, y)
		}
	}
	a, b = append(a, randoms[T](rng, 70000)...), append(b, randoms[T](rng, 70000)...)
	for i := 0; i < 4000; i++ {
		a, b = append(a, sp[rng.IntN(len(sp))]), append(b, T(rng.NormFloat64()))
		a, b = append(a, T(rng.NormFloat64())), append(b, sp[rng.IntN(len(sp))])
	}
	x := append(append([]T(nil), sp...), randoms[T](rng, 3000)...)
	scalars := append(append([]T(nil), sp...), randoms[T](rng, 8)...)
	nanBits := 0
	for _, o := range binaryOps {
		for form := range formNames {
			what := o.op.String() + " " + formNames[form]
			var gg *gorgoniaGraph[T]
			check := func(av, bv []T, n int) {
				var got []T
				var tape, do []T
				var in func(i int) string
				switch form {
				case tensorTensor:
					got = make([]T, n)
					kern.Binary(o.op, got, av, bv)
					tape, do = gg.run(t, av, bv)
					in = func(i int) string { return describe(av[i]) + " " + o.op.String() + " " + describe(bv[i]) }
				case tensorScalar:
					got = make([]T, n)
					kern.BinaryScalarRight(o.op, got, av, bv[0])
					tape, do = gg.run(t, av, bv)
					in = func(i int) string { return describe(av[i]) + " " + o.op.String() + " scalar " + describe(bv[0]) }
				case scalarTensor:
					got = make([]T, n)
					kern.BinaryScalarLeft(o.op, got, av[0], bv)
					tape, do = gg.run(t, av, bv)
					in = func(i int) string { return "scalar " + describe(av[0]) + " " + o.op.String() + " " + describe(bv[i]) }
				}
				nanBits += compare(t, what+" (Do)", got, do, in)
				nanBits += compare(t, what+" (tape machine)", got, tape, in)
			}
			scalar := []bool{form == scalarTensor, form == tensorScalar}
			build := func(in []*gorgonia.Node) (*gorgonia.Node, error) { return o.g(in[0], in[1]) }
			switch form {
			case tensorTensor:
				gg = newGraph[T](t, len(a), scalar, build)
				check(a, b, len(a))
			case tensorScalar:
				gg = newGraph[T](t, len(x), scalar, build)
				for _, s := range scalars {
					check(x, []T{s}, len(x))
				}
			case scalarTensor:
				gg = newGraph[T](t, len(x), scalar, build)
				for _, s := range scalars {
					check([]T{s}, x, len(x))
				}
			}
			// one-element tensors
			gg = newGraph[T](t, 1, scalar, build)
			for _, u := range sp {
				for _, v := range sp {
					check([]T{u}, []T{v}, 1)
				}
			}
			if t.Failed() {
				return
			}
		}
	}
	if nanBits > 0 {
		t.Logf("%d NaN results with other bits than Gorgonia's (both NaN)", nanBits)
	}
}

func describe[T float](v T) string { return fmt.Sprintf("%v (%#x)", v, bitsOf(v)) }

// TestUnaryMatchesGorgonia checks tanh, sigmoid, exp, abs, sqrt in float32 and float64 on tensors
// (specials, the branch points, sweeps, randoms; long enough to run in parallel), and on
// scalar nodes (UnaryScalar) and one-element tensors for the specials, the branch points and a
// sample of the rest.
func TestUnaryMatchesGorgonia(t *testing.T) {
	t.Run("float32", testUnary[float32])
	t.Run("float64", testUnary[float64])
}

func testUnary[T float](t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	x, fixed := unaryInputs[T](rng)
	nanBits, scalarTanhDiffers := 0, 0
	for _, o := range unaryOps {
		what := o.op.String()
		build := func(in []*gorgonia.Node) (*gorgonia.Node, error) { return o.g(in[0]) }
		in := func(i int) string { return what + "(" + describe(x[i]) + ")" }
		gg := newGraph[T](t, len(x), []bool{false}, build)
		got := make([]T, len(x))
		kern.Unary(o.op, got, x)
		tape, do := gg.run(t, x)
		strict := []bool{}
		if o.op == kern.OpAbs {
			strict = append(strict, true)
		}
		nanBits += compare(t, what+" tensor (Do)", got, do, in, strict...)
		nanBits += compare(t, what+" tensor (tape machine)", got, tape, in, strict...)

		one := newGraph[T](t, 1, []bool{false}, build)
		sc := newGraph[T](t, 1, []bool{true}, build)
		// scalars and one-element tensors: Do on the specials, the branch points and every 13th
		// argument after them (every 3rd for tanh), the tape machine (slow to start) on fewer
		var args, gotS, doS, got1, do1, argsT, gotST, tapeS, got1T, tape1 []T
		for i, v := range x {
			if i >= fixed && i%13 != 0 && (i%3 != 0 || o.op != kern.OpTanh) {
				continue
			}
			y := make([]T, 1)
			kern.Unary(o.op, y, []T{v})
			ys := kern.UnaryScalar(o.op, v)
			args, gotS, got1 = append(args, v), append(gotS, ys), append(got1, y[0])
			doS, do1 = append(doS, sc.do(t, []T{v})...), append(do1, one.do(t, []T{v})...)
			if o.op == kern.OpTanh && bitsOf(y[0]) != bitsOf(ys) {
				scalarTanhDiffers++
			}
			if i%5 == 0 && (i < fixed || i%37 == 0) {
				tp, _ := sc.run(t, []T{v})
				tp1, _ := one.run(t, []T{v})
				argsT, gotST, tapeS, got1T, tape1 = append(argsT, v), append(gotST, ys), append(tapeS, tp...), append(got1T, y[0]), append(tape1, tp1...)
			}
		}
		inS := func(i int) string { return what + "(" + describe(args[i]) + ")" }
		inT := func(i int) string { return what + "(" + describe(argsT[i]) + ")" }
		nanBits += compare(t, what+" scalar (Do)", gotS, doS, inS, strict...)
		nanBits += compare(t, what+" scalar (tape machine)", gotST, tapeS, inT, strict...)
		nanBits += compare(t, what+" one-element tensor (Do)", got1, do1, inS, strict...)
		nanBits += compare(t, what+" one-element tensor (tape machine)", got1T, tape1, inT, strict...)
	}
	if nanBits > 0 {
		t.Logf("%d NaN results with other bits than Gorgonia's (both NaN)", nanBits)
	}
	if is32[T]() {
		t.Logf("float32 tanh: a scalar node's and a tensor's differ on %d of the arguments", scalarTanhDiffers)
	}
}

// TestSqrtCorrectlyRounded checks float32 sqrt against an independent reference: the float64
// square root rounded to float32, which is the correctly rounded float32 result (float64 has more
// than 2·24 + 2 bits, so the double rounding is exact), as CUDA's sqrtf is without fast-math, so
// the GPU kernel may be held to the same bits. It takes every 251st bit pattern (all exponents,
// subnormals, negatives, infinities, NaNs), and checks sqrt(−0) = −0 and a NaN below zero.
func TestSqrtCorrectlyRounded(t *testing.T) {
	const stride = 251
	xs := make([]float32, 0, 1<<32/stride+1)
	for b := uint64(0); b < 1<<32; b += stride {
		xs = append(xs, math.Float32frombits(uint32(b)))
	}
	got := make([]float32, len(xs))
	kern.Unary(kern.OpSqrt, got, xs)
	bad := 0
	for i, x := range xs {
		want := float32(math.Sqrt(float64(x)))
		if isNaN(want) && isNaN(got[i]) {
			continue
		}
		if bitsOf(got[i]) != bitsOf(want) {
			if bad++; bad <= 5 {
				t.Errorf("sqrt(%s) = %s, correctly rounded %s", describe(x), describe(got[i]), describe(want))
			}
		}
	}
	if bad > 5 {
		t.Errorf("%d of %d values differ", bad, len(xs))
	}
	negZero := float32(math.Copysign(0, -1))
	if y := kern.UnaryScalar(kern.OpSqrt, negZero); bitsOf(y) != bitsOf(negZero) {
		t.Errorf("sqrt(−0) = %s, want −0", describe(y))
	}
	for _, x := range []float64{-1, -1e-300, math.Inf(-1)} {
		if y := kern.UnaryScalar(kern.OpSqrt, x); !isNaN(y) {
			t.Errorf("sqrt(%v) = %v, want NaN", x, y)
		}
	}
}

// TestElementwiseIndependentOfThreads runs every element-wise kernel on inputs long enough to be
// split among goroutines with 1, 2, 3, 4 and 8 of them, and requires the same bits each time;
// and checks that dst may be an input.
func TestElementwiseIndependentOfThreads(t *testing.T) {
	t.Run("float32", testThreads[float32])
	t.Run("float64", testThreads[float64])
}

func testThreads[T float](t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewPCG(75, 76))
	const n = 300007
	a, b := randoms[T](rng, n), randoms[T](rng, n)
	s := T(rng.NormFloat64())
	run := func() map[string][]T {
		out := map[string][]T{}
		for _, o := range binaryOps {
			d := make([]T, n)
			kern.Binary(o.op, d, a, b)
			out[o.op.String()+" tensor⊙tensor"] = d
			d = make([]T, n)
			kern.BinaryScalarRight(o.op, d, a, s)
			out[o.op.String()+" tensor⊙scalar"] = d
			d = make([]T, n)
			kern.BinaryScalarLeft(o.op, d, s, b)
			out[o.op.String()+" scalar⊙tensor"] = d
		}
		for _, o := range unaryOps {
			d := make([]T, n)
			kern.Unary(o.op, d, a)
			out[o.op.String()] = d
		}
		return out
	}
	runtime.GOMAXPROCS(1)
	want := run()
	for _, procs := range []int{2, 3, 4, 8} {
		runtime.GOMAXPROCS(procs)
		for name, got := range run() {
			for i := range got {
				if bitsOf(got[i]) != bitsOf(want[name][i]) {
					t.Fatalf("%s with %d goroutines: [%d] = %v, with one %v", name, procs, i, got[i], want[name][i])
				}
			}
		}
	}
	// in place
	for _, o := range binaryOps {
		d := append([]T(nil), a...)
		kern.Binary(o.op, d, d, b)
		e := append([]T(nil), b...)
		kern.BinaryScalarLeft(o.op, e, s, e)
		for i := range d {
			if bitsOf(d[i]) != bitsOf(want[o.op.String()+" tensor⊙tensor"][i]) || bitsOf(e[i]) != bitsOf(want[o.op.String()+" scalar⊙tensor"][i]) {
				t.Fatalf("%v in place: [%d] differs", o.op, i)
			}
		}
	}
}
