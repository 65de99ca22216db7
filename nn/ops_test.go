package nn

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func randMatrix(g *gorgonia.ExprGraph, rng *rand.Rand, name string, shape ...int) *gorgonia.Node {
	n := 1
	for _, s := range shape {
		n *= s
	}
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = rng.NormFloat64()
	}
	t := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(xs))
	if len(shape) == 1 {
		return gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(shape...), gorgonia.WithValue(t), gorgonia.WithName(name))
	}
	return gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(shape...), gorgonia.WithValue(t), gorgonia.WithName(name))
}

// project reduces y to the scalar Σ y⊙R with a fixed random R, so every output entry matters.
func project(t *testing.T, g *gorgonia.ExprGraph, rng *rand.Rand, y *gorgonia.Node) *gorgonia.Node {
	t.Helper()
	r := randMatrix(g, rng, "R", y.Shape()...)
	p, err := gorgonia.HadamardProd(y, r)
	if err != nil {
		t.Fatal(err)
	}
	s, err := gorgonia.Sum(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func checkGrad(t *testing.T, g *gorgonia.ExprGraph, loss *gorgonia.Node, wrt ...*gorgonia.Node) {
	t.Helper()
	res, err := GradCheck(g, loss, wrt, 1e-6, 200)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("checked %d entries: max abs %.2g, max rel %.2g", res.Checked, res.MaxAbs, res.MaxRel)
	if res.MaxGrad == 0 {
		t.Fatal("every gradient is zero")
	}
	if res.MaxRel > 1e-6 {
		t.Fatalf("gradient mismatch: max rel %.3g at %s", res.MaxRel, res.Worst)
	}
}

func TestGatherGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	g := gorgonia.NewGraph()
	x := randMatrix(g, rng, "x", 5, 3)
	ix := &Index{Name: "ix", Idx: []int32{0, 4, 4, -1, 2, 1, 0}}
	y, err := Gather(x, ix)
	if err != nil {
		t.Fatal(err)
	}
	checkGrad(t, g, project(t, g, rng, y), x)
}

func TestWeightedGatherGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 3))
	g := gorgonia.NewGraph()
	x := randMatrix(g, rng, "x", 4, 2)
	ix := &Index{Name: "ix", Idx: []int32{3, 1, -1, 3}, W: []float64{0.5, 2, 7, -1}}
	y, err := Gather(x, ix)
	if err != nil {
		t.Fatal(err)
	}
	checkGrad(t, g, project(t, g, rng, y), x)
}

func TestScatterAddGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	g := gorgonia.NewGraph()
	x := randMatrix(g, rng, "x", 6, 4)
	ix := &Index{Name: "dst", Idx: []int32{1, 1, 0, -1, 2, 1}, W: []float64{1, 0.25, 3, 1, -2, 1}}
	y, err := ScatterAdd(x, ix, 4)
	if err != nil {
		t.Fatal(err)
	}
	checkGrad(t, g, project(t, g, rng, y), x)
}

func TestEmbedGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	g := gorgonia.NewGraph()
	table := randMatrix(g, rng, "table", 4, 3)
	ids := &Index{Name: "atom", Idx: []int32{2, 2, 0, 3, -1}}
	y, err := Embed(table, ids)
	if err != nil {
		t.Fatal(err)
	}
	checkGrad(t, g, project(t, g, rng, y), table)
}

func TestAddBiasGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	g := gorgonia.NewGraph()
	x := randMatrix(g, rng, "x", 5, 3)
	b := randMatrix(g, rng, "b", 3)
	y, err := AddBias(x, b)
	if err != nil {
		t.Fatal(err)
	}
	checkGrad(t, g, project(t, g, rng, y), x, b)
}

func TestSegmentSoftmaxGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	g := gorgonia.NewGraph()
	s := randMatrix(g, rng, "s", 7, 2)
	dst := &Index{Name: "dst", Idx: []int32{0, 0, 1, 2, 2, -1, 2}}
	y, err := SegmentSoftmax(s, dst, 4)
	if err != nil {
		t.Fatal(err)
	}
	checkGrad(t, g, project(t, g, rng, y), s)
}

func TestSegmentSoftmaxValues(t *testing.T) {
	src := []float64{1, 1000, 2, 1001, 5, 0, 3, 0}
	seg := []int32{0, 0, 1, -1}
	dst := make([]float64, len(src))
	SegmentSoftmaxRows(dst, src, 2, seg, make([]float64, 2*2))
	e := 1 / (1 + 2.718281828459045)
	want := []float64{e, e, 1 - e, 1 - e, 1, 1, 0, 0}
	for i := range want {
		if d := dst[i] - want[i]; d > 1e-12 || d < -1e-12 {
			t.Fatalf("softmax[%d] = %v, want %v", i, dst[i], want[i])
		}
	}
}

func TestBatchNormGrad(t *testing.T) {
	for _, training := range []bool{true, false} {
		rng := rand.New(rand.NewPCG(11, 12))
		g := gorgonia.NewGraph()
		x := randMatrix(g, rng, "x", 6, 3)
		gamma := randMatrix(g, rng, "gamma", 3)
		beta := randMatrix(g, rng, "beta", 3)
		st := NewBNState("bn", 3)
		st.Training = training
		st.RunVar = []float64{0.5, 2, 1.5}
		mask := &Mask{Keep: []bool{true, true, false, true, true, false}}
		y, err := BatchNorm(x, gamma, beta, st, mask)
		if err != nil {
			t.Fatal(err)
		}
		checkGrad(t, g, project(t, g, rng, y), x, gamma, beta)
	}
}

// TestBatchNormStats checks training output and the running-statistics update against PyTorch's
// BatchNorm1d semantics on the kept rows.
func TestBatchNormStats(t *testing.T) {
	g := gorgonia.NewGraph()
	xs := []float64{1, 10, 99, 99, 3, 20, 5, 60}
	x := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(4, 2), gorgonia.WithValue(tensor.New(tensor.WithShape(4, 2), tensor.WithBacking(xs))), gorgonia.WithName("x"))
	gamma := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2), gorgonia.WithValue(tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 2}))), gorgonia.WithName("gamma"))
	beta := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2), gorgonia.WithValue(tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{0, 1}))), gorgonia.WithName("beta"))
	st := NewBNState("bn", 2)
	y, err := BatchNorm(x, gamma, beta, st, &Mask{Keep: []bool{true, false, true, true}})
	if err != nil {
		t.Fatal(err)
	}
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	// column 0 kept values 1, 3, 5: mean 3, biased var 8/3, unbiased 4.
	// column 1 kept values 10, 20, 60: mean 30, biased var 1400/3, unbiased 700.
	const tol = 1e-9
	if d := st.RunMean[0] - 0.3; d > tol || d < -tol {
		t.Errorf("running mean 0 = %v, want 0.3", st.RunMean[0])
	}
	if d := st.RunVar[1] - (0.9 + 70); d > tol || d < -tol {
		t.Errorf("running var 1 = %v, want 70.9", st.RunVar[1])
	}
	out := y.Value().Data().([]float64)
	want0 := (1 - 3) / math.Sqrt(8.0/3+BNEps)
	if d := out[0] - want0; d > tol || d < -tol {
		t.Errorf("y[0,0] = %v, want %v", out[0], want0)
	}
	if out[2] != 0 || out[3] != 0 {
		t.Errorf("masked row = %v, want zeros", out[2:4])
	}
}

func TestGatherRejectsBadIndex(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 2), gorgonia.WithInit(gorgonia.Zeroes()))
	y, err := Gather(x, &Index{Name: "bad", Idx: []int32{0, 2}})
	if err != nil {
		t.Fatal(err)
	}
	_ = y
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err == nil {
		t.Fatal("out-of-range index ran without error")
	}
}

func TestColSumGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	g := gorgonia.NewGraph()
	x := randMatrix(g, rng, "x", 4, 3)
	y, err := ColSum(x)
	if err != nil {
		t.Fatal(err)
	}
	checkGrad(t, g, project(t, g, rng, y), x)
}

func TestMaskedL1Grad(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	g := gorgonia.NewGraph()
	p := randMatrix(g, rng, "pred", 4, 1)
	y := randMatrix(g, rng, "y", 4, 1)
	w := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(4, 1), gorgonia.WithName("w"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(4, 1), tensor.WithBacking([]float64{0.5, 0.5, 0, 0.25}))))
	l, err := MaskedL1(p, y, w)
	if err != nil {
		t.Fatal(err)
	}
	checkGrad(t, g, l, p)
}

func TestHeadDotGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	g := gorgonia.NewGraph()
	q := randMatrix(g, rng, "q", 5, 6)
	k := randMatrix(g, rng, "k", 5, 6)
	y, err := HeadDot(q, k, 3)
	if err != nil {
		t.Fatal(err)
	}
	checkGrad(t, g, project(t, g, rng, y), q, k)
}

func TestHeadScaleGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	g := gorgonia.NewGraph()
	x := randMatrix(g, rng, "x", 4, 6)
	w := randMatrix(g, rng, "w", 4, 2)
	y, err := HeadScale(x, w)
	if err != nil {
		t.Fatal(err)
	}
	checkGrad(t, g, project(t, g, rng, y), x, w)
}

func TestKernelMixGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	g := gorgonia.NewGraph()
	x := randMatrix(g, rng, "x", 5, 3*4)
	w := randMatrix(g, rng, "w", 5, 3)
	y, err := KernelMix(x, w)
	if err != nil {
		t.Fatal(err)
	}
	checkGrad(t, g, project(t, g, rng, y), x, w)
}

func TestGaussianWeightsGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	g := gorgonia.NewGraph()
	u := randMatrix(g, rng, "u", 6, 2)
	mu := randMatrix(g, rng, "mu", 3, 2)
	is := randMatrix(g, rng, "is", 3, 2)
	y, err := GaussianWeights(u, mu, is)
	if err != nil {
		t.Fatal(err)
	}
	checkGrad(t, g, project(t, g, rng, y), u, mu, is)
}

func TestMatMulGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	g := gorgonia.NewGraph()
	x := randMatrix(g, rng, "x", 4500, 3) // more rows than one block of the weight gradient
	w := randMatrix(g, rng, "w", 3, 5)
	y, err := MatMul(x, w)
	if err != nil {
		t.Fatal(err)
	}
	// The loss is linear in each input, so a large step is exact and keeps rounding in the
	// 22 500-term sum out of the difference quotient.
	res, err := GradCheck(g, project(t, g, rng, y), gorgonia.Nodes{x, w}, 1e-2, 200)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("checked %d entries: max rel %.2g", res.Checked, res.MaxRel)
	if res.MaxGrad == 0 || res.MaxRel > 1e-6 {
		t.Fatalf("gradient mismatch: max rel %.3g at %s", res.MaxRel, res.Worst)
	}
}

// TestMatMulFloat32 compares the float32 kernels (the AVX2 path where available) of the
// forward product and both gradients with float64.
func TestMatMulFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	m, k, n := 5003, 70, 37
	randv := func(n int) ([]float64, []float32) {
		a, b := make([]float64, n), make([]float32, n)
		for i := range a {
			b[i] = float32(rng.NormFloat64())
			a[i] = float64(b[i])
		}
		return a, b
	}
	x64, x32 := randv(m * k)
	w64, w32 := randv(k * n)
	g64, g32 := randv(m * n)
	compare := func(what string, got []float32, want []float64) {
		t.Helper()
		for i := range want {
			if d := (float64(got[i]) - want[i]) / (1 + abs(want[i])); d > 1e-4 || d < -1e-4 {
				t.Fatalf("%s[%d]: float32 %v, float64 %v", what, i, got[i], want[i])
			}
		}
	}
	y64, y32 := make([]float64, m*n), make([]float32, m*n)
	matmulNN(y64, [][]float64{x64, w64}, []tensor.Shape{{m, k}, {k, n}})
	matmulNN(y32, [][]float32{x32, w32}, []tensor.Shape{{m, k}, {k, n}})
	compare("x·w", y32, y64)
	var s64, s32 tnScratch
	dx64, dx32 := make([]float64, m*k), make([]float32, m*k)
	matmulNT[float64](&s64)(dx64, [][]float64{g64, w64}, []tensor.Shape{{m, n}, {k, n}})
	matmulNT[float32](&s32)(dx32, [][]float32{g32, w32}, []tensor.Shape{{m, n}, {k, n}})
	compare("g·wᵀ", dx32, dx64)
	dw64, dw32 := make([]float64, k*n), make([]float32, k*n)
	matmulTN[float64](&s64)(dw64, [][]float64{x64, g64}, []tensor.Shape{{m, k}, {m, n}})
	matmulTN[float32](&s32)(dw32, [][]float32{x32, g32}, []tensor.Shape{{m, k}, {m, n}})
	compare("xᵀ·g", dw32, dw64)
}

func abs(x float64) float64 { return max(x, -x) }

func TestGatedAggregateGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 30))
	g := gorgonia.NewGraph()
	e := randMatrix(g, rng, "ehat", 7, 3)
	bh := randMatrix(g, rng, "bh", 4, 3)
	src := &Index{Name: "src", Idx: []int32{0, 1, 2, 3, 3, -1, 0}}
	dst := &Index{Name: "dst", Idx: []int32{1, 1, 0, 2, 2, 2, -1}}
	y, err := GatedAggregate(e, bh, src, dst, 5)
	if err != nil {
		t.Fatal(err)
	}
	checkGrad(t, g, project(t, g, rng, y), e, bh)
}

// TestParallelMatchesSerial runs the batch-norm and gated-aggregation ops on a problem large
// enough to be split between goroutines and compares with a serial run (GOMAXPROCS 1).
func TestParallelMatchesSerial(t *testing.T) {
	run := func() []float64 {
		rng := rand.New(rand.NewPCG(33, 34))
		g := gorgonia.NewGraph()
		const m, n, d = 3000, 700, 24
		e := randMatrix(g, rng, "ehat", m, d)
		bh := randMatrix(g, rng, "bh", n, d)
		src, dst := NewIndex("src", m), NewIndex("dst", m)
		for k := 0; k < m-10; k++ {
			src.Idx[k], dst.Idx[k] = int32(rng.IntN(n)), int32(rng.IntN(n))
		}
		agg, err := GatedAggregate(e, bh, src, dst, n)
		if err != nil {
			t.Fatal(err)
		}
		gamma, beta := randMatrix(g, rng, "gamma", d), randMatrix(g, rng, "beta", d)
		mask := NewMask("nodes", n)
		for i := 0; i < n-7; i++ {
			mask.Keep[i] = true
		}
		y, err := BatchNorm(agg, gamma, beta, NewBNState("bn", d), mask)
		if err != nil {
			t.Fatal(err)
		}
		loss := project(t, g, rng, y)
		grads, err := gorgonia.Grad(loss, e, bh, gamma, beta)
		if err != nil {
			t.Fatal(err)
		}
		vm := gorgonia.NewTapeMachine(g)
		defer vm.Close()
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		out := Values(y.Value())
		for _, gr := range grads {
			out = append(out, Values(gr.Value())...)
		}
		return out
	}
	par := run()
	prev := runtime.GOMAXPROCS(1)
	ser := run()
	runtime.GOMAXPROCS(prev)
	if prev < 2 {
		t.Log("one CPU: both runs were serial")
	}
	for i := range ser {
		if par[i] != ser[i] {
			t.Fatalf("value %d: parallel %v, serial %v", i, par[i], ser[i])
		}
	}
}

func TestAddReluGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	g := gorgonia.NewGraph()
	a := randMatrix(g, rng, "a", 5, 4)
	b := randMatrix(g, rng, "b", 5, 4)
	s, err := Add(a, b)
	if err != nil {
		t.Fatal(err)
	}
	y, err := Relu(s)
	if err != nil {
		t.Fatal(err)
	}
	checkGrad(t, g, project(t, g, rng, y), a, b)
}

func TestLayerNormGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 38))
	g := gorgonia.NewGraph()
	x := randMatrix(g, rng, "x", 5, 4)
	gamma := randMatrix(g, rng, "gamma", 4)
	beta := randMatrix(g, rng, "beta", 4)
	y, err := LayerNorm(x, gamma, beta, &Mask{Keep: []bool{true, false, true, true, true}})
	if err != nil {
		t.Fatal(err)
	}
	checkGrad(t, g, project(t, g, rng, y), x, gamma, beta)
}

// TestParallelKernelsMatchSerial checks the row- and column-split kernels on sizes above the
// parallel threshold against the serial loops.
func TestParallelKernelsMatchSerial(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 40))
	const rows, cols, n = 5000, 13, 900
	src := make([]float64, n*cols)
	x := make([]float64, rows*cols)
	for i := range src {
		src[i] = rng.NormFloat64()
	}
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	idx := make([]int32, rows)
	w := make([]float64, rows)
	for i := range idx {
		idx[i], w[i] = int32(rng.IntN(n+1)-1), rng.Float64()
	}
	par, ser := make([]float64, rows*cols), make([]float64, rows*cols)
	GatherRows(par, src, cols, idx, w)
	gatherRows(ser, src, cols, idx, w)
	equal(t, "gather", par, ser)
	sp, ss := make([]float64, n*cols), make([]float64, n*cols)
	ScatterAddRows(sp, x, cols, idx, w)
	scatterAddCols(ss, x, cols, idx, w, 0, cols)
	equal(t, "scatter", sp, ss)
	b := src[:cols]
	addBias(par, x, b)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			ser[r*cols+c] = x[r*cols+c] + b[c]
		}
	}
	equal(t, "bias", par, ser)
	cs, cw := make([]float64, cols), make([]float64, cols)
	colSum(cs, x)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			cw[c] += x[r*cols+c]
		}
	}
	equal(t, "column sum", cs, cw)
}

func equal(t *testing.T, what string, got, want []float64) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s[%d] = %v, serial %v", what, i, got[i], want[i])
		}
	}
}

func TestBatchNormReluGrad(t *testing.T) {
	for _, training := range []bool{true, false} {
		for _, residual := range []bool{true, false} {
			rng := rand.New(rand.NewPCG(43, 44))
			g := gorgonia.NewGraph()
			x := randMatrix(g, rng, "x", 7, 3)
			gamma := randMatrix(g, rng, "gamma", 3)
			beta := randMatrix(g, rng, "beta", 3)
			var res *gorgonia.Node
			wrt := gorgonia.Nodes{x, gamma, beta}
			if residual {
				res = randMatrix(g, rng, "res", 7, 3)
				wrt = append(wrt, res)
			}
			st := NewBNState("bn", 3)
			st.Training = training
			st.RunVar = []float64{0.5, 2, 1.5}
			mask := &Mask{Keep: []bool{true, true, false, true, true, false, true}}
			y, err := BatchNormRelu(x, gamma, beta, st, mask, res)
			if err != nil {
				t.Fatal(err)
			}
			checkGrad(t, g, project(t, g, rng, y), wrt...)
		}
	}
}

// TestBatchNormReluValues compares the fused op with res + Relu(BatchNorm(x)) built from the
// separate ops.
func TestBatchNormReluValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	g := gorgonia.NewGraph()
	x := randMatrix(g, rng, "x", 9, 4)
	gamma, beta := randMatrix(g, rng, "gamma", 4), randMatrix(g, rng, "beta", 4)
	res := randMatrix(g, rng, "res", 9, 4)
	mask := &Mask{Keep: []bool{true, true, false, true, true, false, true, true, true}}
	fused, err := BatchNormRelu(x, gamma, beta, NewBNState("a", 4), mask, res)
	if err != nil {
		t.Fatal(err)
	}
	bn, err := BatchNorm(x, gamma, beta, NewBNState("b", 4), mask)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Relu(bn)
	if err != nil {
		t.Fatal(err)
	}
	sep, err := Add(res, r)
	if err != nil {
		t.Fatal(err)
	}
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	a, b := Values(fused.Value()), Values(sep.Value())
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-12 {
			t.Fatalf("value %d: fused %v, separate %v", i, a[i], b[i])
		}
	}
}

func TestEdgeSumGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 48))
	g := gorgonia.NewGraph()
	e := randMatrix(g, rng, "e", 7, 3)
	hs := randMatrix(g, rng, "hs", 4, 3)
	ht := randMatrix(g, rng, "ht", 4, 3)
	src := &Index{Name: "src", Idx: []int32{0, 1, 2, 3, 3, -1, 0}}
	dst := &Index{Name: "dst", Idx: []int32{1, 1, 0, 2, -1, -1, 3}}
	y, err := EdgeSum(e, hs, ht, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	checkGrad(t, g, project(t, g, rng, y), e, hs, ht)
}
