package kern

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/chewxy/math32"
)

// Gorgonia's own element-wise operators (a + b, a − b, a ⊙ b, a ÷ b, tanh, sigmoid, exp, abs,
// sqrt),
// computed exactly as gorgonia.org/gorgonia v0.9.18 on gorgonia.org/tensor v0.9.24 computes
// them on the CPU when the op's Do runs (the call the CPU executor makes), bit for bit in
// float32 and float64 (a NaN result is a NaN; its payload follows the hardware, see below).
// What Gorgonia computes, read from its source and checked against it by the tests
// (gorgonia_test.go):
//
// Binary operators. Tensor ⊙ tensor goes to tensor's StdEng, which clones a and calls
// vecf32/vecf64 Add, Sub, Mul, Div on it (their plain Go loops: the assembly versions need the
// sse or avx build tag). Tensor ⊙ scalar clones the tensor and calls the execution package's
// AddVS…DivVS loops, dst[i] = a[i] ⊙ s. Scalar ⊙ tensor (the scalar on the left) makes a tensor
// filled with s and calls the vecf32/vecf64 loop on it with b, dst[i] = s ⊙ b[i]. Every one is
// plain IEEE arithmetic in the operands' type (float32 arithmetic rounds to float32 at each
// operation; no widening, no fused multiply-add), so subtraction with the scalar on the left
// is s − b[i], never −(b[i] − s). Division is the exception:
//
//   - tensor ÷ tensor and scalar ÷ tensor: vecf32.Div and vecf64.Div give +Inf wherever the
//     divisor is ±0, whatever the dividend (0 ÷ 0, NaN ÷ 0 and 1 ÷ −0 are all +Inf), and
//     a ÷ b elsewhere;
//   - tensor ÷ scalar: IEEE a[i] ÷ s (x ÷ ±0 is ±Inf or NaN), except for a tensor of one element,
//     where tensor's engine sees two one-element operands and takes vecf32/vecf64.Div, so a zero
//     scalar gives +Inf.
//
// Gorgonia's other entry points differ here: its UnsafeDo and UsePreallocDo (which
// gorgonia.TapeMachine may choose when an output overwrites an input or is preallocated) divide
// a scalar by a tensor of more than one element with plain IEEE division (3 ÷ −0 = −Inf).
// These kernels follow Do, the path the project's executor takes.
//
// Unary operators on a tensor (tensor's StdEng Tanh, Exp, Abs, Sqrt, and Apply for sigmoid):
//
//   - float32 tanh: math32.Tanh (chewxy/math32's Cephes tanhf, with its polynomial for
//     |x| < 0.625, 1 − 2/(math32.Exp(2|x|) + 1) above, ±1 beyond |x| > 44.01, and tanh(±0) = ±0),
//     not float64 math. float64 tanh: math.Tanh.
//   - float32 exp: math32.Exp, which on amd64 and arm64 is assembly of its own (not the Go code
//     in math32's exp.go), not correctly rounded. On amd64 (measured): NaN and +Inf are returned
//     as they are and −Inf gives 0; with k = round(x·log₂e), it gives +Inf from x = 88.37627
//     (k = 128), short of float32's overflow at 88.72284, and 0 below x = −87.68313 (k ≤ −127),
//     so subnormal results only just above that; and 0 again from x = 1.4885222e9 on, where
//     x·log₂e overflows the int32 conversion; errors reach about 118 ulp near the top of
//     the range. float64 exp: math.Exp.
//   - sigmoid is Gorgonia's own function, with branches: float32 x < −88 → 0, x > 15 → 1, else
//     float32(1 / (1 + math.Exp(float64(−x)))) (computed in float64, rounded once); float64
//     x < −709 → 0, x > 19 → 1, else 1 / (1 + math.Exp(−x)). NaN takes neither branch and gives
//     NaN. No tanh form.
//   - abs: math32.Abs and math.Abs, which clear the sign bit: abs(−0) = +0, abs(±Inf) = +Inf,
//     and abs(NaN) is the NaN with its sign cleared and payload kept.
//   - sqrt: math32.Sqrt (on amd64 and arm64 one instruction of its own assembly, SQRTSS /
//     FSQRTS) and math.Sqrt: IEEE square roots, correctly rounded in float32 and in float64
//     (so float32 sqrt equals float32(math.Sqrt(float64(x))), and CUDA's sqrtf, which is
//     correctly rounded without fast-math); sqrt(±0) = ±0, sqrt(+Inf) = +Inf, and a NaN for
//     x < 0 (−Inf included) and for NaN. Gorgonia's gradient of it is gradY ÷ (2 ⊙ y), its own
//     ⊙ with the scalar on the left and ÷ (on tensors, +Inf wherever y = 0).
//
// Unary operators on a scalar node (a *gorgonia.F32 or *F64, not a tensor) use Gorgonia's own
// per-value functions: the same as above (sqrt's are math32.Sqrt and math.Sqrt too) except
// float32 tanh, which is float32(math.Tanh(float64(x))) there (UnaryScalar).
//
// A scalar ⊙ scalar node is plain Go arithmetic on the two values; there is no kernel for it.
//
// NaN payloads: where an input is NaN, or an operation makes one (0 ÷ 0, ∞ − ∞, 0 · ∞), IEEE 754
// and Go leave the payload and sign of the result to the hardware and the order of the
// operands the compiler picks, so two correct loops may give NaNs of different bits. These
// kernels keep Gorgonia's loops' operand order (scalar ⊙ tensor runs the tensor ⊙ tensor loop on
// a block filled with s, as Gorgonia does), and on amd64 the tests find no NaN of other bits;
// what they promise is a NaN where Gorgonia gives a NaN, and abs's NaNs bit for bit (it only
// clears the sign). Every other result is the same bits.
//
// The kernels write dst and read the others, all of len(dst) (the inputs may be longer); dst
// may be one of the inputs, but must not overlap one partly. Long slices are split among
// goroutines (ParallelRange); each element is computed alone, so the result does not depend on
// their number.

// BinaryOp is one of Gorgonia's binary element-wise operators.
type BinaryOp uint8

// The binary operators.
const (
	OpAdd BinaryOp = iota // +
	OpSub                 // −
	OpMul                 // ⊙
	OpDiv                 // ÷, with Gorgonia's zero-divisor rules
)

func (op BinaryOp) String() string {
	switch op {
	case OpAdd:
		return "+"
	case OpSub:
		return "-"
	case OpMul:
		return "⊙"
	case OpDiv:
		return "÷"
	}
	return fmt.Sprintf("BinaryOp(%d)", uint8(op))
}

// UnaryOp is one of Gorgonia's unary element-wise operators.
type UnaryOp uint8

// The unary operators.
const (
	OpTanh UnaryOp = iota
	OpSigmoid
	OpExp
	OpAbs
	OpSqrt
)

func (op UnaryOp) String() string {
	switch op {
	case OpTanh:
		return "tanh"
	case OpSigmoid:
		return "sigmoid"
	case OpExp:
		return "exp"
	case OpAbs:
		return "abs"
	case OpSqrt:
		return "sqrt"
	}
	return fmt.Sprintf("UnaryOp(%d)", uint8(op))
}

// The relative cost of an element, for ParallelRange: arithmetic, and a transcendental function.
const (
	unitArith = 1
	unitFunc  = 16
)

// is32 reports whether T is a float32 type.
func is32[T Float]() bool {
	var z T
	return unsafe.Sizeof(z) == 4
}

// Binary sets dst = a ⊙ b for tensors a and b of one shape, as Gorgonia does (for OpDiv, +Inf
// wherever b is ±0).
func Binary[T Float](op BinaryOp, dst, a, b []T) {
	if op > OpDiv {
		panic(fmt.Sprintf("kern.Binary: %v", op))
	}
	n := len(dst)
	a, b = a[:n], b[:n]
	ParallelRange(n, unitArith, func(lo, hi int) { binaryTT(op, dst[lo:hi], a[lo:hi], b[lo:hi]) })
}

func binaryTT[T Float](op BinaryOp, dst, a, b []T) {
	b = b[:len(a)]
	switch op {
	case OpAdd:
		Add2(dst, a, b)
	case OpSub:
		for i, v := range a {
			dst[i] = v - b[i]
		}
	case OpMul:
		for i, v := range a {
			dst[i] = v * b[i]
		}
	case OpDiv:
		for i, v := range a {
			dst[i] = divZeroInf(v, b[i])
		}
	default:
		panic(fmt.Sprintf("kern.Binary: %v", op))
	}
}

// divZeroInf is vecf32/vecf64.Div's element: +Inf for a zero divisor.
func divZeroInf[T Float](a, b T) T {
	if b == 0 {
		return T(math.Inf(1))
	}
	return a / b
}

// BinaryScalarRight sets dst = a ⊙ s for a tensor a and a scalar s, as Gorgonia does (for
// OpDiv, IEEE division, except that a one-element a divided by ±0 gives +Inf).
func BinaryScalarRight[T Float](op BinaryOp, dst, a []T, s T) {
	if op > OpDiv {
		panic(fmt.Sprintf("kern.BinaryScalarRight: %v", op))
	}
	n := len(dst)
	a = a[:n]
	if op == OpDiv && n == 1 {
		dst[0] = divZeroInf(a[0], s)
		return
	}
	ParallelRange(n, unitArith, func(lo, hi int) { binaryTS(op, dst[lo:hi], a[lo:hi], s) })
}

func binaryTS[T Float](op BinaryOp, dst, a []T, s T) {
	dst = dst[:len(a)]
	switch op {
	case OpAdd:
		for i, v := range a {
			dst[i] = v + s
		}
	case OpSub:
		for i, v := range a {
			dst[i] = v - s
		}
	case OpMul:
		for i, v := range a {
			dst[i] = v * s
		}
	case OpDiv:
		for i, v := range a {
			dst[i] = v / s
		}
	default:
		panic(fmt.Sprintf("kern.BinaryScalarRight: %v", op))
	}
}

// BinaryScalarLeft sets dst = s ⊙ b for a scalar s and a tensor b, as Gorgonia does (s − b[i]
// for OpSub; for OpDiv, +Inf wherever b is ±0).
func BinaryScalarLeft[T Float](op BinaryOp, dst []T, s T, b []T) {
	n := len(dst)
	b = b[:n]
	if op > OpDiv {
		panic(fmt.Sprintf("kern.BinaryScalarLeft: %v", op))
	}
	ParallelRange(n, unitArith, func(lo, hi int) { binaryST(op, dst[lo:hi], s, b[lo:hi]) })
}

// binaryST does what Gorgonia does: it fills a tensor with s and runs the tensor⊙tensor loop on
// it and b (here a block at a time, from a buffer), which also keeps Gorgonia's operand order
// for + and ⊙, and so the bits of a NaN made of two NaNs.
func binaryST[T Float](op BinaryOp, dst []T, s T, b []T) {
	var buf [256]T
	for i := range buf {
		buf[i] = s
	}
	dst = dst[:len(b)]
	for lo := 0; lo < len(b); lo += len(buf) {
		hi := min(lo+len(buf), len(b))
		binaryTT(op, dst[lo:hi], buf[:hi-lo], b[lo:hi])
	}
}

// Unary sets dst = op(x) element-wise for a tensor x, as Gorgonia does (float32 tanh, exp and
// sqrt through chewxy/math32).
func Unary[T Float](op UnaryOp, dst, x []T) {
	if op > OpSqrt {
		panic(fmt.Sprintf("kern.Unary: %v", op))
	}
	n := len(dst)
	x = x[:n]
	unit := unitFunc
	if op == OpAbs {
		unit = unitArith
	}
	ParallelRange(n, unit, func(lo, hi int) { unary(op, dst[lo:hi], x[lo:hi]) })
}

func unary[T Float](op UnaryOp, dst, x []T) {
	dst = dst[:len(x)]
	f32 := is32[T]()
	switch op {
	case OpTanh:
		if f32 {
			for i, v := range x {
				dst[i] = T(math32.Tanh(float32(v)))
			}
		} else {
			for i, v := range x {
				dst[i] = T(math.Tanh(float64(v)))
			}
		}
	case OpSigmoid:
		lo, hi := T(-709), T(19)
		if f32 {
			lo, hi = -88, 15
		}
		for i, v := range x {
			switch {
			case v < lo:
				dst[i] = 0
			case v > hi:
				dst[i] = 1
			default:
				dst[i] = T(1 / (1 + math.Exp(float64(-v))))
			}
		}
	case OpExp:
		if f32 {
			for i, v := range x {
				dst[i] = T(math32.Exp(float32(v)))
			}
		} else {
			for i, v := range x {
				dst[i] = T(math.Exp(float64(v)))
			}
		}
	case OpAbs:
		if f32 {
			for i, v := range x {
				dst[i] = T(math32.Abs(float32(v)))
			}
		} else {
			for i, v := range x {
				dst[i] = T(math.Abs(float64(v)))
			}
		}
	case OpSqrt:
		if f32 {
			for i, v := range x {
				dst[i] = T(math32.Sqrt(float32(v)))
			}
		} else {
			for i, v := range x {
				dst[i] = T(math.Sqrt(float64(v)))
			}
		}
	default:
		panic(fmt.Sprintf("kern.Unary: %v", op))
	}
}

// UnaryScalar is op(x) for a scalar node, as Gorgonia computes it there: Unary's function,
// except float32 tanh, which is float32(math.Tanh(float64(x))) on a scalar.
func UnaryScalar[T Float](op UnaryOp, x T) T {
	if op == OpTanh && is32[T]() {
		return T(float32(math.Tanh(float64(x))))
	}
	v := [1]T{x}
	unary(op, v[:], v[:])
	return v[0]
}
