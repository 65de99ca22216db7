package emu

import "math"

// RoundTF32 rounds x to TF32, the tensor cores' input format: float32's sign and 8-bit
// exponent with 10 explicit mantissa bits (of float32's 23), returned as the float32 of that
// value. It rounds to nearest, ties to even, on the 13 dropped bits: IEEE rounding into the
// narrower format, as a carry from the mantissa into the exponent (1.11…1 → 2.0, the largest
// finite float32 → +Inf) falls out of the addition. Subnormals round on the same bits (TF32
// keeps float32's subnormal range); ±Inf and NaN (its payload too) come back unchanged.
//
// This is the emulated cuBLAS's model of CUBLAS_TF32_TENSOR_OP_MATH. NVIDIA does not document
// how cuBLAS's TF32 kernels convert their float32 inputs: the explicit conversion
// (__float_to_tf32, PTX cvt.rna.tf32.f32) rounds to nearest with ties away from zero, and
// tensor cores fed raw float32 read only the top 10 mantissa bits (truncation). The three
// differ by at most one TF32 unit in the last place of an input, and round to nearest even
// differs from ties away only on exact ties (1 input in 8192 at random); tests on a GPU
// compare with a tolerance that covers truncation.
func RoundTF32(x float32) float32 {
	b := math.Float32bits(x)
	if b&0x7f800000 == 0x7f800000 { // Inf or NaN
		return x
	}
	const dropped = 13
	lsb := (b >> dropped) & 1 // the last kept bit: a tie rounds up when it is odd
	b += 1<<(dropped-1) - 1 + lsb
	b &^= 1<<dropped - 1
	return math.Float32frombits(b)
}

// RoundTF32s rounds every element of xs to TF32 in place (RoundTF32).
func RoundTF32s(xs []float32) {
	for i, x := range xs {
		xs[i] = RoundTF32(x)
	}
}
