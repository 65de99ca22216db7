//go:build !amd64

package kern

var kernels []microKernel

func kern6x16(a []float32, rs, cs int, b []float32, ldb int, c []float32, ldc int, k, acc int, bias []float32) {
	panic("no AVX2 kernels on this architecture")
}

func kern12x16(a []float32, rs, cs int, b []float32, ldb int, c []float32, ldc int, k, acc int, bias []float32, cols int) {
	panic("no AVX-512 kernels on this architecture")
}

// haveKernel is a variable, as on amd64, so that the tests that switch it build here too.
var haveKernel = false

func vAddTo(dst, a []float32) { panic("no AVX2 kernels on this architecture") }
func vSumRows(o, g []float32, idx []int32, n, stride int) {
	panic("no AVX-512 kernels on this architecture")
}
func vStatsRows(s1, s2, x, k []float32, keep []bool, n, stride int) {
	panic("no AVX-512 kernels on this architecture")
}
func vStats2Rows(s1, s2, dy, x, mu []float32, keep []bool, n, stride int) {
	panic("no AVX-512 kernels on this architecture")
}
func vStatsReluRows(s1, s2, g, x, mu, p, q []float32, keep []bool, n, stride int) {
	panic("no AVX-512 kernels on this architecture")
}
func vHeadDot(out, a, b []float32, idx []int32, m, d, h, w, k1, k2, k3 int) {
	panic("no AVX-512 kernels on this architecture")
}
func vHeadScale(out, x, s []float32, idx []int32, m, d, h, k1, k2, k3 int) {
	panic("no AVX-512 kernels on this architecture")
}
func vAdd2(dst, a, b []float32)                    { panic("no AVX2 kernels on this architecture") }
func vAdd3(dst, a, b, c []float32)                 { panic("no AVX2 kernels on this architecture") }
func vRelu(dst, x []float32)                       { panic("no AVX2 kernels on this architecture") }
func vReluGrad(dst, y, g []float32)                { panic("no AVX2 kernels on this architecture") }
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
func vGatedFwdSig(eta, num, den, e, b []float32)   { panic("no AVX2 kernels on this architecture") }
func vGatedFwdSig16(eta, num, den, e, b []float32) { panic("no AVX-512 kernels on this architecture") }

func vTanh64(dst, x []float64) { panic("no AVX2 kernels on this architecture") }
func vExp64(dst, x []float64)  { panic("no AVX2 kernels on this architecture") }

func vGelu32(out, x []float32)       { panic("no AVX2 kernels on this architecture") }
func vGeluGrad32(dx, x, g []float32) { panic("no AVX2 kernels on this architecture") }

func vNarrow8(out, a, b8 []float32, k, n int) { panic("no AVX2 kernels on this architecture") }

func vScale(dst, x []float32, c float32) { panic("no AVX2 kernels on this architecture") }
func vAxpy(dst, x []float32, c float32)  { panic("no AVX2 kernels on this architecture") }

// tailK and haveTailK are false: no AVX-512 loops here.
var tailK, haveTailK = false, false
