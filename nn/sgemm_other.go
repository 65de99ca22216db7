//go:build !amd64

package nn

func kern4x16(a []float32, lda int, b []float32, ldb int, c []float32, ldc int, k int) {
	panic("kern4x16 without AVX2")
}

const haveKernel = false
