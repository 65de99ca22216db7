package ops

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/rewiregnn/rewiregnn/internal/gradcheck"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// project reduces y to the scalar Σ y⊙R with a fixed random R, so every output entry matters.
func project(t *testing.T, g *gorgonia.ExprGraph, rng *rand.Rand, y *gorgonia.Node) *gorgonia.Node {
	t.Helper()
	r := gradcheck.RandMatrix(g, rng, "R", y.Shape()...)
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

func TestBatchNormGrad(t *testing.T) {
	for _, training := range []bool{true, false} {
		rng := rand.New(rand.NewPCG(11, 12))
		g := gorgonia.NewGraph()
		x := gradcheck.RandMatrix(g, rng, "x", 6, 3)
		gamma := gradcheck.RandMatrix(g, rng, "gamma", 3)
		beta := gradcheck.RandMatrix(g, rng, "beta", 3)
		st := NewBNState("bn", 3)
		st.Training = training
		st.RunVar = []float64{0.5, 2, 1.5}
		mask := &Mask{Keep: []bool{true, true, false, true, true, false}}
		y, err := BatchNorm(x, gamma, beta, st, mask)
		if err != nil {
			t.Fatal(err)
		}
		gradcheck.Assert(t, g, project(t, g, rng, y), x, gamma, beta)
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
	runGraph(t, g)
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

func TestMaskedL1Grad(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	g := gorgonia.NewGraph()
	p := gradcheck.RandMatrix(g, rng, "pred", 4, 1)
	y := gradcheck.RandMatrix(g, rng, "y", 4, 1)
	w := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(4, 1), gorgonia.WithName("w"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(4, 1), tensor.WithBacking([]float64{0.5, 0.5, 0, 0.25}))))
	l, err := MaskedL1(p, y, w)
	if err != nil {
		t.Fatal(err)
	}
	gradcheck.Assert(t, g, l, p)
}

// TestMaskedBCEGrad checks the binary cross-entropy's gradient against finite differences on a
// [4, 3] block of logits with targets 0, 1 and in between, and weights that mask some entries
// (a padding row, a missing label).
func TestMaskedBCEGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	g := gorgonia.NewGraph()
	z := gradcheck.RandMatrix(g, rng, "z", 4, 3)
	mat := func(name string, v []float64) *gorgonia.Node {
		return gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(4, 3), gorgonia.WithName(name),
			gorgonia.WithValue(tensor.New(tensor.WithShape(4, 3), tensor.WithBacking(v))))
	}
	y := mat("y", []float64{1, 0, 1, 0, 0.25, 1, 1, 0, 0, 0, 0, 0})
	w := mat("w", []float64{0.125, 0.125, 0.125, 0.125, 0.125, 0, 0.125, 0.125, 0.125, 0, 0, 0})
	l, err := MaskedBCE(z, y, w)
	if err != nil {
		t.Fatal(err)
	}
	gradcheck.Assert(t, g, l, z)
}

func TestMatMulGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	g := gorgonia.NewGraph()
	x := gradcheck.RandMatrix(g, rng, "x", 4500, 3) // more rows than one block of the weight gradient
	w := gradcheck.RandMatrix(g, rng, "w", 3, 5)
	y, err := MatMul(x, w)
	if err != nil {
		t.Fatal(err)
	}
	// The loss is linear in each input, so a large step is exact and keeps rounding in the
	// 22 500-term sum out of the difference quotient.
	res, err := gradcheck.Run(g, project(t, g, rng, y), gorgonia.Nodes{x, w}, 1e-2, 200)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("checked %d entries: max rel %.2g", res.Checked, res.MaxRel)
	if res.MaxGrad == 0 || res.MaxRel > 1e-6 {
		t.Fatalf("gradient mismatch: max rel %.3g at %s", res.MaxRel, res.Worst)
	}
}

// runGraph runs g once on gorgonia's TapeMachine.
func runGraph(t *testing.T, g *gorgonia.ExprGraph) {
	t.Helper()
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
}

func abs(x float64) float64 { return max(x, -x) }

// TestParallelMatchesSerial runs the batch-norm and gated-aggregation ops on a problem large
// enough to be split between goroutines and compares with a serial run (GOMAXPROCS 1).
func TestParallelMatchesSerial(t *testing.T) {
	run := func() []float64 {
		rng := rand.New(rand.NewPCG(33, 34))
		g := gorgonia.NewGraph()
		const m, n, d = 3000, 700, 24
		e := gradcheck.RandMatrix(g, rng, "ehat", m, d)
		bh := gradcheck.RandMatrix(g, rng, "bh", n, d)
		src, dst := NewIndex("src", m), NewIndex("dst", m)
		for k := 0; k < m-10; k++ {
			src.Idx[k], dst.Idx[k] = int32(rng.IntN(n)), int32(rng.IntN(n))
		}
		agg, err := GatedAggregate(e, bh, src, dst, n)
		if err != nil {
			t.Fatal(err)
		}
		gamma, beta := gradcheck.RandMatrix(g, rng, "gamma", d), gradcheck.RandMatrix(g, rng, "beta", d)
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
		runGraph(t, g)
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

func TestBatchNormReluGrad(t *testing.T) {
	for _, training := range []bool{true, false} {
		for _, residual := range []bool{true, false} {
			rng := rand.New(rand.NewPCG(43, 44))
			g := gorgonia.NewGraph()
			x := gradcheck.RandMatrix(g, rng, "x", 7, 3)
			gamma := gradcheck.RandMatrix(g, rng, "gamma", 3)
			beta := gradcheck.RandMatrix(g, rng, "beta", 3)
			var res *gorgonia.Node
			wrt := gorgonia.Nodes{x, gamma, beta}
			if residual {
				res = gradcheck.RandMatrix(g, rng, "res", 7, 3)
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
			gradcheck.Assert(t, g, project(t, g, rng, y), wrt...)
		}
	}
}

// TestBatchNormReluValues compares the fused op with res + Relu(BatchNorm(x)) built from the
// separate ops.
func TestBatchNormReluValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	g := gorgonia.NewGraph()
	x := gradcheck.RandMatrix(g, rng, "x", 9, 4)
	gamma, beta := gradcheck.RandMatrix(g, rng, "gamma", 4), gradcheck.RandMatrix(g, rng, "beta", 4)
	res := gradcheck.RandMatrix(g, rng, "res", 9, 4)
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
	runGraph(t, g)
	a, b := Values(fused.Value()), Values(sep.Value())
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-12 {
			t.Fatalf("value %d: fused %v, separate %v", i, a[i], b[i])
		}
	}
}

// gradCases build an op on random inputs; TestGradients compares its gorgonia.Grad gradients
// with finite differences.
var gradCases = []struct {
	name      string
	seed, seq uint64
	build     func(g *gorgonia.ExprGraph, rng *rand.Rand) (y *gorgonia.Node, wrt gorgonia.Nodes, err error)
}{
	{"Gather", 1, 2, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes, error) {
		x := gradcheck.RandMatrix(g, rng, "x", 5, 3)
		ix := &Index{Name: "ix", Idx: []int32{0, 4, 4, -1, 2, 1, 0}}
		y, err := Gather(x, ix)
		return y, gorgonia.Nodes{x}, err
	}},
	{"WeightedGather", 1, 3, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes, error) {
		x := gradcheck.RandMatrix(g, rng, "x", 4, 2)
		ix := &Index{Name: "ix", Idx: []int32{3, 1, -1, 3}, W: []float64{0.5, 2, 7, -1}}
		y, err := Gather(x, ix)
		return y, gorgonia.Nodes{x}, err
	}},
	{"ScatterAdd", 3, 4, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes, error) {
		x := gradcheck.RandMatrix(g, rng, "x", 6, 4)
		ix := &Index{Name: "dst", Idx: []int32{1, 1, 0, -1, 2, 1}, W: []float64{1, 0.25, 3, 1, -2, 1}}
		y, err := ScatterAdd(x, ix, 4)
		return y, gorgonia.Nodes{x}, err
	}},
	{"Embed", 5, 6, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes, error) {
		table := gradcheck.RandMatrix(g, rng, "table", 4, 3)
		ids := &Index{Name: "atom", Idx: []int32{2, 2, 0, 3, -1}}
		y, err := Embed(table, ids)
		return y, gorgonia.Nodes{table}, err
	}},
	{"AddBias", 7, 8, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes, error) {
		x := gradcheck.RandMatrix(g, rng, "x", 5, 3)
		b := gradcheck.RandMatrix(g, rng, "b", 3)
		y, err := AddBias(x, b)
		return y, gorgonia.Nodes{x, b}, err
	}},
	{"SegmentSoftmax", 9, 10, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes, error) {
		s := gradcheck.RandMatrix(g, rng, "s", 7, 2)
		dst := &Index{Name: "dst", Idx: []int32{0, 0, 1, 2, 2, -1, 2}}
		y, err := SegmentSoftmax(s, dst, 4)
		return y, gorgonia.Nodes{s}, err
	}},
	{"ColSum", 13, 14, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes, error) {
		x := gradcheck.RandMatrix(g, rng, "x", 4, 3)
		y, err := ColSum(x)
		return y, gorgonia.Nodes{x}, err
	}},
	{"HeadDot", 17, 18, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes, error) {
		q := gradcheck.RandMatrix(g, rng, "q", 5, 6)
		k := gradcheck.RandMatrix(g, rng, "k", 5, 6)
		y, err := HeadDot(q, k, 3)
		return y, gorgonia.Nodes{q, k}, err
	}},
	{"HeadScale", 19, 20, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes, error) {
		x := gradcheck.RandMatrix(g, rng, "x", 4, 6)
		w := gradcheck.RandMatrix(g, rng, "w", 4, 2)
		y, err := HeadScale(x, w)
		return y, gorgonia.Nodes{x, w}, err
	}},
	{"KernelMix", 21, 22, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes, error) {
		x := gradcheck.RandMatrix(g, rng, "x", 5, 3*4)
		w := gradcheck.RandMatrix(g, rng, "w", 5, 3)
		y, err := KernelMix(x, w)
		return y, gorgonia.Nodes{x, w}, err
	}},
	{"GaussianWeights", 23, 24, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes, error) {
		u := gradcheck.RandMatrix(g, rng, "u", 6, 2)
		mu := gradcheck.RandMatrix(g, rng, "mu", 3, 2)
		is := gradcheck.RandMatrix(g, rng, "is", 3, 2)
		y, err := GaussianWeights(u, mu, is)
		return y, gorgonia.Nodes{u, mu, is}, err
	}},
	{"GatedAggregate", 29, 30, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes, error) {
		e := gradcheck.RandMatrix(g, rng, "ehat", 7, 3)
		bh := gradcheck.RandMatrix(g, rng, "bh", 4, 3)
		src := &Index{Name: "src", Idx: []int32{0, 1, 2, 3, 3, -1, 0}}
		dst := &Index{Name: "dst", Idx: []int32{1, 1, 0, 2, 2, 2, -1}}
		y, err := GatedAggregate(e, bh, src, dst, 5)
		return y, gorgonia.Nodes{e, bh}, err
	}},
	{"AddRelu", 35, 36, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes, error) {
		a := gradcheck.RandMatrix(g, rng, "a", 5, 4)
		b := gradcheck.RandMatrix(g, rng, "b", 5, 4)
		s, err := Add(a, b)
		if err != nil {
			return nil, nil, err
		}
		y, err := Relu(s)
		return y, gorgonia.Nodes{a, b}, err
	}},
	{"LayerNorm", 37, 38, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes, error) {
		x := gradcheck.RandMatrix(g, rng, "x", 5, 4)
		gamma := gradcheck.RandMatrix(g, rng, "gamma", 4)
		beta := gradcheck.RandMatrix(g, rng, "beta", 4)
		y, err := LayerNorm(x, gamma, beta, &Mask{Keep: []bool{true, false, true, true, true}})
		return y, gorgonia.Nodes{x, gamma, beta}, err
	}},
	{"EdgeSum", 47, 48, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes, error) {
		e := gradcheck.RandMatrix(g, rng, "e", 7, 3)
		hs := gradcheck.RandMatrix(g, rng, "hs", 4, 3)
		ht := gradcheck.RandMatrix(g, rng, "ht", 4, 3)
		src := &Index{Name: "src", Idx: []int32{0, 1, 2, 3, 3, -1, 0}}
		dst := &Index{Name: "dst", Idx: []int32{1, 1, 0, 2, -1, -1, 3}}
		y, err := EdgeSum(e, hs, ht, src, dst)
		return y, gorgonia.Nodes{e, hs, ht}, err
	}},
	{"Gelu", 49, 50, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes, error) {
		x := gradcheck.RandMatrix(g, rng, "x", 5, 4)
		y, err := Gelu(x)
		return y, gorgonia.Nodes{x}, err
	}},
}

func TestGradients(t *testing.T) {
	for _, c := range gradCases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(c.seed, c.seq))
			g := gorgonia.NewGraph()
			y, wrt, err := c.build(g, rng)
			if err != nil {
				t.Fatal(err)
			}
			gradcheck.Assert(t, g, project(t, g, rng, y), wrt...)
		})
	}
}
