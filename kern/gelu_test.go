package kern

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGeluMatchesDefinition checks gelu against values of PyTorch's tanh form and its
// derivative against central differences.
func TestGeluMatchesDefinition(t *testing.T) {
	for _, c := range []struct{ x, want float64 }{{0, 0}, {1, 0.8411919906082768}, {-1, -0.15880800939172324}, {3, 2.996362607918227}} {
		if got := gelu(c.x); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("gelu(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	for _, x := range []float64{-4, -1.3, -0.2, 0, 0.7, 2.5} {
		const h = 1e-6
		num := (gelu(x+h) - gelu(x-h)) / (2 * h)
		if got := geluGrad(x); math.Abs(got-num) > 1e-8 {
			t.Errorf("gelu'(%v) = %v, central difference %v", x, got, num)
		}
	}
	x := []float32{-2, -0.5, 0, 0.5, 2}
	out, dx := make([]float32, 5), make([]float32, 5)
	Gelu(out, x)
	GeluGrad(dx, x, []float32{1, 1, 1, 1, 1})
	for i := range x {
		if out[i] != float32(gelu(float64(x[i]))) || dx[i] != float32(geluGrad(float64(x[i]))) {
			t.Errorf("float32 gelu at %v: %v, %v", x[i], out[i], dx[i])
		}
	}
}

// tanhInputs are the values the tanh kernel is checked on: the special values, each branch's
// boundaries (0, 0.625, ½·MAXLOG) and their neighbours, and random values of every magnitude
// the GELU meets and beyond (dense below 50, where the three forms meet), both signs.
func tanhInputs(n int) []float64 {
	const halfMaxLog = 0.5 * 8.8029691931113054295988e+01
	xs := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), math.SmallestNonzeroFloat64,
		-math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64, 1e-300, 1e300}
	for _, b := range []float64{0, 0.625, halfMaxLog, 1, 0.3466, 354.89} {
		for _, s := range []float64{1, -1} {
			x := s * b
			for range 5 {
				x = math.Nextafter(x, math.Inf(-1))
			}
			for range 11 {
				xs = append(xs, x)
				x = math.Nextafter(x, math.Inf(1))
			}
		}
	}
	rng := rand.New(rand.NewPCG(65, 68))
	for range n {
		var x float64
		switch rng.IntN(4) {
		case 0:
			x = rng.Float64() * 1.25 // the rational form and the boundary
		case 1:
			x = rng.Float64() * 50 // the exp form and the ±1 boundary
		case 2:
			x = math.Exp(rng.Float64()*80 - 60) // tiny to large
		default:
			x = float64(float32(rng.NormFloat64() * 3)) // activations
		}
		if rng.IntN(2) == 0 {
			x = -x
		}
		xs = append(xs, x)
	}
	return xs
}

// The AVX2 tanh is math.Tanh bit for bit (NaN as NaN) on every length (the tail computed by
// math.Tanh), and so Gelu and GeluGrad equal the scalar gelu and geluGrad bit for bit in
// float32 and float64, across the blocks of Gelu, with and without the kernel.
func TestTanhsIsMathTanh(t *testing.T) {
	if !haveKernel {
		t.Log("no AVX2/FMA: Tanhs is math.Tanh itself")
	}
	xs := tanhInputs(200000)
	for _, n := range []int{len(xs), len(xs) - 1, len(xs) - 2, len(xs) - 3, 3, 0} {
		got := make([]float64, n)
		Tanhs(got, xs)
		for i, x := range xs[:n] {
			want := math.Tanh(x)
			if math.Float64bits(got[i]) != math.Float64bits(want) && !(math.IsNaN(want) && math.IsNaN(got[i])) {
				t.Fatalf("n %d: tanh(%v = %#x) = %v (%#x), math.Tanh %v (%#x)", n, x, math.Float64bits(x), got[i], math.Float64bits(got[i]), want, math.Float64bits(want))
			}
		}
	}
	for _, kernel := range []bool{true, false} {
		saved := haveKernel
		haveKernel = haveKernel && kernel
		x32 := make([]float32, 0, len(xs))
		for _, x := range xs {
			x32 = append(x32, float32(x))
		}
		g32 := make([]float32, len(xs))
		for i := range g32 {
			g32[i] = float32(i%7) - 2.5
		}
		out, dx := make([]float32, len(xs)-5), make([]float32, len(xs)-5)
		Gelu(out, x32)
		GeluGrad(dx, x32, g32)
		for i := range out {
			x := float64(x32[i])
			wo, wd := float32(gelu(x)), float32(float64(g32[i])*geluGrad(x))
			if math.Float32bits(out[i]) != math.Float32bits(wo) && !(wo != wo && out[i] != out[i]) ||
				math.Float32bits(dx[i]) != math.Float32bits(wd) && !(wd != wd && dx[i] != dx[i]) {
				t.Fatalf("kernel %v: float32 gelu at %v: %v, %v; want %v, %v", kernel, x, out[i], dx[i], wo, wd)
			}
		}
		o64, d64 := make([]float64, len(xs)), make([]float64, len(xs))
		g64 := make([]float64, len(xs))
		for i := range g64 {
			g64[i] = float64(g32[i])
		}
		Gelu(o64, xs)
		GeluGrad(d64, xs, g64)
		for i, x := range xs {
			wo, wd := gelu(x), g64[i]*geluGrad(x)
			if math.Float64bits(o64[i]) != math.Float64bits(wo) && !(math.IsNaN(wo) && math.IsNaN(o64[i])) ||
				math.Float64bits(d64[i]) != math.Float64bits(wd) && !(math.IsNaN(wd) && math.IsNaN(d64[i])) {
				t.Fatalf("kernel %v: float64 gelu at %v: %v, %v; want %v, %v", kernel, x, o64[i], d64[i], wo, wd)
			}
		}
		haveKernel = saved
	}
}

func BenchmarkGelu(b *testing.B) {
	x := make([]float32, 1<<16)
	for i := range x {
		x[i] = float32(i%2001)/250 - 4
	}
	out := make([]float32, len(x))
	b.SetBytes(int64(4 * len(x)))
	for b.Loop() {
		Gelu(out, x)
	}
}

// expInputs are random arguments across and beyond math.Exp's range, small ones, and every
// boundary of archExp's branches and of Exps' ±expSafe, with their neighbours.
func expInputs(n int) []float64 {
	rng := rand.New(rand.NewPCG(61, 62))
	var xs []float64
	for range n {
		switch rng.IntN(4) {
		case 0:
			xs = append(xs, rng.Float64()*1520-760)
		case 1:
			xs = append(xs, rng.NormFloat64()*5)
		case 2:
			xs = append(xs, -rng.ExpFloat64()*20) // a softmax's arguments
		default:
			xs = append(xs, math.Copysign(math.Exp(rng.Float64()*80-75), rng.Float64()-0.5))
		}
	}
	for _, b := range []float64{0, expSafe, -expSafe, 708.39, -708.39, 709.782712893384, 709.79, -745.1332191019411, -745.14, -744.4, -707, -1022 * math.Ln2, 1023 * math.Ln2, 0.5 * math.Ln2, 1e-300, 5e-324} {
		for _, v := range []float64{b, -b, math.Nextafter(b, math.Inf(1)), math.Nextafter(b, math.Inf(-1))} {
			xs = append(xs, v)
		}
	}
	return append(xs, math.Inf(1), math.Inf(-1), math.NaN(), math.Copysign(0, -1), 1e10, -1e10)
}

// TestExpsIsMathExp checks Exps against math.Exp bit for bit, in place and not, at lengths around
// the 4-lane step, with arguments beyond ±expSafe among those within it.
func TestExpsIsMathExp(t *testing.T) {
	xs := expInputs(200000)
	rand.New(rand.NewPCG(63, 64)).Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
	for _, kernel := range []bool{true, false} {
		saved := haveKernel
		haveKernel = haveKernel && kernel
		for _, n := range []int{len(xs), len(xs) - 1, len(xs) - 2, len(xs) - 3, 7, 4, 3, 0} {
			for _, inPlace := range []bool{false, true} {
				got := make([]float64, n)
				if inPlace {
					copy(got, xs)
					Exps(got, got)
				} else {
					Exps(got, xs)
				}
				for i, x := range xs[:n] {
					want := math.Exp(x)
					if math.Float64bits(got[i]) != math.Float64bits(want) && !(math.IsNaN(want) && math.IsNaN(got[i])) {
						t.Fatalf("kernel %v, n %d, in place %v: exp(%v = %#x) = %v (%#x), math.Exp %v (%#x)", kernel, n, inPlace, x, math.Float64bits(x), got[i], math.Float64bits(got[i]), want, math.Float64bits(want))
					}
				}
			}
		}
		haveKernel = saved
	}
}
