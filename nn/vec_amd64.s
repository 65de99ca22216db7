// Code generated for this package: float32 element-wise loops (AVX2/FMA), 8 values a step
// and a masked step for the last len mod 8. Every slice must be at least as long as the first.

#include "textflag.h"

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

DATA ones<>+0(SB)/8, $0x3f8000003f800000
DATA ones<>+8(SB)/8, $0x3f8000003f800000
DATA ones<>+16(SB)/8, $0x3f8000003f800000
DATA ones<>+24(SB)/8, $0x3f8000003f800000
GLOBL ones<>(SB), RODATA|NOPTR, $32

// func vAddTo(dst, a []float32)
// dst[i] += a[i] for i < len(dst).
TEXT ·vAddTo(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ a_base+24(FP), SI
	MOVQ dst_len+8(FP), CX
	SUBQ $8, CX
	JL   tailvAddTo
loopvAddTo:
	VMOVUPS (DI), Y0
	VMOVUPS (SI), Y1
	VADDPS Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
	JGE  loopvAddTo
tailvAddTo:
	ADDQ $8, CX
	JE   donevAddTo
	LEAQ tailmask<>+32(SB), AX
	SHLQ $2, CX
	SUBQ CX, AX
	VMOVDQU (AX), Y15
	VMASKMOVPS (DI), Y15, Y0
	VMASKMOVPS (SI), Y15, Y1
	VADDPS Y1, Y0, Y0
	VMASKMOVPS Y0, Y15, (DI)
donevAddTo:
	VZEROUPPER
	RET

// func vAdd2(dst, a, b []float32)
// dst[i] = a[i] + b[i] for i < len(dst).
TEXT ·vAdd2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), R8
	MOVQ dst_len+8(FP), CX
	SUBQ $8, CX
	JL   tailvAdd2
loopvAdd2:
	VMOVUPS (SI), Y0
	VMOVUPS (R8), Y1
	VADDPS Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, R8
	SUBQ $8, CX
	JGE  loopvAdd2
tailvAdd2:
	ADDQ $8, CX
	JE   donevAdd2
	LEAQ tailmask<>+32(SB), AX
	SHLQ $2, CX
	SUBQ CX, AX
	VMOVDQU (AX), Y15
	VMASKMOVPS (SI), Y15, Y0
	VMASKMOVPS (R8), Y15, Y1
	VADDPS Y1, Y0, Y0
	VMASKMOVPS Y0, Y15, (DI)
donevAdd2:
	VZEROUPPER
	RET

// func vAdd3(dst, a, b, c []float32)
// dst[i] = a[i] + b[i] + c[i] for i < len(dst).
TEXT ·vAdd3(SB), NOSPLIT, $0-96
	MOVQ dst_base+0(FP), DI
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), R8
	MOVQ c_base+72(FP), R9
	MOVQ dst_len+8(FP), CX
	SUBQ $8, CX
	JL   tailvAdd3
loopvAdd3:
	VMOVUPS (SI), Y0
	VMOVUPS (R8), Y1
	VMOVUPS (R9), Y2
	VADDPS Y1, Y0, Y0
	VADDPS Y2, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, R9
	SUBQ $8, CX
	JGE  loopvAdd3
tailvAdd3:
	ADDQ $8, CX
	JE   donevAdd3
	LEAQ tailmask<>+32(SB), AX
	SHLQ $2, CX
	SUBQ CX, AX
	VMOVDQU (AX), Y15
	VMASKMOVPS (SI), Y15, Y0
	VMASKMOVPS (R8), Y15, Y1
	VMASKMOVPS (R9), Y15, Y2
	VADDPS Y1, Y0, Y0
	VADDPS Y2, Y0, Y0
	VMASKMOVPS Y0, Y15, (DI)
donevAdd3:
	VZEROUPPER
	RET

// func vRelu(dst, x []float32)
// dst[i] = max(x[i], 0) for i < len(dst).
TEXT ·vRelu(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ dst_len+8(FP), CX
	SUBQ $8, CX
	JL   tailvRelu
loopvRelu:
	VMOVUPS (SI), Y0
	VXORPS Y1, Y1, Y1
	VMAXPS Y0, Y1, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
	JGE  loopvRelu
tailvRelu:
	ADDQ $8, CX
	JE   donevRelu
	LEAQ tailmask<>+32(SB), AX
	SHLQ $2, CX
	SUBQ CX, AX
	VMOVDQU (AX), Y15
	VMASKMOVPS (SI), Y15, Y0
	VXORPS Y1, Y1, Y1
	VMAXPS Y0, Y1, Y0
	VMASKMOVPS Y0, Y15, (DI)
donevRelu:
	VZEROUPPER
	RET

// func vReluGrad(dst, y, g []float32)
// dst[i] = g[i] where y[i] > 0, else 0 for i < len(dst).
TEXT ·vReluGrad(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ y_base+24(FP), SI
	MOVQ g_base+48(FP), R8
	MOVQ dst_len+8(FP), CX
	SUBQ $8, CX
	JL   tailvReluGrad
loopvReluGrad:
	VMOVUPS (SI), Y0
	VMOVUPS (R8), Y1
	VXORPS Y2, Y2, Y2
	VCMPPS $0x1e, Y2, Y0, Y0
	VANDPS Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, R8
	SUBQ $8, CX
	JGE  loopvReluGrad
tailvReluGrad:
	ADDQ $8, CX
	JE   donevReluGrad
	LEAQ tailmask<>+32(SB), AX
	SHLQ $2, CX
	SUBQ CX, AX
	VMOVDQU (AX), Y15
	VMASKMOVPS (SI), Y15, Y0
	VMASKMOVPS (R8), Y15, Y1
	VXORPS Y2, Y2, Y2
	VCMPPS $0x1e, Y2, Y0, Y0
	VANDPS Y1, Y0, Y0
	VMASKMOVPS Y0, Y15, (DI)
donevReluGrad:
	VZEROUPPER
	RET

// func vGatedFwd(num, den, h, b []float32)
// num[i] += h[i]·b[i]; den[i] += h[i] for i < len(num).
TEXT ·vGatedFwd(SB), NOSPLIT, $0-96
	MOVQ num_base+0(FP), DI
	MOVQ den_base+24(FP), SI
	MOVQ h_base+48(FP), R8
	MOVQ b_base+72(FP), R9
	MOVQ num_len+8(FP), CX
	SUBQ $8, CX
	JL   tailvGatedFwd
loopvGatedFwd:
	VMOVUPS (DI), Y0
	VMOVUPS (SI), Y1
	VMOVUPS (R8), Y2
	VMOVUPS (R9), Y3
	VFMADD231PS Y3, Y2, Y0
	VADDPS Y2, Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, (SI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, R9
	SUBQ $8, CX
	JGE  loopvGatedFwd
tailvGatedFwd:
	ADDQ $8, CX
	JE   donevGatedFwd
	LEAQ tailmask<>+32(SB), AX
	SHLQ $2, CX
	SUBQ CX, AX
	VMOVDQU (AX), Y15
	VMASKMOVPS (DI), Y15, Y0
	VMASKMOVPS (SI), Y15, Y1
	VMASKMOVPS (R8), Y15, Y2
	VMASKMOVPS (R9), Y15, Y3
	VFMADD231PS Y3, Y2, Y0
	VADDPS Y2, Y1, Y1
	VMASKMOVPS Y0, Y15, (DI)
	VMASKMOVPS Y1, Y15, (SI)
donevGatedFwd:
	VZEROUPPER
	RET

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
	VMOVUPS ones<>(SB), Y14
	SUBQ $8, CX
	JL   tailvGatedBwd
loopvGatedBwd:
	VMOVUPS (SI), Y0
	VMOVUPS (R8), Y1
	VMOVUPS (R9), Y2
	VMOVUPS (R10), Y3
	VMOVUPS (R11), Y4
	VMULPS Y2, Y1, Y2
	VADDPS Y2, Y0, Y0
	VSUBPS Y1, Y14, Y1
	VMULPS Y1, Y2, Y2
	VSUBPS Y4, Y3, Y3
	VMULPS Y3, Y2, Y2
	VMOVUPS Y0, (SI)
	VMOVUPS Y2, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, R11
	SUBQ $8, CX
	JGE  loopvGatedBwd
tailvGatedBwd:
	ADDQ $8, CX
	JE   donevGatedBwd
	LEAQ tailmask<>+32(SB), AX
	SHLQ $2, CX
	SUBQ CX, AX
	VMOVDQU (AX), Y15
	VMASKMOVPS (SI), Y15, Y0
	VMASKMOVPS (R8), Y15, Y1
	VMASKMOVPS (R9), Y15, Y2
	VMASKMOVPS (R10), Y15, Y3
	VMASKMOVPS (R11), Y15, Y4
	VMULPS Y2, Y1, Y2
	VADDPS Y2, Y0, Y0
	VSUBPS Y1, Y14, Y1
	VMULPS Y1, Y2, Y2
	VSUBPS Y4, Y3, Y3
	VMULPS Y3, Y2, Y2
	VMASKMOVPS Y0, Y15, (SI)
	VMASKMOVPS Y2, Y15, (DI)
donevGatedBwd:
	VZEROUPPER
	RET

// func vStats(s1, s2, x, k []float32)
// v = x[i] − k[i]; s1[i] += v; s2[i] += v·v for i < len(s1).
TEXT ·vStats(SB), NOSPLIT, $0-96
	MOVQ s1_base+0(FP), DI
	MOVQ s2_base+24(FP), SI
	MOVQ x_base+48(FP), R8
	MOVQ k_base+72(FP), R9
	MOVQ s1_len+8(FP), CX
	SUBQ $8, CX
	JL   tailvStats
loopvStats:
	VMOVUPS (DI), Y0
	VMOVUPS (SI), Y1
	VMOVUPS (R8), Y2
	VMOVUPS (R9), Y3
	VSUBPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VFMADD231PS Y2, Y2, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, (SI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, R9
	SUBQ $8, CX
	JGE  loopvStats
tailvStats:
	ADDQ $8, CX
	JE   donevStats
	LEAQ tailmask<>+32(SB), AX
	SHLQ $2, CX
	SUBQ CX, AX
	VMOVDQU (AX), Y15
	VMASKMOVPS (DI), Y15, Y0
	VMASKMOVPS (SI), Y15, Y1
	VMASKMOVPS (R8), Y15, Y2
	VMASKMOVPS (R9), Y15, Y3
	VSUBPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VFMADD231PS Y2, Y2, Y1
	VMASKMOVPS Y0, Y15, (DI)
	VMASKMOVPS Y1, Y15, (SI)
donevStats:
	VZEROUPPER
	RET

// func vStats2(s1, s2, dy, x, mu []float32)
// s1[i] += dy[i]; s2[i] += dy[i]·(x[i] − mu[i]) for i < len(s1).
TEXT ·vStats2(SB), NOSPLIT, $0-120
	MOVQ s1_base+0(FP), DI
	MOVQ s2_base+24(FP), SI
	MOVQ dy_base+48(FP), R8
	MOVQ x_base+72(FP), R9
	MOVQ mu_base+96(FP), R10
	MOVQ s1_len+8(FP), CX
	SUBQ $8, CX
	JL   tailvStats2
loopvStats2:
	VMOVUPS (DI), Y0
	VMOVUPS (SI), Y1
	VMOVUPS (R8), Y2
	VMOVUPS (R9), Y3
	VMOVUPS (R10), Y4
	VADDPS Y2, Y0, Y0
	VSUBPS Y4, Y3, Y3
	VFMADD231PS Y3, Y2, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, (SI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	SUBQ $8, CX
	JGE  loopvStats2
tailvStats2:
	ADDQ $8, CX
	JE   donevStats2
	LEAQ tailmask<>+32(SB), AX
	SHLQ $2, CX
	SUBQ CX, AX
	VMOVDQU (AX), Y15
	VMASKMOVPS (DI), Y15, Y0
	VMASKMOVPS (SI), Y15, Y1
	VMASKMOVPS (R8), Y15, Y2
	VMASKMOVPS (R9), Y15, Y3
	VMASKMOVPS (R10), Y15, Y4
	VADDPS Y2, Y0, Y0
	VSUBPS Y4, Y3, Y3
	VFMADD231PS Y3, Y2, Y1
	VMASKMOVPS Y0, Y15, (DI)
	VMASKMOVPS Y1, Y15, (SI)
donevStats2:
	VZEROUPPER
	RET

// func vAffine(dst, x, mu, p, q []float32)
// dst[i] = (x[i] − mu[i])·p[i] + q[i] for i < len(dst).
TEXT ·vAffine(SB), NOSPLIT, $0-120
	MOVQ dst_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ mu_base+48(FP), R8
	MOVQ p_base+72(FP), R9
	MOVQ q_base+96(FP), R10
	MOVQ dst_len+8(FP), CX
	SUBQ $8, CX
	JL   tailvAffine
loopvAffine:
	VMOVUPS (SI), Y0
	VMOVUPS (R8), Y1
	VMOVUPS (R9), Y2
	VMOVUPS (R10), Y3
	VSUBPS Y1, Y0, Y0
	VFMADD213PS Y3, Y2, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	SUBQ $8, CX
	JGE  loopvAffine
tailvAffine:
	ADDQ $8, CX
	JE   donevAffine
	LEAQ tailmask<>+32(SB), AX
	SHLQ $2, CX
	SUBQ CX, AX
	VMOVDQU (AX), Y15
	VMASKMOVPS (SI), Y15, Y0
	VMASKMOVPS (R8), Y15, Y1
	VMASKMOVPS (R9), Y15, Y2
	VMASKMOVPS (R10), Y15, Y3
	VSUBPS Y1, Y0, Y0
	VFMADD213PS Y3, Y2, Y0
	VMASKMOVPS Y0, Y15, (DI)
donevAffine:
	VZEROUPPER
	RET

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
	SUBQ $8, CX
	JL   tailvBNBack
loopvBNBack:
	VMOVUPS (SI), Y0
	VMOVUPS (R8), Y1
	VMOVUPS (R9), Y2
	VMOVUPS (R10), Y3
	VMOVUPS (R11), Y4
	VMOVUPS (R12), Y5
	VSUBPS Y2, Y1, Y1
	VFMADD213PS Y5, Y4, Y1
	VFMADD231PS Y3, Y0, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $32, R12
	SUBQ $8, CX
	JGE  loopvBNBack
tailvBNBack:
	ADDQ $8, CX
	JE   donevBNBack
	LEAQ tailmask<>+32(SB), AX
	SHLQ $2, CX
	SUBQ CX, AX
	VMOVDQU (AX), Y15
	VMASKMOVPS (SI), Y15, Y0
	VMASKMOVPS (R8), Y15, Y1
	VMASKMOVPS (R9), Y15, Y2
	VMASKMOVPS (R10), Y15, Y3
	VMASKMOVPS (R11), Y15, Y4
	VMASKMOVPS (R12), Y15, Y5
	VSUBPS Y2, Y1, Y1
	VFMADD213PS Y5, Y4, Y1
	VFMADD231PS Y3, Y0, Y1
	VMASKMOVPS Y1, Y15, (DI)
donevBNBack:
	VZEROUPPER
	RET

// func vAffineRelu(dst, x, mu, p, q []float32)
// dst[i] = max((x[i] − mu[i])·p[i] + q[i], 0) for i < len(dst).
TEXT ·vAffineRelu(SB), NOSPLIT, $0-120
	MOVQ dst_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ mu_base+48(FP), R8
	MOVQ p_base+72(FP), R9
	MOVQ q_base+96(FP), R10
	MOVQ dst_len+8(FP), CX
	SUBQ $8, CX
	JL   tailvAffineRelu
loopvAffineRelu:
	VMOVUPS (SI), Y0
	VMOVUPS (R8), Y1
	VMOVUPS (R9), Y2
	VMOVUPS (R10), Y3
	VSUBPS Y1, Y0, Y0
	VFMADD213PS Y3, Y2, Y0
	VXORPS Y4, Y4, Y4
	VMAXPS Y0, Y4, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	SUBQ $8, CX
	JGE  loopvAffineRelu
tailvAffineRelu:
	ADDQ $8, CX
	JE   donevAffineRelu
	LEAQ tailmask<>+32(SB), AX
	SHLQ $2, CX
	SUBQ CX, AX
	VMOVDQU (AX), Y15
	VMASKMOVPS (SI), Y15, Y0
	VMASKMOVPS (R8), Y15, Y1
	VMASKMOVPS (R9), Y15, Y2
	VMASKMOVPS (R10), Y15, Y3
	VSUBPS Y1, Y0, Y0
	VFMADD213PS Y3, Y2, Y0
	VXORPS Y4, Y4, Y4
	VMAXPS Y0, Y4, Y0
	VMASKMOVPS Y0, Y15, (DI)
donevAffineRelu:
	VZEROUPPER
	RET

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
	SUBQ $8, CX
	JL   tailvAffineReluAdd
loopvAffineReluAdd:
	VMOVUPS (SI), Y0
	VMOVUPS (R8), Y1
	VMOVUPS (R9), Y2
	VMOVUPS (R10), Y3
	VMOVUPS (R11), Y5
	VSUBPS Y1, Y0, Y0
	VFMADD213PS Y3, Y2, Y0
	VXORPS Y4, Y4, Y4
	VMAXPS Y0, Y4, Y0
	VADDPS Y5, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, R11
	SUBQ $8, CX
	JGE  loopvAffineReluAdd
tailvAffineReluAdd:
	ADDQ $8, CX
	JE   donevAffineReluAdd
	LEAQ tailmask<>+32(SB), AX
	SHLQ $2, CX
	SUBQ CX, AX
	VMOVDQU (AX), Y15
	VMASKMOVPS (SI), Y15, Y0
	VMASKMOVPS (R8), Y15, Y1
	VMASKMOVPS (R9), Y15, Y2
	VMASKMOVPS (R10), Y15, Y3
	VMASKMOVPS (R11), Y15, Y5
	VSUBPS Y1, Y0, Y0
	VFMADD213PS Y3, Y2, Y0
	VXORPS Y4, Y4, Y4
	VMAXPS Y0, Y4, Y0
	VADDPS Y5, Y0, Y0
	VMASKMOVPS Y0, Y15, (DI)
donevAffineReluAdd:
	VZEROUPPER
	RET

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
	SUBQ $8, CX
	JL   tailvStatsRelu
loopvStatsRelu:
	VMOVUPS (DI), Y0
	VMOVUPS (SI), Y1
	VMOVUPS (R8), Y2
	VMOVUPS (R9), Y3
	VMOVUPS (R10), Y4
	VMOVUPS (R11), Y5
	VMOVUPS (R12), Y6
	VSUBPS Y4, Y3, Y3
	VFMADD213PS Y6, Y3, Y5
	VXORPS Y7, Y7, Y7
	VCMPPS $0x1e, Y7, Y5, Y5
	VANDPS Y5, Y2, Y2
	VADDPS Y2, Y0, Y0
	VFMADD231PS Y3, Y2, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, (SI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $32, R12
	SUBQ $8, CX
	JGE  loopvStatsRelu
tailvStatsRelu:
	ADDQ $8, CX
	JE   donevStatsRelu
	LEAQ tailmask<>+32(SB), AX
	SHLQ $2, CX
	SUBQ CX, AX
	VMOVDQU (AX), Y15
	VMASKMOVPS (DI), Y15, Y0
	VMASKMOVPS (SI), Y15, Y1
	VMASKMOVPS (R8), Y15, Y2
	VMASKMOVPS (R9), Y15, Y3
	VMASKMOVPS (R10), Y15, Y4
	VMASKMOVPS (R11), Y15, Y5
	VMASKMOVPS (R12), Y15, Y6
	VSUBPS Y4, Y3, Y3
	VFMADD213PS Y6, Y3, Y5
	VXORPS Y7, Y7, Y7
	VCMPPS $0x1e, Y7, Y5, Y5
	VANDPS Y5, Y2, Y2
	VADDPS Y2, Y0, Y0
	VFMADD231PS Y3, Y2, Y1
	VMASKMOVPS Y0, Y15, (DI)
	VMASKMOVPS Y1, Y15, (SI)
donevStatsRelu:
	VZEROUPPER
	RET

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
	SUBQ $8, CX
	JL   tailvBNBackRelu
loopvBNBackRelu:
	VMOVUPS (SI), Y0
	VMOVUPS (R8), Y1
	VMOVUPS (R9), Y2
	VMOVUPS (R10), Y3
	VMOVUPS (R11), Y4
	VMOVUPS (R12), Y5
	VMOVUPS (R13), Y6
	VMOVUPS (DX), Y7
	VSUBPS Y2, Y1, Y1
	VFMADD213PS Y4, Y1, Y3
	VXORPS Y8, Y8, Y8
	VCMPPS $0x1e, Y8, Y3, Y3
	VANDPS Y3, Y0, Y0
	VFMADD213PS Y7, Y6, Y1
	VFMADD231PS Y5, Y0, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R13
	ADDQ $32, DX
	SUBQ $8, CX
	JGE  loopvBNBackRelu
tailvBNBackRelu:
	ADDQ $8, CX
	JE   donevBNBackRelu
	LEAQ tailmask<>+32(SB), AX
	SHLQ $2, CX
	SUBQ CX, AX
	VMOVDQU (AX), Y15
	VMASKMOVPS (SI), Y15, Y0
	VMASKMOVPS (R8), Y15, Y1
	VMASKMOVPS (R9), Y15, Y2
	VMASKMOVPS (R10), Y15, Y3
	VMASKMOVPS (R11), Y15, Y4
	VMASKMOVPS (R12), Y15, Y5
	VMASKMOVPS (R13), Y15, Y6
	VMASKMOVPS (DX), Y15, Y7
	VSUBPS Y2, Y1, Y1
	VFMADD213PS Y4, Y1, Y3
	VXORPS Y8, Y8, Y8
	VCMPPS $0x1e, Y8, Y3, Y3
	VANDPS Y3, Y0, Y0
	VFMADD213PS Y7, Y6, Y1
	VFMADD231PS Y5, Y0, Y1
	VMASKMOVPS Y1, Y15, (DI)
donevBNBackRelu:
	VZEROUPPER
	RET
