package emu

import (
	"math"
	"testing"
)

// TestRoundTF32 checks the TF32 rounding on hand-computed cases, by their bits: values TF32
// holds exactly, round down and up, ties to even both ways, the carry into the exponent and
// to +Inf, negatives, subnormals, and ±0, ±Inf and NaN passed through.
func TestRoundTF32(t *testing.T) {
	one := uint32(0x3f800000) // 1.0; 1 + k·2⁻²³ is one + k
	ulp := uint32(1 << 13)    // TF32's last mantissa bit: 2⁻¹⁰ at 1.0
	cases := []struct {
		name    string
		in, out uint32
	}{
		{"1 exact", one, one},
		{"1+2⁻¹⁰ exact", one + ulp, one + ulp},
		{"1+2⁻²³ down", one + 1, one},
		{"1.1 down", 0x3f8ccccd, 0x3f8cc000}, // low bits 0x0ccd < 0x1000: 1.099609375
		{"just below a tie, down", one + ulp/2 - 1, one},
		{"just above a tie, up", one + ulp/2 + 1, one + ulp},
		{"tie to even: down to 1", one + ulp/2, one},                 // 1 + 2⁻¹¹ → 1
		{"tie to even: up to 1+2⁻⁹", one + ulp + ulp/2, one + 2*ulp}, // 1 + 3·2⁻¹¹ → 1 + 2⁻⁹
		{"negative tie to even", 0x80000000 | (one + ulp + ulp/2), 0x80000000 | (one + 2*ulp)},
		{"negative down", 0xbf8ccccd, 0xbf8cc000},
		{"carry into the exponent", 0x3fffffff, 0x40000000}, // 2 − 2⁻²³ → 2
		{"largest float32 to +Inf", 0x7f7fffff, 0x7f800000},
		{"largest TF32 exact", 0x7f7fe000, 0x7f7fe000},
		{"smallest subnormal to 0", 0x00000001, 0x00000000},
		{"subnormal tie to even 0", 0x00001000, 0x00000000},
		{"subnormal tie to even up", 0x00003000, 0x00004000},
		{"subnormal exact", 0x00002000, 0x00002000},
		{"largest subnormal to the smallest normal", 0x007fffff, 0x00800000},
		{"negative subnormal", 0x80001001, 0x80002000},
		{"+0", 0x00000000, 0x00000000},
		{"−0", 0x80000000, 0x80000000},
		{"+Inf", 0x7f800000, 0x7f800000},
		{"−Inf", 0xff800000, 0xff800000},
		{"quiet NaN with a payload", 0x7fc01234, 0x7fc01234},
		{"signalling NaN", 0x7f800001, 0x7f800001},
		{"negative NaN", 0xffc00fff, 0xffc00fff},
	}
	for _, c := range cases {
		got := math.Float32bits(RoundTF32(math.Float32frombits(c.in)))
		if got != c.out {
			t.Errorf("%s: RoundTF32(%#08x = %g) = %#08x (%g), want %#08x (%g)", c.name, c.in, math.Float32frombits(c.in),
				got, math.Float32frombits(got), c.out, math.Float32frombits(c.out))
		}
	}
	xs := []float32{1.1, -1.1}
	RoundTF32s(xs)
	if xs[0] != 1.099609375 || xs[1] != -1.099609375 {
		t.Errorf("RoundTF32s: %v", xs)
	}
}

// TestRoundTF32Nearest: over a sweep of float32s, the rounded value keeps only the top 10
// mantissa bits and is never farther from the input than half a TF32 unit in the last place.
func TestRoundTF32Nearest(t *testing.T) {
	for b := uint32(0x00000001); b < 0x7f800000; b += 0x000a3d71 {
		x := math.Float32frombits(b)
		r := RoundTF32(x)
		rb := math.Float32bits(r)
		if rb&0x1fff != 0 {
			t.Fatalf("RoundTF32(%#08x) = %#08x keeps dropped bits", b, rb)
		}
		if math.IsInf(float64(r), 0) {
			continue
		}
		e := b & 0x7f800000
		if e == 0 {
			e = 0x00800000 // subnormals: the smallest normal's unit
		}
		half := float64(math.Float32frombits(e)) * math.Pow(2, -11)
		if d := math.Abs(float64(r) - float64(x)); d > half {
			t.Fatalf("RoundTF32(%g) = %g, %g away (more than half a unit, %g)", x, r, d, half)
		}
	}
}
