//go:build !amd64

package nn

func kern6x16(a []float32, rs, cs int, b []float32, ldb int, c []float32, ldc int, k, acc int) {
	panic("kern6x16 without AVX2")
}

const haveKernel = false

func sigmoid8(dst, src []float32) { panic("sigmoid8 without AVX2") }

func vAddTo(dst, a []float32)                      { panic("no AVX2 kernels on this architecture") }
func vAdd2(dst, a, b []float32)                    { panic("no AVX2 kernels on this architecture") }
func vAdd3(dst, a, b, c []float32)                 { panic("no AVX2 kernels on this architecture") }
func vRelu(dst, x []float32)                       { panic("no AVX2 kernels on this architecture") }
func vReluGrad(dst, y, g []float32)                { panic("no AVX2 kernels on this architecture") }
func vGatedFwd(num, den, h, b []float32)           { panic("no AVX2 kernels on this architecture") }
func vGatedBwd(de, db, h, g, b, o []float32)       { panic("no AVX2 kernels on this architecture") }
func vStats(s1, s2, x, k []float32)                { panic("no AVX2 kernels on this architecture") }
func vStats2(s1, s2, dy, x, mu []float32)          { panic("no AVX2 kernels on this architecture") }
func vAffine(dst, x, mu, p, q []float32)           { panic("no AVX2 kernels on this architecture") }
func vBNBack(dst, dy, x, mu, a, b, c []float32)    { panic("no AVX2 kernels on this architecture") }
func vAffineRelu(dst, x, mu, p, q []float32)       { panic("no AVX2 kernels on this architecture") }
func vAffineReluAdd(dst, x, mu, p, q, r []float32) { panic("no AVX2 kernels on this architecture") }
func vStatsRelu(s1, s2, g, x, mu, p, q []float32)  { panic("no AVX2 kernels on this architecture") }
func vBNBackRelu(dst, g, x, mu, p, q, a, b, c []float32) {
	panic("no AVX2 kernels on this architecture")
}
