#include "textflag.h"

// The constants of vTanh64, each four times (a 32-byte operand): math.Tanh's and those of
// math.Exp's amd64 assembly (exp_amd64.s, its FMA path), as float64 bits.
//   +0 |x| mask, +32 sign mask, +64 ½·MAXLOG (tanh is ±1 above), +96 0.625 (exp form from here),
//   +128 log2(e), +160 and +192 ln 2 in an upper and a lower part, +224 1/16,
//   +256 … +448 the Taylor terms 1/8! … 1/2!, +480 1, +512 2, +544 … +608 tanhP, +640 … +704
//   tanhQ, +736 the exponent bias 1023 (int64).
DATA tanhc<>+0(SB)/8, $0x7fffffffffffffff
DATA tanhc<>+8(SB)/8, $0x7fffffffffffffff
DATA tanhc<>+16(SB)/8, $0x7fffffffffffffff
DATA tanhc<>+24(SB)/8, $0x7fffffffffffffff
DATA tanhc<>+32(SB)/8, $0x8000000000000000
DATA tanhc<>+40(SB)/8, $0x8000000000000000
DATA tanhc<>+48(SB)/8, $0x8000000000000000
DATA tanhc<>+56(SB)/8, $0x8000000000000000
DATA tanhc<>+64(SB)/8, $0x404601e678fc457b
DATA tanhc<>+72(SB)/8, $0x404601e678fc457b
DATA tanhc<>+80(SB)/8, $0x404601e678fc457b
DATA tanhc<>+88(SB)/8, $0x404601e678fc457b
DATA tanhc<>+96(SB)/8, $0x3fe4000000000000
DATA tanhc<>+104(SB)/8, $0x3fe4000000000000
DATA tanhc<>+112(SB)/8, $0x3fe4000000000000
DATA tanhc<>+120(SB)/8, $0x3fe4000000000000
DATA tanhc<>+128(SB)/8, $0x3ff71547652b82fe
DATA tanhc<>+136(SB)/8, $0x3ff71547652b82fe
DATA tanhc<>+144(SB)/8, $0x3ff71547652b82fe
DATA tanhc<>+152(SB)/8, $0x3ff71547652b82fe
DATA tanhc<>+160(SB)/8, $0x3fe62e42fefa3000
DATA tanhc<>+168(SB)/8, $0x3fe62e42fefa3000
DATA tanhc<>+176(SB)/8, $0x3fe62e42fefa3000
DATA tanhc<>+184(SB)/8, $0x3fe62e42fefa3000
DATA tanhc<>+192(SB)/8, $0x3d53de6af278ece6
DATA tanhc<>+200(SB)/8, $0x3d53de6af278ece6
DATA tanhc<>+208(SB)/8, $0x3d53de6af278ece6
DATA tanhc<>+216(SB)/8, $0x3d53de6af278ece6
DATA tanhc<>+224(SB)/8, $0x3fb0000000000000
DATA tanhc<>+232(SB)/8, $0x3fb0000000000000
DATA tanhc<>+240(SB)/8, $0x3fb0000000000000
DATA tanhc<>+248(SB)/8, $0x3fb0000000000000
DATA tanhc<>+256(SB)/8, $0x3efa01a01a01a01a
DATA tanhc<>+264(SB)/8, $0x3efa01a01a01a01a
DATA tanhc<>+272(SB)/8, $0x3efa01a01a01a01a
DATA tanhc<>+280(SB)/8, $0x3efa01a01a01a01a
DATA tanhc<>+288(SB)/8, $0x3f2a01a01a01a01a
DATA tanhc<>+296(SB)/8, $0x3f2a01a01a01a01a
DATA tanhc<>+304(SB)/8, $0x3f2a01a01a01a01a
DATA tanhc<>+312(SB)/8, $0x3f2a01a01a01a01a
DATA tanhc<>+320(SB)/8, $0x3f56c16c16c16c17
DATA tanhc<>+328(SB)/8, $0x3f56c16c16c16c17
DATA tanhc<>+336(SB)/8, $0x3f56c16c16c16c17
DATA tanhc<>+344(SB)/8, $0x3f56c16c16c16c17
DATA tanhc<>+352(SB)/8, $0x3f81111111111111
DATA tanhc<>+360(SB)/8, $0x3f81111111111111
DATA tanhc<>+368(SB)/8, $0x3f81111111111111
DATA tanhc<>+376(SB)/8, $0x3f81111111111111
DATA tanhc<>+384(SB)/8, $0x3fa5555555555555
DATA tanhc<>+392(SB)/8, $0x3fa5555555555555
DATA tanhc<>+400(SB)/8, $0x3fa5555555555555
DATA tanhc<>+408(SB)/8, $0x3fa5555555555555
DATA tanhc<>+416(SB)/8, $0x3fc5555555555555
DATA tanhc<>+424(SB)/8, $0x3fc5555555555555
DATA tanhc<>+432(SB)/8, $0x3fc5555555555555
DATA tanhc<>+440(SB)/8, $0x3fc5555555555555
DATA tanhc<>+448(SB)/8, $0x3fe0000000000000
DATA tanhc<>+456(SB)/8, $0x3fe0000000000000
DATA tanhc<>+464(SB)/8, $0x3fe0000000000000
DATA tanhc<>+472(SB)/8, $0x3fe0000000000000
DATA tanhc<>+480(SB)/8, $0x3ff0000000000000
DATA tanhc<>+488(SB)/8, $0x3ff0000000000000
DATA tanhc<>+496(SB)/8, $0x3ff0000000000000
DATA tanhc<>+504(SB)/8, $0x3ff0000000000000
DATA tanhc<>+512(SB)/8, $0x4000000000000000
DATA tanhc<>+520(SB)/8, $0x4000000000000000
DATA tanhc<>+528(SB)/8, $0x4000000000000000
DATA tanhc<>+536(SB)/8, $0x4000000000000000
DATA tanhc<>+544(SB)/8, $0xbfeedc5baafd6f4b
DATA tanhc<>+552(SB)/8, $0xbfeedc5baafd6f4b
DATA tanhc<>+560(SB)/8, $0xbfeedc5baafd6f4b
DATA tanhc<>+568(SB)/8, $0xbfeedc5baafd6f4b
DATA tanhc<>+576(SB)/8, $0xc058d26a0e26682d
DATA tanhc<>+584(SB)/8, $0xc058d26a0e26682d
DATA tanhc<>+592(SB)/8, $0xc058d26a0e26682d
DATA tanhc<>+600(SB)/8, $0xc058d26a0e26682d
DATA tanhc<>+608(SB)/8, $0xc0993ac030580563
DATA tanhc<>+616(SB)/8, $0xc0993ac030580563
DATA tanhc<>+624(SB)/8, $0xc0993ac030580563
DATA tanhc<>+632(SB)/8, $0xc0993ac030580563
DATA tanhc<>+640(SB)/8, $0x405c33f28a581b86
DATA tanhc<>+648(SB)/8, $0x405c33f28a581b86
DATA tanhc<>+656(SB)/8, $0x405c33f28a581b86
DATA tanhc<>+664(SB)/8, $0x405c33f28a581b86
DATA tanhc<>+672(SB)/8, $0x40a176fa0e5535fa
DATA tanhc<>+680(SB)/8, $0x40a176fa0e5535fa
DATA tanhc<>+688(SB)/8, $0x40a176fa0e5535fa
DATA tanhc<>+696(SB)/8, $0x40a176fa0e5535fa
DATA tanhc<>+704(SB)/8, $0x40b2ec102442040c
DATA tanhc<>+712(SB)/8, $0x40b2ec102442040c
DATA tanhc<>+720(SB)/8, $0x40b2ec102442040c
DATA tanhc<>+728(SB)/8, $0x40b2ec102442040c
DATA tanhc<>+736(SB)/8, $0x00000000000003ff
DATA tanhc<>+744(SB)/8, $0x00000000000003ff
DATA tanhc<>+752(SB)/8, $0x00000000000003ff
DATA tanhc<>+760(SB)/8, $0x00000000000003ff
GLOBL tanhc<>(SB), RODATA|NOPTR, $768

// func vTanh64(dst, x []float64)
// dst[i] = math.Tanh(x[i]) for i < len(dst) &^ 3, bit for bit as Go computes it on a CPU with
// FMA (math.Exp's FMA path; the rational form below |x| = 0.625 with separate multiplies and
// adds, as the Go code compiles for GOAMD64 v1 and v2): four values at a time, every branch
// computed and the right one selected per lane. Needs AVX2 and FMA.
TEXT ·vTanh64(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ dst_len+8(FP), CX
	SHRQ $2, CX
	JZ   done

loop:
	VMOVUPD (SI), Y0                 // x
	VANDPD  tanhc<>+0(SB), Y0, Y1    // z = |x|

	// exp(2z) as archExp computes it (FMA path)
	VADDPD  Y1, Y1, Y2               // a = 2z (exact)
	VMULPD  tanhc<>+128(SB), Y2, Y3      // a·log2(e)
	VCVTPD2DQY Y3, X4                // e = round to nearest (MXCSR), int32
	VCVTDQ2PD X4, Y3                 // float64(e)
	VFNMADD231PD tanhc<>+160(SB), Y3, Y2  // a −= e·LN2U (fused)
	VFNMADD231PD tanhc<>+192(SB), Y3, Y2  // a −= e·LN2L (fused)
	VMULPD  tanhc<>+224(SB), Y2, Y2      // r = a/16
	VMOVUPD tanhc<>+256(SB), Y5             // Horner, fused: p = p·r + t
	VFMADD213PD tanhc<>+288(SB), Y2, Y5
	VFMADD213PD tanhc<>+320(SB), Y2, Y5
	VFMADD213PD tanhc<>+352(SB), Y2, Y5
	VFMADD213PD tanhc<>+384(SB), Y2, Y5
	VFMADD213PD tanhc<>+416(SB), Y2, Y5
	VFMADD213PD tanhc<>+448(SB), Y2, Y5
	VFMADD213PD tanhc<>+480(SB), Y2, Y5
	VMULPD  Y5, Y2, Y2               // r = r·p
	VADDPD  tanhc<>+512(SB), Y2, Y5        // four squarings of (1 + r): r = r·(r + 2), …
	VMULPD  Y5, Y2, Y2
	VADDPD  tanhc<>+512(SB), Y2, Y5
	VMULPD  Y5, Y2, Y2
	VADDPD  tanhc<>+512(SB), Y2, Y5
	VMULPD  Y5, Y2, Y2
	VADDPD  tanhc<>+512(SB), Y2, Y5
	VFMADD213PD tanhc<>+480(SB), Y5, Y2    // … the last fused with + 1
	VPMOVSXDQ X4, Y3                 // 2^e: (e + 1023) << 52
	VPADDQ  tanhc<>+736(SB), Y3, Y3
	VPSLLQ  $52, Y3, Y3
	VMULPD  Y3, Y2, Y2               // s = exp(2z)

	// z ≥ 0.625: 1 − 2/(s + 1), with x's sign
	VADDPD  tanhc<>+480(SB), Y2, Y2
	VMOVUPD tanhc<>+512(SB), Y5
	VDIVPD  Y2, Y5, Y5               // 2/(s + 1)
	VMOVUPD tanhc<>+480(SB), Y6
	VSUBPD  Y5, Y6, Y6               // 1 − 2/(s + 1), positive
	VANDPD  tanhc<>+32(SB), Y0, Y7   // x's sign
	VORPD   Y7, Y6, Y6               // t_exp

	// z < 0.625: x + x·s·P(s)/Q(s), s = x², unfused
	VMULPD  Y0, Y0, Y8               // s
	VMULPD  tanhc<>+544(SB), Y8, Y9         // P: (p0·s + p1)·s + p2
	VADDPD  tanhc<>+576(SB), Y9, Y9
	VMULPD  Y8, Y9, Y9
	VADDPD  tanhc<>+608(SB), Y9, Y9
	VADDPD  tanhc<>+640(SB), Y8, Y10        // Q: ((s + q0)·s + q1)·s + q2
	VMULPD  Y8, Y10, Y10
	VADDPD  tanhc<>+672(SB), Y10, Y10
	VMULPD  Y8, Y10, Y10
	VADDPD  tanhc<>+704(SB), Y10, Y10
	VMULPD  Y8, Y0, Y11              // (x·s)
	VMULPD  Y9, Y11, Y11             // ·P
	VDIVPD  Y10, Y11, Y11            // /Q
	VADDPD  Y11, Y0, Y11             // x + …
	VXORPD  Y12, Y12, Y12
	VCMPPD  $0, Y12, Y0, Y13         // x == 0 (±0): x itself
	VBLENDVPD Y13, Y0, Y11, Y11

	// pick per lane: the rational form, the exp form from 0.625, ±1 above ½·MAXLOG
	VCMPPD  $0x1d, tanhc<>+96(SB), Y1, Y13     // z ≥ 0.625 (ordered: NaN keeps the rational form)
	VBLENDVPD Y13, Y6, Y11, Y11
	VMOVUPD tanhc<>+480(SB), Y6
	VORPD   Y7, Y6, Y6               // ±1
	VCMPPD  $0x1e, tanhc<>+64(SB), Y1, Y13 // z > ½·MAXLOG
	VBLENDVPD Y13, Y6, Y11, Y11
	VMOVUPD Y11, (DI)

	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  loop

done:
	VZEROUPPER
	RET
