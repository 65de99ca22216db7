package nn

import "math"

// sigmoidInto sets dst[i] = 1/(1 + exp(-src[i])), in parallel chunks; float32 uses the AVX2
// kernel where the CPU has it.
func sigmoidInto[T Float](dst, src []T) {
	parallelRange(len(src), 16, func(lo, hi int) {
		d, s := dst[lo:hi], src[lo:hi]
		n := 0
		if d32, ok := any(d).([]float32); ok && haveKernel {
			sigmoid8(d32, any(s).([]float32))
			n = len(s) / 8 * 8
		}
		for i := n; i < len(s); i++ {
			d[i] = T(1 / (1 + math.Exp(-float64(s[i]))))
		}
	})
}
