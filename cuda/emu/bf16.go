package emu

import "math"

// RoundBF16Bits is x in bf16, the storage of train.precision bf16: the upper 16 bits of its
// float32 after rounding to nearest, ties to even, on the 16 dropped bits (a carry runs into the
// exponent, so the largest float32s become +Inf or −Inf, as IEEE rounding into the narrower
// format gives). A NaN stays a NaN, quieted, its upper payload kept; ±Inf stay. It is the CPU
// twin of the kernels' rw_bf16_bits (cuda/kernels/common.cuh).
func RoundBF16Bits(x float32) uint16 {
	b := math.Float32bits(x)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// BF16Float is the float32 of bf16 bits h (exact: bf16 is float32's upper half).
func BF16Float(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// RoundBF16 is x rounded to bf16, as a float32 (what storing x in bf16 and reading it back
// gives).
func RoundBF16(x float32) float32 { return BF16Float(RoundBF16Bits(x)) }
