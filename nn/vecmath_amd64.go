package nn

// sigmoid8 is the AVX2/FMA logistic function of vecmath_amd64.s on the first len(src)/8·8 values.
//
//go:noescape
func sigmoid8(dst, src []float32)
