package kern

import "math"

// GELU in its tanh form (Hendrycks and Gimpel 2016; PyTorch's gelu(approximate="tanh")):
//
//	gelu(x) = ½·x·(1 + tanh(u)),  u = √(2/π)·(x + 0.044715·x³)
//	gelu'(x) = ½·(1 + t) + ½·x·(1 − t²)·√(2/π)·(1 + 3·0.044715·x²),  t = tanh(u)
//
// computed in float64 for either element type. The tanh is math.Tanh's, four at a time on the
// AVX2 kernel vTanh64 (bit for bit math.Tanh; Tanhs), and in float32 the whole of gelu and
// gelu' runs on vGelu32 and vGeluGrad32 (bit for bit these functions), so the CPU's results do
// not depend on the kernels. The CUDA twin is ew_gelu and ew_gelu_grad in
// cuda/kernels/elementwise.cu (in float32: equal to rounding).
const (
	geluC = 0.7978845608028654 // √(2/π)
	geluA = 0.044715
)

// geluArg is u, the argument of the tanh.
func geluArg(x float64) float64 { return geluC * (x + geluA*x*x*x) }

// geluOf is gelu(x) from t = tanh(u).
func geluOf(x, t float64) float64 { return 0.5 * x * (1 + t) }

// geluGradOf is gelu'(x) from t = tanh(u).
func geluGradOf(x, t float64) float64 {
	return 0.5*(1+t) + 0.5*x*(1-t*t)*geluC*(1+3*geluA*x*x)
}

func gelu(x float64) float64     { return geluOf(x, math.Tanh(geluArg(x))) }
func geluGrad(x float64) float64 { return geluGradOf(x, math.Tanh(geluArg(x))) }

// Tanhs sets dst = math.Tanh(x) element by element: on vTanh64 where the CPU has AVX2 and FMA
// (the same bits), the rest and other CPUs by math.Tanh.
func Tanhs(dst, x []float64) {
	x = x[:len(dst)]
	n := 0
	if haveKernel {
		n = len(dst) &^ 3
		if n > 0 {
			vTanh64(dst[:n], x[:n])
		}
	}
	for i := n; i < len(dst); i++ {
		dst[i] = math.Tanh(x[i])
	}
}

// expSafe bounds the arguments for which vExp64 computes math.Exp (EXP4 in tanh_amd64.s): there
// archExp takes its main path (an exponent in [−1022, 1023]; 700·log2 e < 1010).
const expSafe = 700

// expBlock is how many values SegmentSoftmaxRows and GaussianWeights take through Exps at a
// time (on the stack).
const expBlock = 240

// expRows returns the buffer for rows of width values to take through Exps a block at a time,
// and how many rows it holds: block, or a heap row where one row is wider than expBlock.
func expRows(block *[expBlock]float64, width int) ([]float64, int) {
	width = max(width, 1)
	if width > expBlock {
		return make([]float64, width), 1
	}
	return block[:], expBlock / width
}

// Exps sets dst = math.Exp(x) element by element, bit for bit: on vExp64 where the CPU has AVX2
// and FMA, four at a time, for runs of arguments within ±expSafe; the others (NaN, the
// infinities, overflow, results below the normal range), the values left over from a run of
// four and other CPUs by math.Exp. dst may be x.
func Exps(dst, x []float64) {
	x = x[:len(dst)]
	n, i := len(dst), 0
	if !haveKernel {
		n = 0
	}
	for i < n {
		j := i // x[i:j] within ±expSafe, x[j] not (or j = n): read before dst[i:] is written
		for j < n && x[j] >= -expSafe && x[j] <= expSafe {
			j++
		}
		m := i + (j-i)&^3
		if m > i {
			vExp64(dst[i:m], x[i:m])
		}
		for e := min(j+1, n); m < e; m++ {
			dst[m] = math.Exp(x[m])
		}
		i = m
	}
	for ; i < len(dst); i++ {
		dst[i] = math.Exp(x[i])
	}
}

// geluBlock is how many values geluBlocks takes through Tanhs at a time (on the stack).
const geluBlock = 256

// Gelu sets out = gelu(x), in parallel chunks: in float32 on vGelu32 where the CPU has AVX2 and
// FMA (the same bits), else through Tanhs.
func Gelu[T Float](out, x []T) {
	o32, ok := f32(out)
	ParallelRange(len(out), 4, func(lo, hi int) {
		if ok {
			n := lo + (hi-lo)&^3
			vGelu32(o32[lo:n], s32(x[lo:n], o32[lo:n]))
			lo = n
		}
		geluBlocks(x, lo, hi, func(b int, t []float64) {
			for i, tv := range t {
				out[b+i] = T(geluOf(float64(x[b+i]), tv))
			}
		})
	})
}

// GeluGrad sets dx = g·gelu'(x) for the op's input x and output gradient g: in float32 on
// vGeluGrad32 where the CPU has AVX2 and FMA (the same bits), else through Tanhs.
func GeluGrad[T Float](dx, x, g []T) {
	d32, ok := f32(dx)
	ParallelRange(len(dx), 4, func(lo, hi int) {
		if ok {
			n := lo + (hi-lo)&^3
			d := d32[lo:n]
			vGeluGrad32(d, s32(x[lo:n], d), s32(g[lo:n], d))
			lo = n
		}
		geluBlocks(x, lo, hi, func(b int, t []float64) {
			for i, tv := range t {
				dx[b+i] = T(float64(g[b+i]) * geluGradOf(float64(x[b+i]), tv))
			}
		})
	})
}

// geluBlocks calls f for each block of at most geluBlock values from b in [lo, hi), with t the
// tanh of each value's GELU argument (geluArg, Tanhs).
func geluBlocks[T Float](x []T, lo, hi int, f func(b int, t []float64)) {
	var u, t [geluBlock]float64
	for b := lo; b < hi; b += geluBlock {
		n := min(geluBlock, hi-b)
		for i, v := range x[b : b+n] {
			u[i] = geluArg(float64(v))
		}
		Tanhs(t[:n], u[:n])
		f(b, t[:n])
	}
}
