#include "textflag.h"

// Constants of the float32 exponential (Cephes expf): the clamp, log2(e), ln 2 in two parts, the
// polynomial of e^r on [-ln2/2, ln2/2], 1, the exponent bias and the sign bit, 8 copies each.
DATA expc<>+0(SB)/8, $0x42b0c0a542b0c0a5   // clamp hi = 88.3762626647949
DATA expc<>+8(SB)/8, $0x42b0c0a542b0c0a5
DATA expc<>+16(SB)/8, $0x42b0c0a542b0c0a5
DATA expc<>+24(SB)/8, $0x42b0c0a542b0c0a5
DATA expc<>+32(SB)/8, $0xc2b0c0a5c2b0c0a5   // clamp lo = -88.3762626647949
DATA expc<>+40(SB)/8, $0xc2b0c0a5c2b0c0a5
DATA expc<>+48(SB)/8, $0xc2b0c0a5c2b0c0a5
DATA expc<>+56(SB)/8, $0xc2b0c0a5c2b0c0a5
DATA expc<>+64(SB)/8, $0x3fb8aa3b3fb8aa3b   // log2(e) = 1.4426950408889634
DATA expc<>+72(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expc<>+80(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expc<>+88(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expc<>+96(SB)/8, $0x3f3180003f318000   // ln2 high part = 0.693359375
DATA expc<>+104(SB)/8, $0x3f3180003f318000
DATA expc<>+112(SB)/8, $0x3f3180003f318000
DATA expc<>+120(SB)/8, $0x3f3180003f318000
DATA expc<>+128(SB)/8, $0xb95e8083b95e8083   // ln2 low part = -0.00021219444
DATA expc<>+136(SB)/8, $0xb95e8083b95e8083
DATA expc<>+144(SB)/8, $0xb95e8083b95e8083
DATA expc<>+152(SB)/8, $0xb95e8083b95e8083
DATA expc<>+160(SB)/8, $0x3950696739506967   // p0 = 0.000198756915
DATA expc<>+168(SB)/8, $0x3950696739506967
DATA expc<>+176(SB)/8, $0x3950696739506967
DATA expc<>+184(SB)/8, $0x3950696739506967
DATA expc<>+192(SB)/8, $0x3ab743ce3ab743ce   // p1 = 0.0013981999507
DATA expc<>+200(SB)/8, $0x3ab743ce3ab743ce
DATA expc<>+208(SB)/8, $0x3ab743ce3ab743ce
DATA expc<>+216(SB)/8, $0x3ab743ce3ab743ce
DATA expc<>+224(SB)/8, $0x3c0889083c088908   // p2 = 0.0083334519073
DATA expc<>+232(SB)/8, $0x3c0889083c088908
DATA expc<>+240(SB)/8, $0x3c0889083c088908
DATA expc<>+248(SB)/8, $0x3c0889083c088908
DATA expc<>+256(SB)/8, $0x3d2aa9c13d2aa9c1   // p3 = 0.041665795894
DATA expc<>+264(SB)/8, $0x3d2aa9c13d2aa9c1
DATA expc<>+272(SB)/8, $0x3d2aa9c13d2aa9c1
DATA expc<>+280(SB)/8, $0x3d2aa9c13d2aa9c1
DATA expc<>+288(SB)/8, $0x3e2aaaaa3e2aaaaa   // p4 = 0.16666665459
DATA expc<>+296(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA expc<>+304(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA expc<>+312(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA expc<>+320(SB)/8, $0x3f0000003f000000   // p5 = 0.50000001201
DATA expc<>+328(SB)/8, $0x3f0000003f000000
DATA expc<>+336(SB)/8, $0x3f0000003f000000
DATA expc<>+344(SB)/8, $0x3f0000003f000000
DATA expc<>+352(SB)/8, $0x3f8000003f800000   // 1 = 1.0
DATA expc<>+360(SB)/8, $0x3f8000003f800000
DATA expc<>+368(SB)/8, $0x3f8000003f800000
DATA expc<>+376(SB)/8, $0x3f8000003f800000
DATA expc<>+384(SB)/8, $0x0000007f0000007f   // bias 127
DATA expc<>+392(SB)/8, $0x0000007f0000007f
DATA expc<>+400(SB)/8, $0x0000007f0000007f
DATA expc<>+408(SB)/8, $0x0000007f0000007f
DATA expc<>+416(SB)/8, $0x8000000080000000   // sign bit
DATA expc<>+424(SB)/8, $0x8000000080000000
DATA expc<>+432(SB)/8, $0x8000000080000000
DATA expc<>+440(SB)/8, $0x8000000080000000
GLOBL expc<>(SB), RODATA|NOPTR, $448

// func sigmoid8(dst, src []float32)
// dst[i] = 1/(1 + exp(-src[i])) for i < len(src) rounded down to a multiple of 8; len(dst) must
// be at least that. exp is Cephes' expf (within 2 ulp) on the argument clamped to ±88.376, so
// the result is in [0, 1] for every finite input. Needs AVX2 and FMA.
TEXT ·sigmoid8(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	SHRQ $3, CX
	JZ   done
	VMOVUPS expc<>+0(SB), Y5
	VMOVUPS expc<>+32(SB), Y6
	VMOVUPS expc<>+64(SB), Y7
	VMOVUPS expc<>+96(SB), Y8
	VMOVUPS expc<>+128(SB), Y9
	VMOVUPS expc<>+160(SB), Y10
	VMOVUPS expc<>+192(SB), Y11
	VMOVUPS expc<>+224(SB), Y12
	VMOVUPS expc<>+256(SB), Y13
	VMOVUPS expc<>+288(SB), Y14
	VMOVUPS expc<>+320(SB), Y15

loop:
	VMOVUPS     (SI), Y0
	VXORPS      expc<>+416(SB), Y0, Y0 // z = -x
	VMINPS      Y0, Y5, Y0
	VMAXPS      Y0, Y6, Y0
	VMULPS      Y7, Y0, Y1
	VROUNDPS    $0, Y1, Y1             // n = round(z·log2 e)
	VFNMADD231PS Y8, Y1, Y0            // r = z - n·ln2
	VFNMADD231PS Y9, Y1, Y0
	VMOVAPS     Y10, Y3
	VFMADD213PS Y11, Y0, Y3
	VFMADD213PS Y12, Y0, Y3
	VFMADD213PS Y13, Y0, Y3
	VFMADD213PS Y14, Y0, Y3
	VFMADD213PS Y15, Y0, Y3
	VMULPS      Y0, Y0, Y4
	VFMADD213PS Y0, Y4, Y3             // p·r² + r
	VMOVUPS     expc<>+352(SB), Y4
	VADDPS      Y4, Y3, Y3             // e^r
	VCVTPS2DQ   Y1, Y1
	VPADDD      expc<>+384(SB), Y1, Y1
	VPSLLD      $23, Y1, Y1            // 2^n
	VMULPS      Y1, Y3, Y3             // e^z
	VADDPS      Y4, Y3, Y3
	VDIVPS      Y3, Y4, Y3             // 1/(1 + e^z)
	VMOVUPS     Y3, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DI
	DECQ        CX
	JNZ         loop
	VZEROUPPER

done:
	RET
