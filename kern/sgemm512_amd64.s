#include "textflag.h"

// FMA3(base, z0, z1, z2) adds B's row (Z12) times A's values at base, base+rs and base+2rs
// (rs in R8) to accumulators z0, z1, z2.
#define FMA3(base, z0, z1, z2) \
	VFMADD231PS.BCST (base), Z12, z0; \
	VFMADD231PS.BCST (base)(R8*1), Z12, z1; \
	VFMADD231PS.BCST (base)(R8*2), Z12, z2

// ACC3(base, z0, z1, z2) adds C's rows at base, base+ldc and base+2ldc (ldc in R10, lanes K1)
// to z0, z1, z2; STORE3 stores them there.
#define ACC3(base, z0, z1, z2) \
	VADDPS.Z (base), z0, K1, z0; \
	VADDPS.Z (base)(R10*1), z1, K1, z1; \
	VADDPS.Z (base)(R10*2), z2, K1, z2

#define STORE3(base, z0, z1, z2) \
	VMOVUPS z0, K1, (base); \
	VMOVUPS z1, K1, (base)(R10*1); \
	VMOVUPS z2, K1, (base)(R10*2)

// BIAS4(z0, z1, z2, z3) adds the bias row (Z12) to four accumulators.
#define BIAS4(z0, z1, z2, z3) \
	VADDPS Z12, z0, z0; \
	VADDPS Z12, z1, z1; \
	VADDPS Z12, z2, z2; \
	VADDPS Z12, z3, z3

// func kern12x16(a []float32, rs, cs int, b []float32, ldb int, c []float32, ldc int, k, acc int, bias []float32, cols int)
// The AVX-512 form of kern6x16: C[0:12, 0:cols] (+)= A[0:12, 0:k] · B[0:k, 0:cols] (+ bias on
// every row when bias is not empty), A's element (i, p) at a[i·rs + p·cs], for cols ≥ 1, in
// blocks of 16 columns, one after the other, each as a call for that block alone would compute
// it (one call for a whole row block saves the calls' overhead: 8 % of an AQSOL epoch's
// samples in the product went to the 5 calls a row block made at 70 columns). The last block's
// B, C and bias are read and written under a mask of cols mod 16 lanes, so nothing past column
// cols is touched. Every product is a fused multiply-add with A's value broadcast from memory.
// k must be at least 1. Like kern6x16 it prefetches a line of A and of C after its rows each
// step (BenchmarkSgemmNNCold: 54-58 → 67-84 GFLOPS). Needs AVX-512F.
TEXT ·kern12x16(SB), NOSPLIT, $0-152
	MOVQ rs+24(FP), R8
	MOVQ cs+32(FP), BX
	MOVQ ldb+64(FP), R9
	MOVQ ldc+96(FP), R10
	SHLQ $2, R8
	SHLQ $2, BX
	SHLQ $2, R9
	SHLQ $2, R10
	XORQ R15, R15               // the block's first column, in bytes

block12:
	MOVQ cols+144(FP), CX
	SHLQ $2, CX
	SUBQ R15, CX
	SHRQ $2, CX                 // columns left
	MOVQ $16, AX
	CMPQ CX, AX
	CMOVQGT AX, CX              // this block's columns
	MOVQ $1, R11
	SHLQ CX, R11
	DECQ R11
	KMOVW R11, K1               // the first cols lanes
	MOVQ a_base+0(FP), SI
	MOVQ b_base+40(FP), DI
	ADDQ R15, DI
	MOVQ c_base+72(FP), DX
	ADDQ R15, DX
	MOVQ k+104(FP), CX
	LEAQ (SI)(R8*2), R11
	ADDQ R8, R11                // rows 3-5
	LEAQ (R11)(R8*2), R12
	ADDQ R8, R12                // rows 6-8
	LEAQ (R12)(R8*2), R13
	ADDQ R8, R13                // rows 9-11
	LEAQ (R13)(R8*2), R14
	ADDQ R8, R14                // row 12: the next block's rows, prefetched a line a step
	MOVQ R10, AX
	IMULQ $12, AX
	ADDQ DX, AX                 // C's row 12, likewise
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11

loop12:
	PREFETCHT0 (R14)
	ADDQ $64, R14
	PREFETCHT0 (AX)
	ADDQ $64, AX
	VMOVUPS.Z (DI), K1, Z12
	FMA3(SI, Z0, Z1, Z2)
	FMA3(R11, Z3, Z4, Z5)
	FMA3(R12, Z6, Z7, Z8)
	FMA3(R13, Z9, Z10, Z11)
	ADDQ BX, SI
	ADDQ BX, R11
	ADDQ BX, R12
	ADDQ BX, R13
	ADDQ R9, DI
	DECQ CX
	JNZ  loop12

	MOVQ bias_base+120(FP), AX
	MOVQ bias_len+128(FP), CX
	TESTQ CX, CX
	JE   nobias12
	ADDQ R15, AX
	VMOVUPS.Z (AX), K1, Z12
	BIAS4(Z0, Z1, Z2, Z3)
	BIAS4(Z4, Z5, Z6, Z7)
	BIAS4(Z8, Z9, Z10, Z11)

nobias12:
	LEAQ (DX)(R10*2), R11
	ADDQ R10, R11
	LEAQ (R11)(R10*2), R12
	ADDQ R10, R12
	LEAQ (R12)(R10*2), R13
	ADDQ R10, R13
	MOVQ acc+112(FP), AX
	TESTQ AX, AX
	JE   store12
	ACC3(DX, Z0, Z1, Z2)
	ACC3(R11, Z3, Z4, Z5)
	ACC3(R12, Z6, Z7, Z8)
	ACC3(R13, Z9, Z10, Z11)

store12:
	STORE3(DX, Z0, Z1, Z2)
	STORE3(R11, Z3, Z4, Z5)
	STORE3(R12, Z6, Z7, Z8)
	STORE3(R13, Z9, Z10, Z11)
	ADDQ $64, R15
	MOVQ cols+144(FP), AX
	SHLQ $2, AX
	CMPQ R15, AX
	JLT  block12
	VZEROUPPER
	RET
