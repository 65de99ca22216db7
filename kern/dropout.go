package kern

// DropKeep is the dropout mask: whether element i survives under a step's seed at the given
// rate, splitmix64(seed ⊕ i·0x9e3779b97f4a7c15) mapped to [0, 1) and compared with the rate.
// The GPU's dropout kernel (cuda/kernels/dropout.cu) draws the same mask.
func DropKeep(seed uint64, i int, rate float64) bool {
	return unitFloat(Mix64(seed^uint64(i)*0x9e3779b97f4a7c15)) >= rate
}

// Mix64 is splitmix64's step: the increment 0x9e3779b97f4a7c15, then the finaliser.
func Mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// unitFloat maps 64 random bits to [0, 1).
func unitFloat(z uint64) float64 { return float64(z>>11) / (1 << 53) }

// Dropout writes out [n] = x·T(1/(1 − rate)) where DropKeep(seed, i, rate), else 0 (inverted
// dropout; cuda.Kernels.Dropout): the forward pass and, on the output gradient with the same
// seed, the backward pass. Rate 0 copies x. Outside training the callers copy x instead.
func Dropout[T Float](out, x []T, n int, rate float64, seed uint64) {
	out, x = out[:n], x[:n]
	if rate == 0 {
		copy(out, x)
		return
	}
	scale := T(1 / (1 - rate))
	ParallelRange(n, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if DropKeep(seed, i, rate) {
				out[i] = x[i] * scale
			} else {
				out[i] = 0
			}
		}
	})
}
