package kern

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// Tests of the heads, the kernel mix, the gated aggregation, the Gaussian weights and the losses
// against plain float64 loops written from the formulas, hand-derived cases, and central finite
// differences for the gradients.

func randF64(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return v
}

func narrow(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, f := range v {
		out[i] = float32(f)
	}
	return out
}

// nearly fails unless got and want agree to tol relative to 1 + |want|.
func nearly(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if d := math.Abs(got[i] - want[i]); !(d <= tol*(1+math.Abs(want[i]))) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// numGrad is the central finite difference of f with respect to every entry of x.
func numGrad(x []float64, f func() float64) []float64 {
	const h = 1e-6
	out := make([]float64, len(x))
	for i := range x {
		v := x[i]
		x[i] = v + h
		up := f()
		x[i] = v - h
		down := f()
		x[i] = v
		out[i] = (up - down) / (2 * h)
	}
	return out
}

func dot64(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func TestHeadKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	const m, h, d = 37, 4, 24
	w := d / h
	a, b, s := randF64(rng, m*d), randF64(rng, m*d), randF64(rng, m*h)
	wantDot, wantScale := make([]float64, m*h), make([]float64, m*d)
	for i := 0; i < m; i++ {
		for c := 0; c < d; c++ {
			j := c / w
			wantDot[i*h+j] += a[i*d+c] * b[i*d+c]
			wantScale[i*d+c] = s[i*h+j] * a[i*d+c]
		}
	}
	out := make([]float64, m*h)
	HeadDot(out, a, b, m, h, d)
	nearly(t, "head dot", out, wantDot, 1e-12)
	out32 := make([]float32, m*h)
	HeadDot(out32, narrow(a), narrow(b), m, h, d)
	nearly(t, "head dot float32", widen(out32), wantDot, 1e-5)
	sc := make([]float64, m*d)
	HeadScale(sc, a, s, m, h, d)
	nearly(t, "head scale", sc, wantScale, 0)
	// Hand case: one row, two heads of width 2.
	hd := make([]float64, 2)
	HeadDot(hd, []float64{1, 2, 3, 4}, []float64{5, 6, 7, 8}, 1, 2, 4)
	nearly(t, "head dot by hand", hd, []float64{17, 53}, 0)
	hs := make([]float64, 4)
	HeadScale(hs, []float64{1, 2, 3, 4}, []float64{10, -1}, 1, 2, 4)
	nearly(t, "head scale by hand", hs, []float64{10, 20, -3, -4}, 0)
}

func TestKernelMix(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	const m, kk, d = 23, 3, 5
	x, w, g := randF64(rng, m*kk*d), randF64(rng, m*kk), randF64(rng, m*d)
	want := make([]float64, m*d)
	for i := 0; i < m; i++ {
		for j := 0; j < kk; j++ {
			for c := 0; c < d; c++ {
				want[i*d+c] += w[i*kk+j] * x[i*kk*d+j*d+c]
			}
		}
	}
	out := make([]float64, m*d)
	for i := range out {
		out[i] = math.NaN() // every value must be overwritten
	}
	KernelMix(out, x, w, m, kk, d)
	nearly(t, "kernel mix", out, want, 1e-12)
	out32 := make([]float32, m*d)
	KernelMix(out32, narrow(x), narrow(w), m, kk, d)
	nearly(t, "kernel mix float32", widen(out32), want, 1e-5)

	loss := func() float64 { KernelMix(out, x, w, m, kk, d); return dot64(out, g) }
	dx, dw := make([]float64, m*kk*d), make([]float64, m*kk)
	KernelMixBackward(dx, dw, x, w, g, m, kk, d)
	nearly(t, "kernel mix dx", dx, numGrad(x, loss), 1e-6)
	nearly(t, "kernel mix dw", dw, numGrad(w, loss), 1e-6)
	// One gradient at a time, the other's inputs nil: the same bits.
	dx1, dw1 := make([]float64, m*kk*d), make([]float64, m*kk)
	KernelMixBackward(dx1, nil, nil, w, g, m, kk, d)
	KernelMixBackward(nil, dw1, x, nil, g, m, kk, d)
	if firstDiff(dx1, dx) >= 0 || firstDiff(dw1, dw) >= 0 {
		t.Fatal("kernel mix: one gradient alone differs from both together")
	}
}

// gaussRef is GaussianWeights in float64 straight from the formula.
func gaussRef(u, mu, is []float64, m, kk, p int) []float64 {
	w := make([]float64, m*kk)
	for i := 0; i < m; i++ {
		for j := 0; j < kk; j++ {
			q := 0.0
			for c := 0; c < p; c++ {
				z := (u[i*p+c] - mu[j*p+c]) * is[j*p+c]
				q += z * z
			}
			w[i*kk+j] = math.Exp(-q / 2)
		}
	}
	return w
}

func TestGaussianWeights(t *testing.T) {
	rng := rand.New(rand.NewPCG(75, 76))
	const m, kk, p = 19, 3, 2
	u, mu, is, g := randF64(rng, m*p), randF64(rng, kk*p), randF64(rng, kk*p), randF64(rng, m*kk)
	w := make([]float64, m*kk)
	GaussianWeights(w, u, mu, is, m, kk, p)
	nearly(t, "gaussian weights", w, gaussRef(u, mu, is, m, kk, p), 1e-12)
	w32 := make([]float32, m*kk)
	GaussianWeights(w32, narrow(u), narrow(mu), narrow(is), m, kk, p)
	nearly(t, "gaussian weights float32", widen(w32), gaussRef(u, mu, is, m, kk, p), 1e-5)
	// Hand case: u − μ = (1, 2), 1/σ = (1, 0.5): exp(−½(1 + 1)) = e⁻¹.
	one := make([]float64, 1)
	GaussianWeights(one, []float64{3, 4}, []float64{2, 2}, []float64{1, 0.5}, 1, 1, 2)
	nearly(t, "gaussian weight by hand", one, []float64{math.Exp(-1)}, 1e-15)

	loss := func() float64 { return dot64(gaussRef(u, mu, is, m, kk, p), g) }
	du, dmu, dis := make([]float64, m*p), make([]float64, kk*p), make([]float64, kk*p)
	for _, v := range [][]float64{du, dmu, dis} {
		for i := range v {
			v[i] = math.NaN()
		}
	}
	GaussianWeightsBackward(du, dmu, dis, u, mu, is, w, g, m, kk, p)
	nearly(t, "gaussian du", du, numGrad(u, loss), 1e-6)
	nearly(t, "gaussian dmu", dmu, numGrad(mu, loss), 1e-6)
	nearly(t, "gaussian dis", dis, numGrad(is, loss), 1e-6)
	for which, want := range [][]float64{du, dmu, dis} {
		var grads [3][]float64
		grads[which] = make([]float64, len(want))
		GaussianWeightsBackward(grads[0], grads[1], grads[2], u, mu, is, w, g, m, kk, p)
		if firstDiff(grads[which], want) >= 0 {
			t.Fatalf("gaussian gradient %d alone differs from all three together", which)
		}
	}
}

// gatedRef is GatedAggregate in float64 by scattering over the edges.
func gatedRef(e, bh []float64, src, dst []int32, nodes, d int) []float64 {
	num, den := make([]float64, nodes*d), make([]float64, nodes*d)
	for i := range den {
		den[i] = GatedEps
	}
	for k := range src {
		if src[k] < 0 || dst[k] < 0 {
			continue
		}
		for c := 0; c < d; c++ {
			eta := 1 / (1 + math.Exp(-e[k*d+c]))
			num[int(dst[k])*d+c] += eta * bh[int(src[k])*d+c]
			den[int(dst[k])*d+c] += eta
		}
	}
	for i := range num {
		num[i] /= den[i]
	}
	return num
}

func TestGatedAggregate(t *testing.T) {
	rng := rand.New(rand.NewPCG(77, 78))
	const nbh, nodes, d = 6, 5, 3
	// Edges (src → dst); node 4 has no in-edge; edges 3 and 6 are padding.
	src := []int32{0, 1, 2, -1, 5, 3, 4, 2, 0}
	dst := []int32{1, 1, 0, 2, 3, 0, -1, 2, 3}
	m := len(src)
	e, bh, g := randF64(rng, m*d), randF64(rng, nbh*d), randF64(rng, nodes*d)
	out, den := make([]float64, nodes*d), make([]float64, nodes*d)
	for i := range out {
		out[i], den[i] = math.NaN(), math.NaN()
	}
	var wk GatedWork
	b := GatedBufs[float64]{Ehat: e, Bh: bh, Src: src, Dst: dst, Out: out, Den: den}
	GatedAggregate(b, &wk, m, nbh, nodes, d)
	nearly(t, "gated aggregate", out, gatedRef(e, bh, src, dst, nodes, d), 1e-12)
	for c := 0; c < d; c++ {
		if out[4*d+c] != 0 || den[4*d+c] != GatedEps {
			t.Fatalf("node without in-edges: out %v, den %v", out[4*d:5*d], den[4*d:5*d])
		}
	}
	out32, den32 := make([]float32, nodes*d), make([]float32, nodes*d)
	var wk32 GatedWork
	GatedAggregate(GatedBufs[float32]{Ehat: narrow(e), Bh: narrow(bh), Src: src, Dst: dst, Out: out32, Den: den32}, &wk32, m, nbh, nodes, d)
	nearly(t, "gated aggregate float32", widen(out32), out, 1e-5)

	loss := func() float64 { return dot64(gatedRef(e, bh, src, dst, nodes, d), g) }
	de, dbh := make([]float64, m*d), make([]float64, nbh*d)
	for i := range de {
		de[i] = math.NaN()
	}
	for i := range dbh {
		dbh[i] = math.NaN()
	}
	GatedAggregateBackward(de, dbh, g, b, m, nbh, nodes, d, nil, &wk)
	nearly(t, "gated dê", de, numGrad(e, loss), 1e-6)
	nearly(t, "gated dbh", dbh, numGrad(bh, loss), 1e-6)
	for _, k := range []int{3, 6} {
		for c := 0; c < d; c++ {
			if de[k*d+c] != 0 {
				t.Fatalf("padding edge %d: dê %v", k, de[k*d:(k+1)*d])
			}
		}
	}
	// A summand is added to dê (padding edges included); dbh does not change.
	sum := randF64(rng, m*d)
	de2, dbh2 := make([]float64, m*d), make([]float64, nbh*d)
	GatedAggregateBackward(de2, dbh2, g, b, m, nbh, nodes, d, sum, &wk)
	for i := range de2 {
		if de2[i] != de[i]+sum[i] {
			t.Fatalf("dê with a summand [%d] = %v, want %v + %v", i, de2[i], de[i], sum[i])
		}
	}
	if firstDiff(dbh2, dbh) >= 0 {
		t.Fatal("dbh changes with a summand")
	}
}

func TestMaskedL1(t *testing.T) {
	p := []float64{1, 2, 3, 4}
	y := []float64{0.5, 2, 5, 0}
	w := []float64{0.5, 0.5, 0.25, 0}
	out := []float64{math.NaN()}
	MaskedL1(out, p, y, w, 4)
	nearly(t, "masked L1", out, []float64{0.5*0.5 + 0 + 0.25*2}, 0)
	out32 := []float32{0}
	MaskedL1(out32, narrow(p), narrow(y), narrow(w), 4)
	nearly(t, "masked L1 float32", widen(out32), out, 0)
	dp := make([]float64, 4)
	MaskedL1Backward(dp, p, y, w, 2, 4)
	nearly(t, "masked L1 gradient", dp, []float64{1, 0, -0.5, 0}, 0)
}

// bceNaive is the binary cross-entropy from its definition, −y·log σ(z) − (1 − y)·log(1 − σ(z)),
// in float64: an independent reference for moderate |z| (it overflows or loses all digits for
// large |z|, which the stable form does not).
func bceNaive(z, y float64) float64 {
	s := 1 / (1 + math.Exp(-z))
	return -y*math.Log(s) - (1-y)*math.Log(1-s)
}

func TestMaskedBCE(t *testing.T) {
	z := []float64{0, 2, -3, 0.5, 7}
	y := []float64{1, 0, 1, 0.25, 0}
	w := []float64{0.5, 0.25, 0.25, 0.125, 0} // the last entry is masked (a missing label)
	// By hand: ℓ(0, 1) = log 2; ℓ(2, 0) = 2 + log(1 + e⁻²); ℓ(−3, 1) = 3 + log(1 + e⁻³);
	// ℓ(0.5, 0.25) = 0.5 − 0.125 + log(1 + e^−0.5).
	hand := 0.5*math.Ln2 + 0.25*(2+math.Log(1+math.Exp(-2))) + 0.25*(3+math.Log(1+math.Exp(-3))) +
		0.125*(0.375+math.Log(1+math.Exp(-0.5)))
	naive := 0.0
	for i := range z {
		naive += w[i] * bceNaive(z[i], y[i])
	}
	nearly(t, "hand against the definition", []float64{hand}, []float64{naive}, 1e-15)
	out := []float64{math.NaN()}
	MaskedBCE(out, z, y, w, len(z))
	nearly(t, "masked BCE", out, []float64{hand}, 1e-15)
	out32 := []float32{0}
	MaskedBCE(out32, narrow(z), narrow(y), narrow(w), len(z))
	nearly(t, "masked BCE float32", widen(out32), out, 1e-7)

	// dz = g·w·(σ(z) − y), g = 2: σ(0) − 1 = −1/2; σ(2) = 1/(1 + e⁻²); σ(−3) − 1 = −1/(1 + e⁻³).
	dz := make([]float64, len(z))
	MaskedBCEBackward(dz, z, y, w, 2, len(z))
	s2, s05 := 1/(1+math.Exp(-2)), 1/(1+math.Exp(-0.5))
	nearly(t, "masked BCE gradient", dz, []float64{2 * 0.5 * -0.5, 2 * 0.25 * s2, 2 * 0.25 * -1 / (1 + math.Exp(-3)), 2 * 0.125 * (s05 - 0.25), 0}, 1e-15)

	// Large logits: the naive form gives ∞ or 0·∞; the stable one stays exact to float64.
	big := []float64{100, -100, 800, -800}
	by := []float64{1, 1, 0, 0}
	ones := []float64{1, 1, 1, 1}
	MaskedBCE(out, big, by, ones, 4)
	nearly(t, "masked BCE, large logits", out, []float64{math.Exp(-100) + 100 + 800 + 0}, 1e-15)
	MaskedBCEBackward(dz[:4], big, by, ones, 1, 4)
	nearly(t, "masked BCE gradient, large logits", dz[:4], []float64{-math.Exp(-100) / (1 + math.Exp(-100)), -1, 1, 0}, 1e-15)
}

// ceRef is the weighted cross-entropy in float64 from its definition.
func ceRef(z []float64, labels []int32, w []float64, cl int) float64 {
	num, total := 0.0, 0.0
	for i, y := range labels {
		if y < 0 {
			continue
		}
		s := 0.0
		for c := 0; c < cl; c++ {
			s += math.Exp(z[i*cl+c])
		}
		num += w[i] * -math.Log(math.Exp(z[i*cl+int(y)])/s)
		total += w[i]
	}
	if total == 0 {
		return 0
	}
	return num / total
}

func TestWeightedCE(t *testing.T) {
	rng := rand.New(rand.NewPCG(79, 80))
	const r, cl = 7, 4
	z := randF64(rng, r*cl)
	labels := []int32{0, 3, -1, 2, 1, 1, 2}
	w := []float64{1, 0.5, 0.7, 0, 2, 0.25, 1}
	out := []float64{math.NaN()}
	WeightedCE(out, z, labels, w, r, cl)
	nearly(t, "weighted CE", out, []float64{ceRef(z, labels, w, cl)}, 1e-12)
	out32 := []float32{0}
	WeightedCE(out32, narrow(z), labels, w, r, cl)
	nearly(t, "weighted CE float32", widen(out32), out, 1e-6)
	// Hand case: two equal logits: log 2.
	WeightedCE(out, []float64{3, 3}, []int32{1}, []float64{4}, 1, 2)
	nearly(t, "weighted CE by hand", out, []float64{math.Ln2}, 1e-15)

	const g = 1.5
	dz := make([]float64, r*cl)
	for i := range dz {
		dz[i] = math.NaN()
	}
	WeightedCEBackward(dz, z, labels, w, g, r, cl)
	want := numGrad(z, func() float64 { return g * ceRef(z, labels, w, cl) })
	nearly(t, "weighted CE gradient", dz, want, 1e-6)
	for _, i := range []int{2, 3} { // no label, weight 0
		for c := 0; c < cl; c++ {
			if dz[i*cl+c] != 0 {
				t.Fatalf("row %d: gradient %v, want 0", i, dz[i*cl:(i+1)*cl])
			}
		}
	}
	// No labelled weight: loss and gradient 0.
	none := []int32{-1, -1, -1, -1, -1, -1, -1}
	WeightedCE(out, z, none, w, r, cl)
	WeightedCEBackward(dz, z, none, w, g, r, cl)
	if out[0] != 0 || firstDiff(dz, make([]float64, r*cl)) >= 0 {
		t.Fatalf("without labels: loss %v, gradient %v", out[0], dz)
	}
}

// TestOpKernelsIndependentOfThreads runs the kernels above that sum (the gated aggregation and
// its gradient, per node over edges; the Gaussian weights' parameter gradients, over rows; the
// kernel mix, the head dot products and the losses) in float32 and float64 on sizes where the
// gated aggregation is split between goroutines, with 1, 2, 3, 4 and 8 goroutines, and
// requires the same bits each time.
func TestOpKernelsIndependentOfThreads(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewPCG(81, 82))
	const m, nodes, d = 30011, 4000, 16
	src, dst := make([]int32, m), make([]int32, m)
	for k := range src {
		src[k], dst[k] = int32(rng.IntN(nodes+1))-1, int32(rng.IntN(nodes+1))-1
	}
	e, bh, g, sum := randF64(rng, m*d), randF64(rng, nodes*d), randF64(rng, nodes*d), randF64(rng, m*d)
	const gm, kk, p = 20011, 3, 2
	u, mu, is, gg := randF64(rng, gm*p), randF64(rng, kk*p), randF64(rng, kk*p), randF64(rng, gm*kk)
	x, z := randF64(rng, gm*kk*d), randF64(rng, gm*kk)
	labels, cw := make([]int32, gm), make([]float64, gm)
	for i := range labels {
		labels[i], cw[i] = int32(rng.IntN(kk+1))-1, rng.Float64()
	}
	run := func() map[string][]float64 {
		res := map[string][]float64{}
		add64 := func(name string, v []float64) { res[name+" float64"] = v }
		add32 := func(name string, v []float32) { res[name+" float32"] = widen(v) }
		runGated(src, dst, e, bh, g, sum, nodes, d, add64)
		runGated(src, dst, narrow(e), narrow(bh), narrow(g), narrow(sum), nodes, d, add32)
		runOthers(u, mu, is, gg, x, z, labels, cw, gm, kk, p, d, add64)
		runOthers(narrow(u), narrow(mu), narrow(is), narrow(gg), narrow(x), narrow(z), labels, cw, gm, kk, p, d, add32)
		return res
	}
	runtime.GOMAXPROCS(1)
	want := run()
	for _, procs := range []int{2, 3, 4, 8} {
		runtime.GOMAXPROCS(procs)
		got := run()
		for name, v := range want {
			if i := firstDiff(got[name], v); i >= 0 {
				t.Fatalf("%s with %d goroutines: [%d] = %v, with one %v", name, procs, i, got[name][i], v[i])
			}
		}
	}
}

func runGated[T Float](src, dst []int32, e, bh, g, sum []T, nodes, d int, add func(string, []T)) {
	m := len(src)
	var wk GatedWork
	b := GatedBufs[T]{Ehat: e, Bh: bh, Src: src, Dst: dst, Out: make([]T, nodes*d), Den: make([]T, nodes*d)}
	GatedAggregate(b, &wk, m, nodes, nodes, d)
	de, dbh := make([]T, m*d), make([]T, nodes*d)
	GatedAggregateBackward(de, dbh, g, b, m, nodes, nodes, d, sum, &wk)
	add("gated out", b.Out)
	add("gated den", b.Den)
	add("gated dê", de)
	add("gated dbh", dbh)
}

func runOthers[T Float](u, mu, is, g, x, z []T, labels []int32, cw []float64, m, kk, p, d int, add func(string, []T)) {
	w := make([]T, m*kk)
	GaussianWeights(w, u, mu, is, m, kk, p)
	du, dmu, dis := make([]T, m*p), make([]T, kk*p), make([]T, kk*p)
	GaussianWeightsBackward(du, dmu, dis, u, mu, is, w, g, m, kk, p)
	mix, dw := make([]T, m*d), make([]T, m*kk)
	KernelMix(mix, x, w, m, kk, d)
	KernelMixBackward(nil, dw, x, nil, mix, m, kk, d)
	hd := make([]T, m)
	HeadDot(hd, x[:m*kk*d], x[:m*kk*d], m, 1, kk*d)
	l1, ce, dz := make([]T, 1), make([]T, 1), make([]T, m*kk)
	MaskedL1(l1, w, z, g, m*kk)
	bce, dbce := make([]T, 1), make([]T, m*kk)
	MaskedBCE(bce, z, w, g, m*kk)
	MaskedBCEBackward(dbce, z, w, g, 0.5, m*kk)
	WeightedCE(ce, z, labels, cw, m, kk)
	WeightedCEBackward(dz, z, labels, cw, 0.5, m, kk)
	for name, v := range map[string][]T{"gaussian weights": w, "gaussian du": du, "gaussian dmu": dmu, "gaussian dis": dis,
		"kernel mix": mix, "kernel mix dw": dw, "head dot": hd, "masked L1": l1, "masked BCE": bce, "masked BCE dz": dbce, "weighted CE": ce, "weighted CE dz": dz} {
		add(name, v)
	}
}

// TestKernelMixDWIsRowLoop: KernelMixBackward's dw, four sums at a time (kernelMixDW), against
// one sum at a time in column order, bit for bit, in float32 and float64, for counts of sums
// that leave every remainder mod 4 and with signed zeros, infinities and NaNs among the values.
func TestKernelMixDWIsRowLoop(t *testing.T) {
	testKernelMixDW[float32](t)
	testKernelMixDW[float64](t)
}

func testKernelMixDW[T Float](t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	special := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 1e38, -1e38}
	for _, kk := range []int{1, 2, 3, 5} {
		for _, m := range []int{1, 2, 3, 7} {
			for _, d := range []int{1, 5, 90} {
				x, g := make([]T, m*kk*d), make([]T, m*d)
				for _, v := range [][]T{x, g} {
					for i := range v {
						v[i] = T(rng.NormFloat64())
						if rng.IntN(40) == 0 {
							v[i] = T(special[rng.IntN(len(special))])
						}
					}
				}
				got := make([]T, m*kk)
				KernelMixBackward(nil, got, x, nil, g, m, kk, d)
				for i := 0; i < m; i++ {
					for j := 0; j < kk; j++ {
						var acc T
						for c := 0; c < d; c++ {
							acc += x[i*kk*d+j*d+c] * g[i*d+c]
						}
						if a, b := float64(got[i*kk+j]), float64(acc); math.Float64bits(a) != math.Float64bits(b) && !(math.IsNaN(a) && math.IsNaN(b)) {
							t.Fatalf("%T kk %d m %d d %d: dw[%d,%d] = %v, one sum at a time %v", acc, kk, m, d, i, j, a, b)
						}
					}
				}
			}
		}
	}
}
