#include "textflag.h"

// The constants, each four times (a 32-byte operand), as float64 bits: math.Tanh's and those of
// math.Exp's amd64 assembly (exp_amd64.s, its FMA path), then the GELU's.
//   +0 |x| mask, +32 sign mask, +64 ½·MAXLOG (tanh is ±1 above), +96 0.625 (exp form from here),
//   +128 log2(e), +160 and +192 ln 2 in an upper and a lower part, +224 1/16,
//   +256 … +448 the Taylor terms 1/8! … 1/2!, +480 1, +512 2, +544 … +608 tanhP, +640 … +704
//   tanhQ, +736 the exponent bias 1023 (int64), +768 √(2/π), +800 0.044715, +832 3·0.044715.
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
DATA tanhc<>+768(SB)/8, $0x3fe9884533d43651
DATA tanhc<>+776(SB)/8, $0x3fe9884533d43651
DATA tanhc<>+784(SB)/8, $0x3fe9884533d43651
DATA tanhc<>+792(SB)/8, $0x3fe9884533d43651
DATA tanhc<>+800(SB)/8, $0x3fa6e4e26d4801f7
DATA tanhc<>+808(SB)/8, $0x3fa6e4e26d4801f7
DATA tanhc<>+816(SB)/8, $0x3fa6e4e26d4801f7
DATA tanhc<>+824(SB)/8, $0x3fa6e4e26d4801f7
DATA tanhc<>+832(SB)/8, $0x3fc12ba9d1f60179
DATA tanhc<>+840(SB)/8, $0x3fc12ba9d1f60179
DATA tanhc<>+848(SB)/8, $0x3fc12ba9d1f60179
DATA tanhc<>+856(SB)/8, $0x3fc12ba9d1f60179
GLOBL tanhc<>(SB), RODATA|NOPTR, $864

// EXP4 sets Y2 = math.Exp(Y2), four float64, bit for bit as archExp (exp_amd64.s) computes it
// on a CPU with FMA for arguments whose exponent e = round(x·log2 e) lies in [−1022, 1023] (so
// for |x| ≤ 700; NaN, the infinities, overflow and results below the normal range take branches
// this does not compute: Exps leaves those to math.Exp): r = x − e·LN2U − e·LN2L (fused), r/16,
// the Taylor terms by fused Horner, four squarings of (1 + r) as r·(r + 2) (the last fused with
// + 1), times 2^e. Clobbers Y3, X4, Y5.
#define EXP4 \
	VMULPD  tanhc<>+128(SB), Y2, Y3; \
	VCVTPD2DQY Y3, X4; \
	VCVTDQ2PD X4, Y3; \
	VFNMADD231PD tanhc<>+160(SB), Y3, Y2; \
	VFNMADD231PD tanhc<>+192(SB), Y3, Y2; \
	VMULPD  tanhc<>+224(SB), Y2, Y2; \
	VMOVUPD tanhc<>+256(SB), Y5; \
	VFMADD213PD tanhc<>+288(SB), Y2, Y5; \
	VFMADD213PD tanhc<>+320(SB), Y2, Y5; \
	VFMADD213PD tanhc<>+352(SB), Y2, Y5; \
	VFMADD213PD tanhc<>+384(SB), Y2, Y5; \
	VFMADD213PD tanhc<>+416(SB), Y2, Y5; \
	VFMADD213PD tanhc<>+448(SB), Y2, Y5; \
	VFMADD213PD tanhc<>+480(SB), Y2, Y5; \
	VMULPD  Y5, Y2, Y2; \
	VADDPD  tanhc<>+512(SB), Y2, Y5; \
	VMULPD  Y5, Y2, Y2; \
	VADDPD  tanhc<>+512(SB), Y2, Y5; \
	VMULPD  Y5, Y2, Y2; \
	VADDPD  tanhc<>+512(SB), Y2, Y5; \
	VMULPD  Y5, Y2, Y2; \
	VADDPD  tanhc<>+512(SB), Y2, Y5; \
	VFMADD213PD tanhc<>+480(SB), Y5, Y2; \
	VPMOVSXDQ X4, Y3; \
	VPADDQ  tanhc<>+736(SB), Y3, Y3; \
	VPSLLQ  $52, Y3, Y3; \
	VMULPD  Y3, Y2, Y2

// TANH4 sets Y11 = math.Tanh(Y0), four float64, bit for bit as Go computes it on a CPU with FMA
// (math.Exp's FMA path; the rational form below |x| = 0.625 with separate multiplies and adds,
// as the Go code compiles for GOAMD64 v1 and v2): every branch is computed and the right one
// selected per lane. In order: z = |x| (Y1); s = exp(2z) as archExp computes it (EXP4); then
// 1 − 2/(s + 1) with x's sign (Y6); the rational form x + x·s·P(s)/Q(s), s = x², x itself
// at ±0 (Y11); the exp form where z ≥ 0.625 (ordered: NaN keeps the rational form), ±1 where
// z > ½·MAXLOG. Clobbers Y1–Y13.
#define TANH4 \
	VANDPD  tanhc<>+0(SB), Y0, Y1; \
	VADDPD  Y1, Y1, Y2; \
	EXP4; \
	VADDPD  tanhc<>+480(SB), Y2, Y2; \
	VMOVUPD tanhc<>+512(SB), Y5; \
	VDIVPD  Y2, Y5, Y5; \
	VMOVUPD tanhc<>+480(SB), Y6; \
	VSUBPD  Y5, Y6, Y6; \
	VANDPD  tanhc<>+32(SB), Y0, Y7; \
	VORPD   Y7, Y6, Y6; \
	VMULPD  Y0, Y0, Y8; \
	VMULPD  tanhc<>+544(SB), Y8, Y9; \
	VADDPD  tanhc<>+576(SB), Y9, Y9; \
	VMULPD  Y8, Y9, Y9; \
	VADDPD  tanhc<>+608(SB), Y9, Y9; \
	VADDPD  tanhc<>+640(SB), Y8, Y10; \
	VMULPD  Y8, Y10, Y10; \
	VADDPD  tanhc<>+672(SB), Y10, Y10; \
	VMULPD  Y8, Y10, Y10; \
	VADDPD  tanhc<>+704(SB), Y10, Y10; \
	VMULPD  Y8, Y0, Y11; \
	VMULPD  Y9, Y11, Y11; \
	VDIVPD  Y10, Y11, Y11; \
	VADDPD  Y11, Y0, Y11; \
	VXORPD  Y12, Y12, Y12; \
	VCMPPD  $0, Y12, Y0, Y13; \
	VBLENDVPD Y13, Y0, Y11, Y11; \
	VCMPPD  $0x1d, tanhc<>+96(SB), Y1, Y13; \
	VBLENDVPD Y13, Y6, Y11, Y11; \
	VMOVUPD tanhc<>+480(SB), Y6; \
	VORPD   Y7, Y6, Y6; \
	VCMPPD  $0x1e, tanhc<>+64(SB), Y1, Y13; \
	VBLENDVPD Y13, Y6, Y11, Y11

// MAP4 is the body of a func(dst, x []float64) that sets dst[i] = F(x[i]) for i < len(dst) &^ 3,
// four at a time: each step loads x into register IN, runs BODY and stores OUT.
#define MAP4(IN, BODY, OUT) \
	MOVQ dst_base+0(FP), DI; \
	MOVQ x_base+24(FP), SI; \
	MOVQ dst_len+8(FP), CX; \
	SHRQ $2, CX; \
	JZ   done; \
loop: \
	VMOVUPD (SI), IN; \
	BODY; \
	VMOVUPD OUT, (DI); \
	ADDQ $32, SI; \
	ADDQ $32, DI; \
	DECQ CX; \
	JNZ  loop; \
done: \
	VZEROUPPER; \
	RET

// func vExp64(dst, x []float64)
// dst[i] = EXP4(x[i]) for i < len(dst) &^ 3: math.Exp where |x[i]| ≤ 700 (see Exps). Needs AVX2
// and FMA.
TEXT ·vExp64(SB), NOSPLIT, $0-48
	MAP4(Y2, EXP4, Y2)

// func vTanh64(dst, x []float64)
// dst[i] = math.Tanh(x[i]) for i < len(dst) &^ 3 (TANH4). Needs AVX2 and FMA.
TEXT ·vTanh64(SB), NOSPLIT, $0-48
	MAP4(Y0, TANH4, Y11)

// GELUARG sets Y0 = u = √(2/π)·(x + 0.044715·x·x·x) for x in Y14, as geluArg computes it
// (float64, left to right, unfused).
#define GELUARG \
	VMULPD  tanhc<>+800(SB), Y14, Y0; \
	VMULPD  Y14, Y0, Y0; \
	VMULPD  Y14, Y0, Y0; \
	VADDPD  Y0, Y14, Y0; \
	VMULPD  tanhc<>+768(SB), Y0, Y0

// func vGelu32(out, x []float32)
// out[i] = float32(gelu(float64(x[i]))) for i < len(out) &^ 3, bit for bit as gelu computes it:
// ½·x·(1 + tanh(u)) in float64 (GELUARG, TANH4), rounded to float32 once. Needs AVX2 and FMA.
TEXT ·vGelu32(SB), NOSPLIT, $0-48
	MOVQ out_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ out_len+8(FP), CX
	SHRQ $2, CX
	JZ   geludone

geluloop:
	VCVTPS2PD (SI), Y14
	GELUARG
	TANH4
	VMULPD  tanhc<>+448(SB), Y14, Y1     // ½·x
	VADDPD  tanhc<>+480(SB), Y11, Y2      // 1 + t
	VMULPD  Y2, Y1, Y1
	VCVTPD2PSY Y1, X1
	VMOVUPS X1, (DI)
	ADDQ $16, SI
	ADDQ $16, DI
	DECQ CX
	JNZ  geluloop

geludone:
	VZEROUPPER
	RET

// func vGeluGrad32(dx, x, g []float32)
// dx[i] = float32(float64(g[i])·gelu'(float64(x[i]))) for i < len(dx) &^ 3, bit for bit as
// GeluGrad computes it: ½·(1 + t) + ½·x·(1 − t²)·√(2/π)·(1 + 3·0.044715·x·x) in float64, left
// to right, unfused. Needs AVX2 and FMA.
TEXT ·vGeluGrad32(SB), NOSPLIT, $0-72
	MOVQ dx_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ g_base+48(FP), DX
	MOVQ dx_len+8(FP), CX
	SHRQ $2, CX
	JZ   graddone

gradloop:
	VCVTPS2PD (SI), Y14
	GELUARG
	TANH4
	VADDPD  tanhc<>+480(SB), Y11, Y1      // ½·(1 + t)
	VMULPD  tanhc<>+448(SB), Y1, Y1
	VMULPD  tanhc<>+448(SB), Y14, Y2     // ½·x
	VMULPD  Y11, Y11, Y3             // 1 − t·t
	VMOVUPD tanhc<>+480(SB), Y4
	VSUBPD  Y3, Y4, Y4
	VMULPD  Y4, Y2, Y2
	VMULPD  tanhc<>+768(SB), Y2, Y2     // ·√(2/π)
	VMULPD  tanhc<>+832(SB), Y14, Y3   // 1 + (3·0.044715)·x·x
	VMULPD  Y14, Y3, Y3
	VADDPD  tanhc<>+480(SB), Y3, Y3
	VMULPD  Y3, Y2, Y2
	VADDPD  Y2, Y1, Y1               // gelu'(x)
	VCVTPS2PD (DX), Y2
	VMULPD  Y1, Y2, Y1               // g·gelu'(x)
	VCVTPD2PSY Y1, X1
	VMOVUPS X1, (DI)
	ADDQ $16, SI
	ADDQ $16, DX
	ADDQ $16, DI
	DECQ CX
	JNZ  gradloop

graddone:
	VZEROUPPER
	RET
