package kern

import "golang.org/x/sys/cpu"

// Float32 element-wise loops of vec_amd64.s (AVX2/FMA); see vec.go for their meaning.

// tailK makes the loops of vec_amd64.s compute their last len mod 8 values under an AVX-512
// mask register instead of AVX2's VMASKMOVPS (the same values, faster; see LOOP there), and the
// gate's sigmoid run on 16 lanes (vGatedFwdSig16: compute-bound, 1.4 times as fast; the simple
// loops are bound by memory and gained nothing from 16 lanes); tests switch it.
var tailK = haveTailK

// haveTailK: this CPU has the mask registers tailK needs.
var haveTailK = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL

//go:noescape
func vAddTo(dst, a []float32)

//go:noescape
func vAdd2(dst, a, b []float32)

// vSumRows adds rows of g to o, kept in registers (vec_amd64.s; see SumRows, SumRowsAt).
// Needs AVX512F.
//
//go:noescape
func vSumRows(o, g []float32, idx []int32, n, stride int)

//go:noescape
func vAdd3(dst, a, b, c []float32)

//go:noescape
func vRelu(dst, x []float32)

//go:noescape
func vReluGrad(dst, y, g []float32)

//go:noescape
func vGatedBwd(de, db, h, g, b, o []float32)

//go:noescape
func vStats(s1, s2, x, k []float32)

//go:noescape
func vStats2(s1, s2, dy, x, mu []float32)

//go:noescape
func vAffine(dst, x, mu, p, q []float32)

//go:noescape
func vBNBack(dst, dy, x, mu, a, b, c []float32)

//go:noescape
func vAffineRelu(dst, x, mu, p, q []float32)

//go:noescape
func vAffineReluAdd(dst, x, mu, p, q, r []float32)

//go:noescape
func vStatsRelu(s1, s2, g, x, mu, p, q []float32)

//go:noescape
func vBNBackRelu(dst, g, x, mu, p, q, a, b, c []float32)

//go:noescape
func vGatedFwdSig(eta, num, den, e, b []float32)

// vGatedFwdSig16 is vGatedFwdSig on 16 lanes (AVX-512F), bit for bit the same values.
//
//go:noescape
func vGatedFwdSig16(eta, num, den, e, b []float32)

// vExp64 is math.Exp on four float64 at a time, for |x| ≤ expSafe (tanh_amd64.s; see Exps).
//
//go:noescape
func vExp64(dst, x []float64)

// vTanh64 is math.Tanh on four float64 at a time (tanh_amd64.s; see Tanhs).
//
//go:noescape
func vTanh64(dst, x []float64)

// vGelu32 is Gelu in float32, four at a time (tanh_amd64.s), bit for bit the scalar gelu.
//
//go:noescape
func vGelu32(out, x []float32)

// vGeluGrad32 is GeluGrad in float32, four at a time (tanh_amd64.s), bit for bit the scalar
// geluGrad.
//
//go:noescape
func vGeluGrad32(dx, x, g []float32)

// vNarrow8 is narrowNN's rows for n ≤ 8, b padded to 8 columns, four rows at a time
// (vec_amd64.s).
//
//go:noescape
func vNarrow8(out, a, b8 []float32, k, n int)

//go:noescape
func vScale(dst, x []float32, c float32)

//go:noescape
func vAxpy(dst, x []float32, c float32)

// vStatsRows, vStats2Rows and vStatsReluRows are the batch norm's column sums over a chunk of
// rows, kept in registers (vec_amd64.s; see StatsRows, Stats2Rows, StatsReluRows). Need AVX512F.
//
//go:noescape
func vStatsRows(s1, s2, x, k []float32, keep []bool, n, stride int)

//go:noescape
func vStats2Rows(s1, s2, dy, x, mu []float32, keep []bool, n, stride int)

//go:noescape
func vStatsReluRows(s1, s2, g, x, mu, p, q []float32, keep []bool, n, stride int)

// vHeadDot and vHeadScale are HeadDot and HeadScale with a row in registers, for d ≤ 32 and
// h ≤ 16 (vec_amd64.s; see headsInRegs). Need AVX512F.
//
//go:noescape
func vHeadDot(out, a, b []float32, idx []int32, m, d, h, w, k1, k2, k3 int)

//go:noescape
func vHeadScale(out, x, s []float32, idx []int32, m, d, h, k1, k2, k3 int)
