package cpuexec_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/ops"
	"github.com/rewiregnn/rewiregnn/prog"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// sumSquares is a loss the program knows: Σ_r Σ_j y_rj² as the masked L1 of the rows' squared
// norms (HeadDot with one head) against zeros, every row weighted 1.
func sumSquares(b *nn.Builder, y *gorgonia.Node) *gorgonia.Node {
	rows := y.Shape()[0]
	zero := tensor.New(tensor.WithShape(rows, 1), tensor.Of(b.P.Dtype))
	ones := tensor.New(tensor.WithShape(rows, 1), tensor.Of(b.P.Dtype))
	if b.P.Dtype == tensor.Float64 {
		for i := range ones.Float64s() {
			ones.Float64s()[i] = 1
		}
	} else {
		for i := range ones.Float32s() {
			ones.Float32s()[i] = 1
		}
	}
	sq := b.Apply("squares", func() (*gorgonia.Node, error) { return ops.HeadDot(y, y, 1) })
	z, w := b.Input("zero", zero), b.Input("one", ones)
	return b.Apply("loss", func() (*gorgonia.Node, error) { return ops.MaskedL1(sq, z, w) })
}

// TestRunnerMatchesTape checks the runner against gorgonia's TapeMachine on a graph whose
// gradients need sums of several contributions, and that it leaves out the gradient of a plain
// input.
func TestRunnerMatchesTape(t *testing.T) {
	build := func() (*nn.Builder, *gorgonia.Node, *gorgonia.Node) {
		p, err := nn.NewParams(tensor.Float64, 7)
		if err != nil {
			t.Fatal(err)
		}
		b := nn.NewBuilder(p)
		rng := rand.New(rand.NewPCG(51, 52))
		xs := make([]float64, 30*4)
		for i := range xs {
			xs[i] = rng.NormFloat64()
		}
		x := b.Input("x", tensor.New(tensor.WithShape(30, 4), tensor.WithBacking(xs)))
		h := b.Linear(x, "a", 4, 5)
		y := b.Add(b.Add(b.Relu(b.Linear(h, "b", 5, 5)), b.Linear(h, "c", 5, 5)), b.Add(h, h))
		return b, y, sumSquares(b, b.Mul(y, b.Tanh(y)))
	}
	b, y, loss := build()
	net, err := nn.Finish(b, nil, y, loss, true)
	if err != nil {
		t.Fatal(err)
	}
	pr := net.Runner().P
	for _, s := range net.Runner().Steps() {
		if s.Kind == prog.MatMulGradX || s.Kind == prog.MatMulGradW {
			if s.Outs[0] >= 0 && pr.Vals[s.Outs[0]].Shape[1] == 4 {
				t.Errorf("the gradient with respect to the input x is computed")
			}
		}
	}
	lossR, err := net.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	names, got := net.Gradients()
	loss2, grads := onTape(t, build)
	if lossR != ops.Scalar(loss2) {
		t.Fatalf("loss %v, tape %v", lossR, ops.Scalar(loss2))
	}
	sameGrads(t, names, got, grads)
}

// onTape builds the net again, differentiates it with gorgonia.Grad and runs it on Gorgonia's
// TapeMachine: the reference loss node and gradients.
func onTape(t *testing.T, build func() (*nn.Builder, *gorgonia.Node, *gorgonia.Node)) (*gorgonia.Node, gorgonia.Nodes) {
	t.Helper()
	b, _, loss := build()
	grads, err := gorgonia.Grad(loss, b.Learn...)
	if err != nil {
		t.Fatal(err)
	}
	runGraph(t, b.G)
	return loss, grads
}

// sameGrads compares the runner's gradients (names, got) with the TapeMachine's (grads).
func sameGrads(t *testing.T, names []string, got []gorgonia.Value, grads gorgonia.Nodes) {
	t.Helper()
	for i, name := range names {
		a, w := ops.Values(got[i]), ops.Values(grads[i].Value())
		for j := range a {
			if d := a[j] - w[j]; d > 1e-12*(1+abs(w[j])) || d < -1e-12*(1+abs(w[j])) {
				t.Fatalf("d/d%s[%d] = %v, tape %v", name, j, a[j], w[j])
			}
		}
	}
}

// TestRunnerFoldsSums checks that the sum of the two gradient contributions of an input used by
// a batch norm and a gated aggregation is computed by one of those ops (no sum step), and that
// the gradients still match the TapeMachine's.
func TestRunnerFoldsSums(t *testing.T) {
	build := func() (*nn.Builder, *gorgonia.Node, *gorgonia.Node) {
		p, err := nn.NewParams(tensor.Float64, 9)
		if err != nil {
			t.Fatal(err)
		}
		b := nn.NewBuilder(p)
		e := b.Param("e", nn.Normal(0, 1), 7, 3)
		bh := b.Param("bh", nn.Normal(0, 1), 4, 3)
		src := &ops.Index{Name: "src", Idx: []int32{0, 1, 2, 3, 3, -1, 0}}
		dst := &ops.Index{Name: "dst", Idx: []int32{1, 1, 0, 2, 2, 2, -1}}
		agg := b.Apply("gated", func() (*gorgonia.Node, error) { return ops.GatedAggregate(e, bh, src, dst, 4) })
		mask := &ops.Mask{Keep: []bool{true, true, true, true, true, false, true}}
		gamma, beta := b.Param("g", nn.Normal(1, 0.1), 3), b.Param("b", nn.Normal(0, 0.1), 3)
		y := b.Apply("bn", func() (*gorgonia.Node, error) {
			return ops.BatchNormRelu(e, gamma, beta, b.P.BNState("bn", 3), mask, nil)
		})
		s1, s2 := sumSquares(b, agg), sumSquares(b, y)
		loss := b.Apply("loss", func() (*gorgonia.Node, error) { return gorgonia.Add(s1, s2) })
		return b, y, loss
	}
	b, y, loss := build()
	net, err := nn.Finish(b, nil, y, loss, true)
	if err != nil {
		t.Fatal(err)
	}
	pr := net.Runner().P
	ge := pr.Grads[slices.Index(pr.GradNames, "e")]
	for _, s := range net.Runner().Steps() {
		if slices.Contains(s.Outs, ge) && (s.Kind == prog.GradSum || s.Summand < 0) {
			t.Errorf("the gradient of e is computed by a %s step with summand %d, want an op taking the sum over", s.Kind, s.Summand)
		}
	}
	if _, err := net.Run(nil); err != nil {
		t.Fatal(err)
	}
	names, got := net.Gradients()
	_, grads := onTape(t, build)
	sameGrads(t, names, got, grads)
}

// TestRunnerFloat32 runs a graph of products with bias, ReLUs and gradient sums in float32 (the
// assembly kernels and the fused steps: product and bias, the gradients of a product in one
// pass with the residual's sum folded in, the bias gradients from the products' passes) and
// compares loss and gradients with float64 on the same parameters.
func TestRunnerFloat32(t *testing.T) {
	run := func(dt tensor.Dtype) (float64, map[string][]float64, *nn.Net) {
		p, err := nn.NewParams(dt, 13)
		if err != nil {
			t.Fatal(err)
		}
		b := nn.NewBuilder(p)
		rng := rand.New(rand.NewPCG(61, 62))
		const rows, d = 301, 24
		xs64, xs32 := make([]float64, rows*d), make([]float32, rows*d)
		for i := range xs64 {
			xs64[i] = rng.NormFloat64()
			xs32[i] = float32(xs64[i])
		}
		var xt *tensor.Dense
		if dt == tensor.Float64 {
			xt = tensor.New(tensor.WithShape(rows, d), tensor.WithBacking(xs64))
		} else {
			xt = tensor.New(tensor.WithShape(rows, d), tensor.WithBacking(xs32))
		}
		x := b.Input("x", xt)
		h := b.Relu(b.Linear(x, "a", d, d))
		for i := 0; i < 2; i++ { // residual blocks: h + relu(h·W + b)
			h = b.Add(h, b.Relu(b.Linear(h, fmt.Sprintf("r%d", i), d, d)))
		}
		y := b.Linear(h, "out", d, 17)
		net, err := nn.Finish(b, nil, y, sumSquares(b, y), true)
		if err != nil {
			t.Fatal(err)
		}
		loss, err := net.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		names, vals := net.Gradients()
		grads := map[string][]float64{}
		for i, n := range names {
			grads[n] = ops.Values(vals[i])
		}
		return loss, grads, net
	}
	l64, g64, _ := run(tensor.Float64)
	l32, g32, net := run(tensor.Float32)
	fused, folded, shared := 0, 0, map[int]bool{}
	for _, s := range net.Runner().Steps() {
		if s.Kind == prog.MatMul && len(s.Ins[0]) == 3 {
			fused++
		}
		if s.Summand >= 0 {
			folded++
		}
		if s.ColSum >= 0 {
			shared[s.ColSum] = true
		}
	}
	if fused != 4 || folded == 0 || len(shared) != 4 {
		t.Errorf("%d products fused with their bias (want 4), %d sums folded into ops (want some), %d bias gradients from the products' gradient passes (want 4)", fused, folded, len(shared))
	}
	if d := (l32 - l64) / l64; d > 1e-5 || d < -1e-5 {
		t.Fatalf("loss float32 %v, float64 %v", l32, l64)
	}
	for name, w := range g64 {
		scale := 0.0
		for _, v := range w {
			scale = max(scale, abs(v))
		}
		for j, v := range g32[name] {
			if d := v - w[j]; d > 1e-4*scale || d < -1e-4*scale {
				t.Fatalf("d/d%s[%d]: float32 %v, float64 %v", name, j, v, w[j])
			}
		}
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
