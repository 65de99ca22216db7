// Float32 element-wise loops (AVX2/FMA), 8 values a step and a masked step for the last
// len mod 8. Every slice must be at least as long as the first; vec.go defines what each does.

#include "textflag.h"

// LOOP runs BODY over CX values, 8 a step (loads and stores LDU, STU) then one masked step for
// the rest; ADVANCE moves every pointer 8 values on. The masked step uses AVX-512's mask
// registers where the CPU has them (·tailK: LDK, STK, mask K1), else AVX2's VMASKMOVPS (LDM,
// STM, mask Y15), which AMD's CPUs run slowly (a masked store is microcoded): with 70-value rows
// the AVX2 step made AddTo a row 1.5 times as slow as with 64 or 72 (BenchmarkVecRowTail). The
// two steps compute the same lanes with the same instructions, so they agree bit for bit.
#define LOOP(BODY, ADVANCE) \
	STEPS(BODY, ADVANCE, 8); \
	CMPB ·tailK(SB), $0; \
	JE   tailavx2; \
	KTAIL(BODY); \
	JMP  done; \
tailavx2: \
	LEAQ tailmask<>+32(SB), AX; \
	SHLQ $2, CX; \
	SUBQ CX, AX; \
	VMOVDQU (AX), Y15; \
	BODY(LDM, STM); \
done: \
	VZEROUPPER; \
	RET

// STEPS runs BODY over CX values, W a step, while W remain, and jumps to done when none are
// left, leaving the rest (1 to W − 1) in CX; KTAIL runs BODY once on the first CX lanes (mask K1).
#define STEPS(BODY, ADVANCE, W) \
	SUBQ $W, CX; \
	JL   tail; \
loop: \
	BODY(LDU, STU); \
	ADVANCE; \
	SUBQ $W, CX; \
	JGE  loop; \
tail: \
	ADDQ $W, CX; \
	JE   done

#define KTAIL(BODY) \
	MOVQ $1, AX; \
	SHLQ CX, AX; \
	DECQ AX; \
	KMOVW AX, K1; \
	BODY(LDK, STK)

// SIGARGS loads the arguments of vGatedFwdSig and vGatedFwdSig16.
#define SIGARGS \
	MOVQ eta_base+0(FP), DI; \
	MOVQ num_base+24(FP), SI; \
	MOVQ den_base+48(FP), R8; \
	MOVQ e_base+72(FP), R9; \
	MOVQ b_base+96(FP), R10; \
	MOVQ eta_len+8(FP), CX

#define LDU(p, r) VMOVUPS (p), r
#define STU(r, p) VMOVUPS r, (p)
#define LDM(p, r) VMASKMOVPS (p), Y15, r
#define STM(r, p) VMASKMOVPS r, Y15, (p)
#define LDK(p, r) VMOVUPS.Z (p), K1, r
#define STK(r, p) VMOVUPS r, K1, (p)

// tailmask<>+32-4r is the mask of the first r lanes.
DATA tailmask<>+0(SB)/8, $0xffffffffffffffff
DATA tailmask<>+8(SB)/8, $0xffffffffffffffff
DATA tailmask<>+16(SB)/8, $0xffffffffffffffff
DATA tailmask<>+24(SB)/8, $0xffffffffffffffff
DATA tailmask<>+32(SB)/8, $0
DATA tailmask<>+40(SB)/8, $0
DATA tailmask<>+48(SB)/8, $0
DATA tailmask<>+56(SB)/8, $0
GLOBL tailmask<>(SB), RODATA|NOPTR, $64

// Constants of the float32 exponential (Cephes expf), 4 bytes each: the argument's clamp,
// log2(e), ln 2 in two parts, the polynomial of e^r on [-ln2/2, ln2/2], 1, the exponent bias
// and the sign bit.
DATA expc<>+0(SB)/8, $0xc2b0c0a542b0c0a5 // clamp hi, clamp lo
DATA expc<>+8(SB)/8, $0x3f3180003fb8aa3b // log2(e), ln 2 high part
DATA expc<>+16(SB)/8, $0x39506967b95e8083 // ln 2 low part, p0
DATA expc<>+24(SB)/8, $0x3c0889083ab743ce // p1, p2
DATA expc<>+32(SB)/8, $0x3e2aaaaa3d2aa9c1 // p3, p4
DATA expc<>+40(SB)/8, $0x3f8000003f000000 // p5, 1
DATA expc<>+48(SB)/8, $0x800000000000007f // exponent bias 127, sign bit
GLOBL expc<>(SB), RODATA|NOPTR, $56

#define VADDTO_BODY(LD, ST) LD(DI, Y0); LD(SI, Y1); VADDPS Y1, Y0, Y0; ST(Y0, DI)
#define VADDTO_ADVANCE ADDQ $32, DI; ADDQ $32, SI

// func vAddTo(dst, a []float32)
// dst[i] += a[i] for i < len(dst).
TEXT ·vAddTo(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ a_base+24(FP), SI
	MOVQ dst_len+8(FP), CX
	LOOP(VADDTO_BODY, VADDTO_ADVANCE)

#define VADD2_BODY(LD, ST) LD(SI, Y0); LD(R8, Y1); VADDPS Y1, Y0, Y0; ST(Y0, DI)
#define VADD2_ADVANCE ADDQ $32, DI; ADDQ $32, SI; ADDQ $32, R8

// func vAdd2(dst, a, b []float32)
// dst[i] = a[i] + b[i] for i < len(dst).
TEXT ·vAdd2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), R8
	MOVQ dst_len+8(FP), CX
	LOOP(VADD2_BODY, VADD2_ADVANCE)

#define VADD3_BODY(LD, ST) LD(SI, Y0); LD(R8, Y1); LD(R9, Y2); VADDPS Y1, Y0, Y0; VADDPS Y2, Y0, Y0; ST(Y0, DI)
#define VADD3_ADVANCE ADDQ $32, DI; ADDQ $32, SI; ADDQ $32, R8; ADDQ $32, R9

// func vAdd3(dst, a, b, c []float32)
// dst[i] = a[i] + b[i] + c[i] for i < len(dst).
TEXT ·vAdd3(SB), NOSPLIT, $0-96
	MOVQ dst_base+0(FP), DI
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), R8
	MOVQ c_base+72(FP), R9
	MOVQ dst_len+8(FP), CX
	LOOP(VADD3_BODY, VADD3_ADVANCE)

#define VRELU_BODY(LD, ST) LD(SI, Y0); VXORPS Y1, Y1, Y1; VMAXPS Y0, Y1, Y0; ST(Y0, DI)
#define VRELU_ADVANCE ADDQ $32, DI; ADDQ $32, SI

// func vRelu(dst, x []float32)
// dst[i] = max(x[i], 0) for i < len(dst).
TEXT ·vRelu(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ dst_len+8(FP), CX
	LOOP(VRELU_BODY, VRELU_ADVANCE)

#define VRELUGRAD_BODY(LD, ST) LD(SI, Y0); LD(R8, Y1); VXORPS Y2, Y2, Y2; VCMPPS $0x1e, Y2, Y0, Y0; VANDPS Y1, Y0, Y0; ST(Y0, DI)
#define VRELUGRAD_ADVANCE ADDQ $32, DI; ADDQ $32, SI; ADDQ $32, R8

// func vReluGrad(dst, y, g []float32)
// dst[i] = g[i] where y[i] > 0, else 0 for i < len(dst).
TEXT ·vReluGrad(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ y_base+24(FP), SI
	MOVQ g_base+48(FP), R8
	MOVQ dst_len+8(FP), CX
	LOOP(VRELUGRAD_BODY, VRELUGRAD_ADVANCE)

#define VGATEDBWD_BODY(LD, ST) LD(SI, Y0); LD(R8, Y1); LD(R9, Y2); LD(R10, Y3); LD(R11, Y4); VMULPS Y2, Y1, Y2; VADDPS Y2, Y0, Y0; VSUBPS Y1, Y14, Y1; VMULPS Y1, Y2, Y2; VSUBPS Y4, Y3, Y3; VMULPS Y3, Y2, Y2; ST(Y0, SI); ST(Y2, DI)
#define VGATEDBWD_ADVANCE ADDQ $32, DI; ADDQ $32, SI; ADDQ $32, R8; ADDQ $32, R9; ADDQ $32, R10; ADDQ $32, R11

// func vGatedBwd(de, db, h, g, b, o []float32)
// q = h[i]·g[i]; db[i] += q; de[i] = q·(1 − h[i])·(b[i] − o[i]) for i < len(de).
TEXT ·vGatedBwd(SB), NOSPLIT, $0-144
	MOVQ de_base+0(FP), DI
	MOVQ db_base+24(FP), SI
	MOVQ h_base+48(FP), R8
	MOVQ g_base+72(FP), R9
	MOVQ b_base+96(FP), R10
	MOVQ o_base+120(FP), R11
	MOVQ de_len+8(FP), CX
	VBROADCASTSS expc<>+44(SB), Y14
	LOOP(VGATEDBWD_BODY, VGATEDBWD_ADVANCE)

#define VSTATS_BODY(LD, ST) LD(DI, Y0); LD(SI, Y1); LD(R8, Y2); LD(R9, Y3); VSUBPS Y3, Y2, Y2; VADDPS Y2, Y0, Y0; VFMADD231PS Y2, Y2, Y1; ST(Y0, DI); ST(Y1, SI)
#define VSTATS_ADVANCE ADDQ $32, DI; ADDQ $32, SI; ADDQ $32, R8; ADDQ $32, R9

// func vStats(s1, s2, x, k []float32)
// v = x[i] − k[i]; s1[i] += v; s2[i] += v·v for i < len(s1).
TEXT ·vStats(SB), NOSPLIT, $0-96
	MOVQ s1_base+0(FP), DI
	MOVQ s2_base+24(FP), SI
	MOVQ x_base+48(FP), R8
	MOVQ k_base+72(FP), R9
	MOVQ s1_len+8(FP), CX
	LOOP(VSTATS_BODY, VSTATS_ADVANCE)

#define VSTATS2_BODY(LD, ST) LD(DI, Y0); LD(SI, Y1); LD(R8, Y2); LD(R9, Y3); LD(R10, Y4); VADDPS Y2, Y0, Y0; VSUBPS Y4, Y3, Y3; VFMADD231PS Y3, Y2, Y1; ST(Y0, DI); ST(Y1, SI)
#define VSTATS2_ADVANCE ADDQ $32, DI; ADDQ $32, SI; ADDQ $32, R8; ADDQ $32, R9; ADDQ $32, R10

// func vStats2(s1, s2, dy, x, mu []float32)
// s1[i] += dy[i]; s2[i] += dy[i]·(x[i] − mu[i]) for i < len(s1).
TEXT ·vStats2(SB), NOSPLIT, $0-120
	MOVQ s1_base+0(FP), DI
	MOVQ s2_base+24(FP), SI
	MOVQ dy_base+48(FP), R8
	MOVQ x_base+72(FP), R9
	MOVQ mu_base+96(FP), R10
	MOVQ s1_len+8(FP), CX
	LOOP(VSTATS2_BODY, VSTATS2_ADVANCE)

#define VAFFINE_BODY(LD, ST) LD(SI, Y0); LD(R8, Y1); LD(R9, Y2); LD(R10, Y3); VSUBPS Y1, Y0, Y0; VFMADD213PS Y3, Y2, Y0; ST(Y0, DI)
#define VAFFINE_ADVANCE ADDQ $32, DI; ADDQ $32, SI; ADDQ $32, R8; ADDQ $32, R9; ADDQ $32, R10

// func vAffine(dst, x, mu, p, q []float32)
// dst[i] = (x[i] − mu[i])·p[i] + q[i] for i < len(dst).
TEXT ·vAffine(SB), NOSPLIT, $0-120
	MOVQ dst_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ mu_base+48(FP), R8
	MOVQ p_base+72(FP), R9
	MOVQ q_base+96(FP), R10
	MOVQ dst_len+8(FP), CX
	LOOP(VAFFINE_BODY, VAFFINE_ADVANCE)

#define VBNBACK_BODY(LD, ST) LD(SI, Y0); LD(R8, Y1); LD(R9, Y2); LD(R10, Y3); LD(R11, Y4); LD(R12, Y5); VSUBPS Y2, Y1, Y1; VFMADD213PS Y5, Y4, Y1; VFMADD231PS Y3, Y0, Y1; ST(Y1, DI)
#define VBNBACK_ADVANCE ADDQ $32, DI; ADDQ $32, SI; ADDQ $32, R8; ADDQ $32, R9; ADDQ $32, R10; ADDQ $32, R11; ADDQ $32, R12

// func vBNBack(dst, dy, x, mu, a, b, c []float32)
// dst[i] = a[i]·dy[i] + b[i]·(x[i] − mu[i]) + c[i] for i < len(dst).
TEXT ·vBNBack(SB), NOSPLIT, $0-168
	MOVQ dst_base+0(FP), DI
	MOVQ dy_base+24(FP), SI
	MOVQ x_base+48(FP), R8
	MOVQ mu_base+72(FP), R9
	MOVQ a_base+96(FP), R10
	MOVQ b_base+120(FP), R11
	MOVQ c_base+144(FP), R12
	MOVQ dst_len+8(FP), CX
	LOOP(VBNBACK_BODY, VBNBACK_ADVANCE)

#define VAFFINERELU_BODY(LD, ST) LD(SI, Y0); LD(R8, Y1); LD(R9, Y2); LD(R10, Y3); VSUBPS Y1, Y0, Y0; VFMADD213PS Y3, Y2, Y0; VXORPS Y4, Y4, Y4; VMAXPS Y0, Y4, Y0; ST(Y0, DI)
#define VAFFINERELU_ADVANCE ADDQ $32, DI; ADDQ $32, SI; ADDQ $32, R8; ADDQ $32, R9; ADDQ $32, R10

// func vAffineRelu(dst, x, mu, p, q []float32)
// dst[i] = max((x[i] − mu[i])·p[i] + q[i], 0) for i < len(dst).
TEXT ·vAffineRelu(SB), NOSPLIT, $0-120
	MOVQ dst_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ mu_base+48(FP), R8
	MOVQ p_base+72(FP), R9
	MOVQ q_base+96(FP), R10
	MOVQ dst_len+8(FP), CX
	LOOP(VAFFINERELU_BODY, VAFFINERELU_ADVANCE)

#define VAFFINERELUADD_BODY(LD, ST) LD(SI, Y0); LD(R8, Y1); LD(R9, Y2); LD(R10, Y3); LD(R11, Y5); VSUBPS Y1, Y0, Y0; VFMADD213PS Y3, Y2, Y0; VXORPS Y4, Y4, Y4; VMAXPS Y0, Y4, Y0; VADDPS Y5, Y0, Y0; ST(Y0, DI)
#define VAFFINERELUADD_ADVANCE ADDQ $32, DI; ADDQ $32, SI; ADDQ $32, R8; ADDQ $32, R9; ADDQ $32, R10; ADDQ $32, R11

// func vAffineReluAdd(dst, x, mu, p, q, r []float32)
// dst[i] = r[i] + max((x[i] − mu[i])·p[i] + q[i], 0) for i < len(dst).
TEXT ·vAffineReluAdd(SB), NOSPLIT, $0-144
	MOVQ dst_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ mu_base+48(FP), R8
	MOVQ p_base+72(FP), R9
	MOVQ q_base+96(FP), R10
	MOVQ r_base+120(FP), R11
	MOVQ dst_len+8(FP), CX
	LOOP(VAFFINERELUADD_BODY, VAFFINERELUADD_ADVANCE)

#define VSTATSRELU_BODY(LD, ST) LD(DI, Y0); LD(SI, Y1); LD(R8, Y2); LD(R9, Y3); LD(R10, Y4); LD(R11, Y5); LD(R12, Y6); VSUBPS Y4, Y3, Y3; VFMADD213PS Y6, Y3, Y5; VXORPS Y7, Y7, Y7; VCMPPS $0x1e, Y7, Y5, Y5; VANDPS Y5, Y2, Y2; VADDPS Y2, Y0, Y0; VFMADD231PS Y3, Y2, Y1; ST(Y0, DI); ST(Y1, SI)
#define VSTATSRELU_ADVANCE ADDQ $32, DI; ADDQ $32, SI; ADDQ $32, R8; ADDQ $32, R9; ADDQ $32, R10; ADDQ $32, R11; ADDQ $32, R12

// func vStatsRelu(s1, s2, g, x, mu, p, q []float32)
// with u = g[i] where (x[i] − mu[i])·p[i] + q[i] > 0, else 0: s1[i] += u; s2[i] += u·(x[i] − mu[i]) for i < len(s1).
TEXT ·vStatsRelu(SB), NOSPLIT, $0-168
	MOVQ s1_base+0(FP), DI
	MOVQ s2_base+24(FP), SI
	MOVQ g_base+48(FP), R8
	MOVQ x_base+72(FP), R9
	MOVQ mu_base+96(FP), R10
	MOVQ p_base+120(FP), R11
	MOVQ q_base+144(FP), R12
	MOVQ s1_len+8(FP), CX
	LOOP(VSTATSRELU_BODY, VSTATSRELU_ADVANCE)

#define VBNBACKRELU_BODY(LD, ST) LD(SI, Y0); LD(R8, Y1); LD(R9, Y2); LD(R10, Y3); LD(R11, Y4); LD(R12, Y5); LD(R13, Y6); LD(DX, Y7); VSUBPS Y2, Y1, Y1; VFMADD213PS Y4, Y1, Y3; VXORPS Y8, Y8, Y8; VCMPPS $0x1e, Y8, Y3, Y3; VANDPS Y3, Y0, Y0; VFMADD213PS Y7, Y6, Y1; VFMADD231PS Y5, Y0, Y1; ST(Y1, DI)
#define VBNBACKRELU_ADVANCE ADDQ $32, DI; ADDQ $32, SI; ADDQ $32, R8; ADDQ $32, R9; ADDQ $32, R10; ADDQ $32, R11; ADDQ $32, R12; ADDQ $32, R13; ADDQ $32, DX

// func vBNBackRelu(dst, g, x, mu, p, q, a, b, c []float32)
// with u as in vStatsRelu: dst[i] = a[i]·u + b[i]·(x[i] − mu[i]) + c[i] for i < len(dst).
TEXT ·vBNBackRelu(SB), NOSPLIT, $0-216
	MOVQ dst_base+0(FP), DI
	MOVQ g_base+24(FP), SI
	MOVQ x_base+48(FP), R8
	MOVQ mu_base+72(FP), R9
	MOVQ p_base+96(FP), R10
	MOVQ q_base+120(FP), R11
	MOVQ a_base+144(FP), R12
	MOVQ b_base+168(FP), R13
	MOVQ c_base+192(FP), DX
	MOVQ dst_len+8(FP), CX
	LOOP(VBNBACKRELU_BODY, VBNBACKRELU_ADVANCE)

#define VGATEDFWDSIG_BODY(LD, ST) LD(R9, Y0); LD(SI, Y1); LD(R8, Y2); LD(R10, Y3); VBROADCASTSS expc<>+52(SB), Y8; VXORPS Y8, Y0, Y4; VBROADCASTSS expc<>+0(SB), Y5; VMINPS Y4, Y5, Y4; VBROADCASTSS expc<>+4(SB), Y5; VMAXPS Y4, Y5, Y4; VBROADCASTSS expc<>+8(SB), Y5; VMULPS Y5, Y4, Y5; VROUNDPS $0, Y5, Y5; VBROADCASTSS expc<>+12(SB), Y8; VFNMADD231PS Y8, Y5, Y4; VBROADCASTSS expc<>+16(SB), Y8; VFNMADD231PS Y8, Y5, Y4; VBROADCASTSS expc<>+20(SB), Y6; VBROADCASTSS expc<>+24(SB), Y8; VFMADD213PS Y8, Y4, Y6; VBROADCASTSS expc<>+28(SB), Y8; VFMADD213PS Y8, Y4, Y6; VBROADCASTSS expc<>+32(SB), Y8; VFMADD213PS Y8, Y4, Y6; VBROADCASTSS expc<>+36(SB), Y8; VFMADD213PS Y8, Y4, Y6; VBROADCASTSS expc<>+40(SB), Y8; VFMADD213PS Y8, Y4, Y6; VMULPS Y4, Y4, Y7; VFMADD213PS Y4, Y7, Y6; VBROADCASTSS expc<>+44(SB), Y7; VADDPS Y7, Y6, Y6; VCVTPS2DQ Y5, Y5; VPBROADCASTD expc<>+48(SB), Y8; VPADDD Y8, Y5, Y5; VPSLLD $23, Y5, Y5; VMULPS Y5, Y6, Y6; VADDPS Y7, Y6, Y6; VDIVPS Y6, Y7, Y6; VFMADD231PS Y3, Y6, Y1; VADDPS Y6, Y2, Y2; ST(Y6, DI); ST(Y1, SI); ST(Y2, R8)
#define VGATEDFWDSIG_ADVANCE ADDQ $32, DI; ADDQ $32, SI; ADDQ $32, R8; ADDQ $32, R9; ADDQ $32, R10

// func vGatedFwdSig(eta, num, den, e, b []float32)
// η = 1/(1 + exp(−e[i])); eta[i] = η; num[i] += η·b[i]; den[i] += η for i < len(eta).
TEXT ·vGatedFwdSig(SB), NOSPLIT, $0-120
	SIGARGS
	LOOP(VGATEDFWDSIG_BODY, VGATEDFWDSIG_ADVANCE)

// NARROW_TERM(A, ACC): ACC += a·b[l, ·] (Y4), the product rounded and masked to +0 where a = 0
// (NaN counts as nonzero, as in gonum); a broadcast from A. Y5–Y7 scratch, Y14 zero.
#define NARROW_TERM(A, ACC) \
	VBROADCASTSS A, Y5; \
	VMULPS       Y4, Y5, Y6; \
	VCMPPS       $4, Y14, Y5, Y7; \
	VANDPS       Y7, Y6, Y6; \
	VADDPS       Y6, ACC, ACC

// func vNarrow8(out, a, b8 []float32, k, n int)
// For each row i < len(out)/n: out[i·n : i·n+n] = the first n of Σ over l < k, in order, of
// a[i·k + l]·b8[l·8 : l·8+8], each product rounded, then added to a sum begun at +0, the
// products of a zero a[i·k + l] left out (masked to +0, which leaves a sum that is never −0
// as it is): gonum's float32 GEMM for b padded to 8 columns (narrowNN). 1 ≤ n ≤ 8, k ≥ 1.
// A row is stored with all 8 lanes while 8 values of out remain from it (the lanes past n, the
// padding's sums, are overwritten by the rows after it), the last rows under a mask: AMD's CPUs
// run a masked store slowly. Needs AVX2.
TEXT ·vNarrow8(SB), NOSPLIT, $0-88
	MOVQ out_base+0(FP), DI
	MOVQ out_len+8(FP), AX
	MOVQ a_base+24(FP), SI
	MOVQ b8_base+48(FP), R8
	MOVQ k+72(FP), R9
	MOVQ n+80(FP), R10
	XORQ DX, DX
	DIVQ R10                    // AX = rows
	TESTQ AX, AX
	JZ   narrowdone
	LEAQ tailmask<>+32(SB), BX  // the first n lanes
	MOVQ R10, R11
	SHLQ $2, R11                // bytes of an out row
	SUBQ R11, BX
	VMOVDQU (BX), Y15
	VXORPS Y14, Y14, Y14        // zero
	MOVQ R9, R12
	SHLQ $2, R12                // bytes of an a row
	LEAQ (R12)(R12*2), R13      // three a rows

	// Four rows at a time: four independent sums (one row's sum is a chain of additions,
	// bound by their latency), each in the same order as one row alone; while the fourth row
	// has 8 values of out from it, so that all four are stored with 8 lanes.
narrowquad:
	LEAQ -3(AX), DX
	IMULQ R11, DX
	CMPQ DX, $32
	JL   narrowrow
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ R8, BX
	MOVQ R9, CX

narrowquadterm:
	VMOVUPS (BX), Y4            // b[l, ·]
	NARROW_TERM(0(SI), Y0)
	NARROW_TERM((SI)(R12*1), Y1)
	NARROW_TERM((SI)(R12*2), Y2)
	NARROW_TERM((SI)(R13*1), Y3)
	ADDQ $4, SI
	ADDQ $32, BX
	DECQ CX
	JNZ  narrowquadterm

	ADDQ R13, SI                // past the block's four a rows
	VMOVUPS Y0, (DI)            // in order: each row's lanes past n land in the next
	ADDQ R11, DI
	VMOVUPS Y1, (DI)
	ADDQ R11, DI
	VMOVUPS Y2, (DI)
	ADDQ R11, DI
	VMOVUPS Y3, (DI)
	ADDQ R11, DI
	SUBQ $4, AX
	JMP  narrowquad

narrowrow:
	TESTQ AX, AX
	JZ   narrowdone
	VXORPS Y0, Y0, Y0           // the sums, from +0
	MOVQ R8, BX
	MOVQ R9, CX

narrowterm:
	VMOVUPS (BX), Y4            // b[l, ·]
	NARROW_TERM(0(SI), Y0)
	ADDQ $4, SI
	ADDQ $32, BX
	DECQ CX
	JNZ  narrowterm

	MOVQ AX, DX
	IMULQ R11, DX               // the bytes from this row to the end of out
	CMPQ DX, $32
	JL   narrowlast
	VMOVUPS Y0, (DI)            // all 8 lanes: those past n land in rows still to come
	JMP  narrowstored

narrowlast:
	VMASKMOVPS Y0, Y15, (DI)    // the last rows: n lanes, nothing past out

narrowstored:
	ADDQ R11, DI
	DECQ AX
	JMP  narrowrow

narrowdone:
	VZEROUPPER
	RET

#define VSCALE_BODY(LD, ST) LD(SI, Y0); VMULPS Y8, Y0, Y0; ST(Y0, DI)
#define VSCALE_ADVANCE ADDQ $32, DI; ADDQ $32, SI

// func vScale(dst, x []float32, c float32)
// dst[i] = c·x[i] for i < len(dst).
TEXT ·vScale(SB), NOSPLIT, $0-52
	MOVQ dst_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ dst_len+8(FP), CX
	VBROADCASTSS c+48(FP), Y8
	LOOP(VSCALE_BODY, VSCALE_ADVANCE)

#define VAXPY_BODY(LD, ST) LD(SI, Y0); VMULPS Y8, Y0, Y0; LD(DI, Y1); VADDPS Y0, Y1, Y1; ST(Y1, DI)
#define VAXPY_ADVANCE ADDQ $32, DI; ADDQ $32, SI

// func vAxpy(dst, x []float32, c float32)
// dst[i] += c·x[i] for i < len(dst), the product rounded before the sum (no FMA), as Go
// computes dst[i] += c * x[i] for GOAMD64 v1 and v2.
TEXT ·vAxpy(SB), NOSPLIT, $0-52
	MOVQ dst_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ dst_len+8(FP), CX
	VBROADCASTSS c+48(FP), Y8
	LOOP(VAXPY_BODY, VAXPY_ADVANCE)

// VGATEDFWDSIG16_BODY is VGATEDFWDSIG_BODY on 16 lanes, the constants held in Z16-Z29 (set by
// vGatedFwdSig16): the same instructions on each lane, in the same order, with the same operand
// roles (VMINPS and VMAXPS keep theirs for NaN), so each lane's values are bit for bit those of
// the 8-lane loop. LD and ST are the unmasked or K1-masked forms.
#define VGATEDFWDSIG16_BODY(LD, ST) \
	LD(R9, Z0); LD(SI, Z1); LD(R8, Z2); LD(R10, Z3); \
	VPXORD Z16, Z0, Z4; VMINPS Z4, Z17, Z4; VMAXPS Z4, Z18, Z4; \
	VMULPS Z19, Z4, Z5; VRNDSCALEPS $0, Z5, Z5; \
	VFNMADD231PS Z20, Z5, Z4; VFNMADD231PS Z21, Z5, Z4; \
	VMOVAPS Z22, Z6; VFMADD213PS Z23, Z4, Z6; VFMADD213PS Z24, Z4, Z6; VFMADD213PS Z25, Z4, Z6; \
	VFMADD213PS Z26, Z4, Z6; VFMADD213PS Z27, Z4, Z6; \
	VMULPS Z4, Z4, Z7; VFMADD213PS Z4, Z7, Z6; VADDPS Z28, Z6, Z6; \
	VCVTPS2DQ Z5, Z5; VPADDD Z29, Z5, Z5; VPSLLD $23, Z5, Z5; \
	VMULPS Z5, Z6, Z6; VADDPS Z28, Z6, Z6; VDIVPS Z6, Z28, Z6; \
	VFMADD231PS Z3, Z6, Z1; VADDPS Z6, Z2, Z2; \
	ST(Z6, DI); ST(Z1, SI); ST(Z2, R8)

// LOOP16 is LOOP with AVX-512: BODY on 16 values a step, the last CX mod 16 under mask K1.
// (LDU and STU move 16 values with a Z register.) Needs AVX512F.
#define LOOP16(BODY, ADVANCE) \
	STEPS(BODY, ADVANCE, 16); \
	KTAIL(BODY); \
done: \
	VZEROUPPER; \
	RET

#define VGATEDFWDSIG_ADVANCE64 ADDQ $64, DI; ADDQ $64, SI; ADDQ $64, R8; ADDQ $64, R9; ADDQ $64, R10

// func vGatedFwdSig16(eta, num, den, e, b []float32)
// vGatedFwdSig with AVX-512: 16 values a step, the last len mod 16 under mask K1. Needs
// AVX512F.
TEXT ·vGatedFwdSig16(SB), NOSPLIT, $0-120
	SIGARGS
	VPBROADCASTD expc<>+52(SB), Z16 // the sign bit
	VBROADCASTSS expc<>+0(SB), Z17  // clamp hi
	VBROADCASTSS expc<>+4(SB), Z18  // clamp lo
	VBROADCASTSS expc<>+8(SB), Z19  // log2(e)
	VBROADCASTSS expc<>+12(SB), Z20 // ln 2, high part
	VBROADCASTSS expc<>+16(SB), Z21 // ln 2, low part
	VBROADCASTSS expc<>+20(SB), Z22 // p0
	VBROADCASTSS expc<>+24(SB), Z23 // p1
	VBROADCASTSS expc<>+28(SB), Z24 // p2
	VBROADCASTSS expc<>+32(SB), Z25 // p3
	VBROADCASTSS expc<>+36(SB), Z26 // p4
	VBROADCASTSS expc<>+40(SB), Z27 // p5
	VBROADCASTSS expc<>+44(SB), Z28 // 1
	VPBROADCASTD expc<>+48(SB), Z29 // the exponent bias
	LOOP16(VGATEDFWDSIG16_BODY, VGATEDFWDSIG_ADVANCE64)

// KCHUNK sets mask register K to the lanes of 16-column group q (0-3) of a chunk of DX columns:
// the first clamp(DX − 16q, 0, 16). Clobbers CX, BX.
#define KCHUNK(q, K) \
	MOVQ DX, CX; \
	SUBQ $(16*q), CX; \
	MOVQ $0, BX; \
	CMPQ CX, BX; \
	CMOVQLT BX, CX; \
	MOVQ $16, BX; \
	CMPQ CX, BX; \
	CMOVQGT BX, CX; \
	MOVQ $1, BX; \
	SHLQ CX, BX; \
	DECQ BX; \
	KMOVW BX, K

// func vSumRows(o, g []float32, idx []int32, n, stride int)
// o[c] += g[r·stride + c] for each row r in order, for c < len(o): the rows idx[0], idx[1], …
// when idx is not empty, else 0 … n−1. Each value's sum is the one a loop of AddTo(o, row)
// computes (o + row, element by element, row after row), kept in registers: 64 columns (four
// Z registers under masks K1-K4) a pass over the rows. Needs AVX512F.
TEXT ·vSumRows(SB), NOSPLIT, $0-88
	MOVQ o_base+0(FP), DI
	MOVQ o_len+8(FP), R14        // columns left
	MOVQ g_base+24(FP), SI
	MOVQ idx_base+48(FP), R8
	MOVQ idx_len+56(FP), R9
	MOVQ n+72(FP), R11
	MOVQ stride+80(FP), R10
	SHLQ $2, R10                 // a row, in bytes
	TESTQ R14, R14
	JE   sumdone

sumchunk:
	MOVQ R14, DX
	MOVQ $64, AX
	CMPQ DX, AX
	CMOVQGT AX, DX               // this pass's columns
	KCHUNK(0, K1)
	KCHUNK(1, K2)
	KCHUNK(2, K3)
	KCHUNK(3, K4)
	VMOVUPS.Z (DI), K1, Z0
	VMOVUPS.Z 64(DI), K2, Z1
	VMOVUPS.Z 128(DI), K3, Z2
	VMOVUPS.Z 192(DI), K4, Z3
	XORQ R12, R12                // the row's position
	TESTQ R9, R9
	JNE  sumidx
	MOVQ SI, R13
	TESTQ R11, R11
	JE   sumstore

sumseq:
	VADDPS.Z (R13), Z0, K1, Z0
	VADDPS.Z 64(R13), Z1, K2, Z1
	VADDPS.Z 128(R13), Z2, K3, Z2
	VADDPS.Z 192(R13), Z3, K4, Z3
	ADDQ R10, R13
	INCQ R12
	CMPQ R12, R11
	JLT  sumseq
	JMP  sumstore

sumidx:
	MOVLQSX (R8)(R12*4), R13
	IMULQ R10, R13
	ADDQ SI, R13
	VADDPS.Z (R13), Z0, K1, Z0
	VADDPS.Z 64(R13), Z1, K2, Z1
	VADDPS.Z 128(R13), Z2, K3, Z2
	VADDPS.Z 192(R13), Z3, K4, Z3
	INCQ R12
	CMPQ R12, R9
	JLT  sumidx

sumstore:
	VMOVUPS Z0, K1, (DI)
	VMOVUPS Z1, K2, 64(DI)
	VMOVUPS Z2, K3, 128(DI)
	VMOVUPS Z3, K4, 192(DI)
	ADDQ $256, DI
	ADDQ $256, SI
	SUBQ DX, R14
	JG   sumchunk

sumdone:
	VZEROUPPER
	RET

// The batch norm's column sums over a chunk of rows with the sums in registers (StatsRows,
// Stats2Rows, StatsReluRows in vec.go): 64 columns (four Z registers under masks K1-K4) a pass
// over the rows r < n whose keep[r] is true, each row's terms computed with the instructions of
// the row loops above (vStats, vStats2, vStatsRelu) and added in row order, so the sums are
// theirs bit for bit. The rows are stride values apart. Needs AVX512F.
//
// Registers: R14 columns left, DX this pass's columns, AX this pass's first column in bytes,
// DI and SI this pass's s1 and s2, R8 and R9 this pass's columns of the two row arrays, R10 the
// stride in bytes, R11 n, R15 keep, R12 the row, R13 its offset in bytes, BX keep[r].

// ROWSMASKS starts a pass: masks K1-K4 for its DX = min(64, R14) columns.
#define ROWSMASKS \
	MOVQ R14, DX; \
	MOVQ $64, BX; \
	CMPQ DX, BX; \
	CMOVQGT BX, DX; \
	KCHUNK(0, K1); \
	KCHUNK(1, K2); \
	KCHUNK(2, K3); \
	KCHUNK(3, K4)

// ROWSSTART: the pass's s1 and s2 (at DI and SI) into Z0-Z3 and Z4-Z7, from row 0.
#define ROWSSTART \
	LOAD4(DI, Z0, Z1, Z2, Z3); \
	LOAD4(SI, Z4, Z5, Z6, Z7); \
	XORQ R12, R12; \
	XORQ R13, R13

// PASSAT starts a pass (ROWSMASKS) with DI, SI, R8 and R9 at column AX of the slices whose
// bases are at s1, s2, a and b, and its sums loaded (ROWSSTART).
#define PASSAT(s1, s2, a, b) \
	ROWSMASKS; \
	AT(s1, DI); \
	AT(s2, SI); \
	AT(a, R8); \
	AT(b, R9); \
	ROWSSTART

// AT(arg, r) points r at column AX of the slice whose base is at arg.
#define AT(arg, r) \
	MOVQ arg, r; \
	ADDQ AX, r

// LOAD4(p, z0, z1, z2, z3) loads the pass's 64 columns at p under K1-K4.
#define LOAD4(p, z0, z1, z2, z3) \
	VMOVUPS.Z (p), K1, z0; \
	VMOVUPS.Z 64(p), K2, z1; \
	VMOVUPS.Z 128(p), K3, z2; \
	VMOVUPS.Z 192(p), K4, z3

// ROWSEND stores the pass's sums and starts the next pass (label pass), or returns.
#define ROWSEND(pass) \
	VMOVUPS Z0, K1, (DI); \
	VMOVUPS Z1, K2, 64(DI); \
	VMOVUPS Z2, K3, 128(DI); \
	VMOVUPS Z3, K4, 192(DI); \
	VMOVUPS Z4, K1, (SI); \
	VMOVUPS Z5, K2, 64(SI); \
	VMOVUPS Z6, K3, 128(SI); \
	VMOVUPS Z7, K4, 192(SI); \
	ADDQ $256, AX; \
	SUBQ DX, R14; \
	JG   pass; \
	VZEROUPPER; \
	RET

// ROWSETUP loads what every kernel here reads first, from the arguments cols (len(s1)), keep,
// n and stride (in values; R10 holds it in bytes); column 0.
#define ROWSETUP(cols, keep, n, stride) \
	MOVQ cols, R14; \
	MOVQ keep, R15; \
	MOVQ n, R11; \
	MOVQ stride, R10; \
	SHLQ $2, R10; \
	XORQ AX, AX

// ROWLOOP runs G (the four groups of a row) on each kept row r < n, then ROWSEND(pass); row,
// next and end name its labels.
#define ROWLOOP(row, next, end, pass, G) \
row: \
	CMPQ R12, R11; \
	JGE  end; \
	MOVBLZX (R15)(R12*1), BX; \
	TESTL BX, BX; \
	JE   next; \
	G; \
next: \
	INCQ R12; \
	ADDQ R10, R13; \
	JMP  row; \
end: \
	ROWSEND(pass)

// STATSG(off, K, k, z1, z2), one group of 16 columns: v = x − k (x at R8+R13+off, lanes K);
// z1 += v, z2 += v·v (vStats's instructions).
#define STATSG(off, K, k, z1, z2) \
	VMOVUPS.Z off(R8)(R13*1), K, Z12; \
	VSUBPS k, Z12, Z12; \
	VADDPS Z12, z1, z1; \
	VFMADD231PS Z12, Z12, z2

// STATS4: STATSG on a row's four groups of 16 columns.
#define STATS4 \
	STATSG(0, K1, Z8, Z0, Z4); \
	STATSG(64, K2, Z9, Z1, Z5); \
	STATSG(128, K3, Z10, Z2, Z6); \
	STATSG(192, K4, Z11, Z3, Z7)

// func vStatsRows(s1, s2, x, k []float32, keep []bool, n, stride int)
// s1 += x_r − k and s2 += (x_r − k)² over the kept rows r < n of x: vStats on each, in order.
TEXT ·vStatsRows(SB), NOSPLIT, $0-136
	ROWSETUP(s1_len+8(FP), keep_base+96(FP), n+120(FP), stride+128(FP))
	TESTQ R14, R14
	JE   statsdone
statspass:
	PASSAT(s1_base+0(FP), s2_base+24(FP), x_base+48(FP), k_base+72(FP))
	LOAD4(R9, Z8, Z9, Z10, Z11)
	ROWLOOP(statsrow, statsnext, statsend, statspass, STATS4)
statsdone:
	VZEROUPPER
	RET

// STATS2G(off, K, mu, z1, z2), one group: z1 += dy, z2 += dy·(x − mu) (dy at R8+R13+off, x at
// R9+R13+off; vStats2's instructions).
#define STATS2G(off, K, mu, z1, z2) \
	VMOVUPS.Z off(R8)(R13*1), K, Z12; \
	VMOVUPS.Z off(R9)(R13*1), K, Z13; \
	VADDPS Z12, z1, z1; \
	VSUBPS mu, Z13, Z13; \
	VFMADD231PS Z13, Z12, z2

#define STATS24 \
	STATS2G(0, K1, Z8, Z0, Z4); \
	STATS2G(64, K2, Z9, Z1, Z5); \
	STATS2G(128, K3, Z10, Z2, Z6); \
	STATS2G(192, K4, Z11, Z3, Z7)

// func vStats2Rows(s1, s2, dy, x, mu []float32, keep []bool, n, stride int)
// s1 += dy_r and s2 += dy_r ⊙ (x_r − mu) over the kept rows r < n: vStats2 on each, in order.
TEXT ·vStats2Rows(SB), NOSPLIT, $0-160
	ROWSETUP(s1_len+8(FP), keep_base+120(FP), n+144(FP), stride+152(FP))
	TESTQ R14, R14
	JE   stats2done
stats2pass:
	PASSAT(s1_base+0(FP), s2_base+24(FP), dy_base+48(FP), x_base+72(FP))
	AT(mu_base+96(FP), CX)
	LOAD4(CX, Z8, Z9, Z10, Z11)
	ROWLOOP(stats2row, stats2next, stats2end, stats2pass, STATS24)
stats2done:
	VZEROUPPER
	RET

// STATSRELUG(off, K, mu, p, q, z1, z2), one group: v = x − mu, u = g where v·p + q > 0 else +0;
// z1 += u, z2 += u·v (g at R8+R13+off, x at R9+R13+off; vStatsRelu's instructions, its AND with
// the comparison's lanes a zeroing move under K5).
#define STATSRELUG(off, K, mu, p, q, z1, z2) \
	VMOVUPS.Z off(R8)(R13*1), K, Z12; \
	VMOVUPS.Z off(R9)(R13*1), K, Z13; \
	VSUBPS mu, Z13, Z13; \
	VMOVAPS p, Z14; \
	VFMADD213PS q, Z13, Z14; \
	VCMPPS $0x1e, Z28, Z14, K5; \
	VMOVAPS.Z Z12, K5, Z12; \
	VADDPS Z12, z1, z1; \
	VFMADD231PS Z13, Z12, z2

#define STATSRELU4 \
	STATSRELUG(0, K1, Z8, Z16, Z20, Z0, Z4); \
	STATSRELUG(64, K2, Z9, Z17, Z21, Z1, Z5); \
	STATSRELUG(128, K3, Z10, Z18, Z22, Z2, Z6); \
	STATSRELUG(192, K4, Z11, Z19, Z23, Z3, Z7)

// func vStatsReluRows(s1, s2, g, x, mu, p, q []float32, keep []bool, n, stride int)
// With u = g_r where (x_r − mu)·p + q > 0, else 0: s1 += u and s2 += u ⊙ (x_r − mu) over the
// kept rows r < n: vStatsRelu on each, in order.
TEXT ·vStatsReluRows(SB), NOSPLIT, $0-208
	ROWSETUP(s1_len+8(FP), keep_base+168(FP), n+192(FP), stride+200(FP))
	VPXORD Z28, Z28, Z28
	TESTQ R14, R14
	JE   statsreludone
statsrelupass:
	PASSAT(s1_base+0(FP), s2_base+24(FP), g_base+48(FP), x_base+72(FP))
	AT(mu_base+96(FP), CX)
	LOAD4(CX, Z8, Z9, Z10, Z11)
	AT(p_base+120(FP), CX)
	LOAD4(CX, Z16, Z17, Z18, Z19)
	AT(q_base+144(FP), CX)
	LOAD4(CX, Z20, Z21, Z22, Z23)
	ROWLOOP(statsrelurow, statsrelunext, statsreluend, statsrelupass, STATSRELU4)
statsreludone:
	VZEROUPPER
	RET

// HKMASKS loads masks K1, K2 and K3 (a row's columns 0-15, 16-31, its heads) from the
// arguments at o1, o2, o3.
#define HKMASKS(o1, o2, o3) \
	MOVQ o1, AX; \
	KMOVW AX, K1; \
	MOVQ o2, AX; \
	KMOVW AX, K2; \
	MOVQ o3, AX; \
	KMOVW AX, K3

// func vHeadDot(out, a, b []float32, idx []int32, m, d, h, w, k1, k2, k3 int)
// out[i, j] = Σ_t a[i, j·w+t]·b[i, j·w+t] for rows i < m (d ≤ 32 columns, h ≤ 16 heads of w):
// a row's products (rounded) in Z0 (columns 0-15) and Z2 (16-31), then for t = 0 … w−1 the
// products idx[t·16+j] = j·w + t gathered to lane j (VPERMI2PS over the two) and added to the
// heads' sums, from +0: each head's sum in column order, as HeadDot's loop adds it.
TEXT ·vHeadDot(SB), NOSPLIT, $0-152
	MOVQ out_base+0(FP), DI
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), R8
	MOVQ idx_base+72(FP), R9
	MOVQ m+96(FP), R11
	MOVQ d+104(FP), R10
	SHLQ $2, R10                 // a row of a and b, in bytes
	MOVQ h+112(FP), R12
	SHLQ $2, R12                 // a row of out, in bytes
	MOVQ w+120(FP), R13
	HKMASKS(k1+128(FP), k2+136(FP), k3+144(FP))
	TESTQ R11, R11
	JE   hddone

hdrow:
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS.Z (R8), K1, Z1
	VMULPS Z1, Z0, Z0
	VMOVUPS.Z 64(SI), K2, Z2
	VMOVUPS.Z 64(R8), K2, Z3
	VMULPS Z3, Z2, Z2
	VPXORD Z4, Z4, Z4
	MOVQ R9, CX
	MOVQ R13, DX

hdterm:
	VMOVDQU32 (CX), Z5
	VPERMI2PS Z2, Z0, Z5
	VADDPS Z5, Z4, Z4
	ADDQ $64, CX
	DECQ DX
	JNZ  hdterm
	VMOVUPS Z4, K3, (DI)
	ADDQ R10, SI
	ADDQ R10, R8
	ADDQ R12, DI
	DECQ R11
	JNZ  hdrow

hddone:
	VZEROUPPER
	RET

// func vHeadScale(out, x, s []float32, idx []int32, m, d, h, k1, k2, k3 int)
// out[i, c] = s[i, idx[c]]·x[i, c] for rows i < m (d ≤ 32 columns, h ≤ 16 heads; idx[c] = c/w,
// 32 of them): the row's head scales spread to its columns by VPERMPS, one product each.
TEXT ·vHeadScale(SB), NOSPLIT, $0-144
	MOVQ out_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ s_base+48(FP), R8
	MOVQ idx_base+72(FP), R9
	VMOVDQU32 (R9), Z6
	VMOVDQU32 64(R9), Z7
	MOVQ m+96(FP), R11
	MOVQ d+104(FP), R10
	SHLQ $2, R10                 // a row of x and out, in bytes
	MOVQ h+112(FP), R12
	SHLQ $2, R12                 // a row of s, in bytes
	HKMASKS(k1+120(FP), k2+128(FP), k3+136(FP))
	TESTQ R11, R11
	JE   hsdone

hsrow:
	VMOVUPS.Z (R8), K3, Z0
	VPERMPS Z0, Z6, Z1
	VMOVUPS.Z (SI), K1, Z2
	VMULPS Z2, Z1, Z2
	VMOVUPS Z2, K1, (DI)
	VPERMPS Z0, Z7, Z1
	VMOVUPS.Z 64(SI), K2, Z2
	VMULPS Z2, Z1, Z2
	VMOVUPS Z2, K2, 64(DI)
	ADDQ R10, SI
	ADDQ R10, DI
	ADDQ R12, R8
	DECQ R11
	JNZ  hsrow

hsdone:
	VZEROUPPER
	RET
