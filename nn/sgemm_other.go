//go:build !amd64

package nn

func kern6x16(a []float32, rs, cs int, b []float32, ldb int, c []float32, ldc int, k, acc int) {
	panic("kern6x16 without AVX2")
}

const haveKernel = false

func sigmoid8(dst, src []float32) { panic("sigmoid8 without AVX2") }
