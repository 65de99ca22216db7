#include "textflag.h"

// func kern6x16(a []float32, rs, cs int, b []float32, ldb int, c []float32, ldc int, k, acc int, bias []float32)
// C[0:6, 0:16] (+)= A[0:6, 0:k] · B[0:k, 0:16], where A's element (i, p) is a[i·rs + p·cs], and
// B and C are row-major with leading dimensions ldb and ldc (all in elements). With acc = 0 the
// product is stored, otherwise added to C; a non-empty bias[0:16] is added to every row. k must
// be at least 1. Needs AVX2 and FMA.
//
// rs = lda, cs = 1 reads A row-major; rs = 1, cs = ldx reads the transpose of a row-major X, so
// Xᵀ·G needs no transposed copy.
//
// Each step also prefetches one cache line of A after its 6 rows (A[6:, ·] when cs = 1) and one
// of C after its 6 rows: the next row block's operands, which sgemmNN computes next. In a training
// step they come from memory, and a block's rows (k values each) are too short a stream for the
// hardware prefetcher: BenchmarkSgemmNNCold, 40,245 × 70 × 70 on cold operands, 45-59 → 55-68
// GFLOPS on the AVX2 kernel (one thread, 2026-12-02). A prefetch changes no result.
TEXT ·kern6x16(SB), NOSPLIT, $0-144
	MOVQ a_base+0(FP), SI
	MOVQ rs+24(FP), R8
	MOVQ cs+32(FP), R12
	MOVQ b_base+40(FP), DI
	MOVQ ldb+64(FP), R9
	MOVQ c_base+72(FP), DX
	MOVQ ldc+96(FP), R10
	MOVQ k+104(FP), CX
	SHLQ $2, R8
	SHLQ $2, R12
	SHLQ $2, R9
	SHLQ $2, R10
	LEAQ (SI)(R8*2), R11
	ADDQ R8, R11                // R11: row 3 of A
	LEAQ (R11)(R8*2), R13
	ADDQ R8, R13                // R13: row 6, the next block's rows, prefetched a line a step
	MOVQ R10, R14
	IMULQ $6, R14
	ADDQ DX, R14                // R14: C's row 6, likewise
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

loop:
	PREFETCHT0   (R13)
	PREFETCHT0   (R14)
	ADDQ         $64, R13
	ADDQ         $64, R14
	VMOVUPS      (DI), Y12
	VMOVUPS      32(DI), Y13
	VBROADCASTSS (SI), Y14
	VFMADD231PS  Y12, Y14, Y0
	VFMADD231PS  Y13, Y14, Y1
	VBROADCASTSS (SI)(R8*1), Y15
	VFMADD231PS  Y12, Y15, Y2
	VFMADD231PS  Y13, Y15, Y3
	VBROADCASTSS (SI)(R8*2), Y14
	VFMADD231PS  Y12, Y14, Y4
	VFMADD231PS  Y13, Y14, Y5
	VBROADCASTSS (R11), Y15
	VFMADD231PS  Y12, Y15, Y6
	VFMADD231PS  Y13, Y15, Y7
	VBROADCASTSS (R11)(R8*1), Y14
	VFMADD231PS  Y12, Y14, Y8
	VFMADD231PS  Y13, Y14, Y9
	VBROADCASTSS (R11)(R8*2), Y15
	VFMADD231PS  Y12, Y15, Y10
	VFMADD231PS  Y13, Y15, Y11
	ADDQ         R12, SI
	ADDQ         R12, R11
	ADDQ         R9, DI
	DECQ         CX
	JNZ          loop

	MOVQ bias_base+120(FP), AX
	MOVQ bias_len+128(FP), BX
	TESTQ BX, BX
	JE   nobias
	VMOVUPS (AX), Y12
	VMOVUPS 32(AX), Y13
	VADDPS Y12, Y0, Y0
	VADDPS Y13, Y1, Y1
	VADDPS Y12, Y2, Y2
	VADDPS Y13, Y3, Y3
	VADDPS Y12, Y4, Y4
	VADDPS Y13, Y5, Y5
	VADDPS Y12, Y6, Y6
	VADDPS Y13, Y7, Y7
	VADDPS Y12, Y8, Y8
	VADDPS Y13, Y9, Y9
	VADDPS Y12, Y10, Y10
	VADDPS Y13, Y11, Y11

nobias:
	MOVQ acc+112(FP), AX
	TESTQ AX, AX
	JE   store
	VADDPS (DX), Y0, Y0
	VADDPS 32(DX), Y1, Y1
	VADDPS (DX)(R10*1), Y2, Y2
	VADDPS 32(DX)(R10*1), Y3, Y3
	VADDPS (DX)(R10*2), Y4, Y4
	VADDPS 32(DX)(R10*2), Y5, Y5
	LEAQ   (DX)(R10*2), BX
	ADDQ   R10, BX
	VADDPS (BX), Y6, Y6
	VADDPS 32(BX), Y7, Y7
	VADDPS (BX)(R10*1), Y8, Y8
	VADDPS 32(BX)(R10*1), Y9, Y9
	VADDPS (BX)(R10*2), Y10, Y10
	VADDPS 32(BX)(R10*2), Y11, Y11

store:
	LEAQ    (DX)(R10*2), BX
	ADDQ    R10, BX
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, (DX)(R10*1)
	VMOVUPS Y3, 32(DX)(R10*1)
	VMOVUPS Y4, (DX)(R10*2)
	VMOVUPS Y5, 32(DX)(R10*2)
	VMOVUPS Y6, (BX)
	VMOVUPS Y7, 32(BX)
	VMOVUPS Y8, (BX)(R10*1)
	VMOVUPS Y9, 32(BX)(R10*1)
	VMOVUPS Y10, (BX)(R10*2)
	VMOVUPS Y11, 32(BX)(R10*2)
	VZEROUPPER
	RET
