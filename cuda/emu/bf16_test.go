package emu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRoundBF16 checks the bf16 rounding on hand-computed cases, by their bits: values bf16
// holds exactly, round down and up, ties to even both ways, the carry into the exponent and to
// ±Inf, negatives, subnormals, ±0, ±Inf, and NaNs kept NaN (quieted).
func TestRoundBF16(t *testing.T) {
	one := uint32(0x3f800000) // 1.0; 1 + k·2⁻²³ is one + k
	ulp := uint32(1 << 16)    // bf16's last mantissa bit: 2⁻⁷ at 1.0
	cases := []struct {
		name string
		in   uint32
		out  uint16
	}{
		{"1 exact", one, 0x3f80},
		{"1+2⁻⁷ exact", one + ulp, 0x3f81},
		{"1+2⁻²³ down", one + 1, 0x3f80},
		{"1.1 up", 0x3f8ccccd, 0x3f8d}, // low bits 0xcccd > 0x8000: 1.1015625
		{"just below a tie, down", one + ulp/2 - 1, 0x3f80},
		{"just above a tie, up", one + ulp/2 + 1, 0x3f81},
		{"tie to even: down to 1", one + ulp/2, 0x3f80},
		{"tie to even: up to 1+2⁻⁶", one + ulp + ulp/2, 0x3f82},
		{"negative tie to even", 0x80000000 | (one + ulp + ulp/2), 0xbf82},
		{"carry into the exponent", 0x3fffffff, 0x4000},
		{"largest float32 to +Inf", 0x7f7fffff, 0x7f80},
		{"largest float32 negative to −Inf", 0xff7fffff, 0xff80},
		{"largest bf16 exact", 0x7f7f0000, 0x7f7f},
		{"smallest subnormal to 0", 0x00000001, 0x0000},
		{"subnormal tie to even up", 0x00018000, 0x0002},
		{"largest subnormal to the smallest normal", 0x007fffff, 0x0080},
		{"+0", 0x00000000, 0x0000},
		{"−0", 0x80000000, 0x8000},
		{"+Inf", 0x7f800000, 0x7f80},
		{"−Inf", 0xff800000, 0xff80},
		{"quiet NaN with a payload", 0x7fc01234, 0x7fc0},
		{"signalling NaN, payload only in the dropped bits", 0x7f800001, 0x7fc0},
		{"negative NaN", 0xff812345, 0xffc1},
	}
	for _, c := range cases {
		got := RoundBF16Bits(math.Float32frombits(c.in))
		if got != c.out {
			t.Errorf("%s: RoundBF16Bits(%#08x = %g) = %#04x, want %#04x", c.name, c.in, math.Float32frombits(c.in), got, c.out)
		}
		if f := RoundBF16(math.Float32frombits(c.in)); math.Float32bits(f) != uint32(c.out)<<16 {
			t.Errorf("%s: RoundBF16 = %#08x, want %#08x", c.name, math.Float32bits(f), uint32(c.out)<<16)
		}
	}
}

// TestRoundBF16Nearest: over random finite float32s, the rounded value is the nearer of the two
// bf16 values around the input (the even one on a tie), so never farther than half a unit in
// the last place, and rounding twice changes nothing.
func TestRoundBF16Nearest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		b := rng.Uint32()
		x := math.Float32frombits(b)
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			continue
		}
		lo := math.Float32frombits(b &^ 0xffff) // toward zero
		hi := math.Float32frombits((b &^ 0xffff) + 0x10000)
		hi64 := float64(hi) // past the largest bf16: ±2¹²⁸, where rounding up gives ±Inf
		if math.IsInf(hi64, 0) {
			hi64 = math.Copysign(math.Ldexp(1, 128), hi64)
		}
		r := RoundBF16(x)
		dl, dh := math.Abs(float64(x)-float64(lo)), math.Abs(float64(x)-hi64)
		want := lo
		if dh < dl || (dh == dl && (b>>16)&1 == 1) {
			want = hi
		}
		if r != want {
			t.Fatalf("RoundBF16(%#08x = %g) = %g, want %g", b, x, r, want)
		}
		if RoundBF16(r) != r {
			t.Fatalf("RoundBF16 is not idempotent at %g", x)
		}
	}
}
