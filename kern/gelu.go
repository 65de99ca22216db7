package kern

import "math"

// GELU in its tanh form (Hendrycks and Gimpel 2016; PyTorch's gelu(approximate="tanh")):
//
//	gelu(x) = ½·x·(1 + tanh(u)),  u = √(2/π)·(x + 0.044715·x³)
//	gelu'(x) = ½·(1 + t) + ½·x·(1 − t²)·√(2/π)·(1 + 3·0.044715·x²),  t = tanh(u)
//
// computed in float64 for either element type. The CUDA twin is ew_gelu and ew_gelu_grad in
// cuda/kernels/elementwise.cu (in float32: equal to rounding).
const (
	geluC = 0.7978845608028654 // √(2/π)
	geluA = 0.044715
)

func gelu(x float64) float64 { return 0.5 * x * (1 + math.Tanh(geluC*(x+geluA*x*x*x))) }

func geluGrad(x float64) float64 {
	t := math.Tanh(geluC * (x + geluA*x*x*x))
	return 0.5*(1+t) + 0.5*x*(1-t*t)*geluC*(1+3*geluA*x*x)
}

// Gelu sets out = gelu(x), in parallel chunks.
func Gelu[T Float](out, x []T) {
	ParallelRange(len(out), 4, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			out[i] = T(gelu(float64(x[i])))
		}
	})
}

// GeluGrad sets dx = g·gelu'(x) for the op's input x and output gradient g.
func GeluGrad[T Float](dx, x, g []T) {
	ParallelRange(len(dx), 4, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dx[i] = T(float64(g[i]) * geluGrad(float64(x[i])))
		}
	})
}
