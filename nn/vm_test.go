package nn

import (
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestMachine checks the executor against gorgonia's TapeMachine on a graph whose gradients
// need sums of several contributions, and that it leaves out the gradient of a plain input.
func TestMachine(t *testing.T) {
	build := func() (*Builder, *gorgonia.Node, *gorgonia.Node) {
		p, err := NewParams(tensor.Float64, 7)
		if err != nil {
			t.Fatal(err)
		}
		b := NewBuilder(p)
		rng := rand.New(rand.NewPCG(51, 52))
		xs := make([]float64, 30*4)
		for i := range xs {
			xs[i] = rng.NormFloat64()
		}
		x := b.Input("x", tensor.New(tensor.WithShape(30, 4), tensor.WithBacking(xs)))
		h := b.Linear(x, "a", 4, 5)
		y := b.Add(b.Add(b.Relu(b.Linear(h, "b", 5, 5)), b.Linear(h, "c", 5, 5)), b.Add(h, h))
		loss := b.Sum(b.Mul(y, y))
		return b, y, loss
	}
	b, y, loss := build()
	net, err := Finish(b, nil, y, loss, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range net.m.steps {
		if s.op != nil && strings.HasPrefix(s.op.String(), "MatMulGradX") && s.node.Shape()[1] == 4 {
			t.Errorf("the gradient with respect to the input x is computed")
		}
	}
	if err := net.m.run(); err != nil {
		t.Fatal(err)
	}
	names, got := net.Gradients()

	b2, _, loss2 := build()
	var wrt gorgonia.Nodes
	for _, n := range b2.Learn {
		wrt = append(wrt, n)
	}
	grads, err := gorgonia.Grad(loss2, wrt...)
	if err != nil {
		t.Fatal(err)
	}
	vm := gorgonia.NewTapeMachine(b2.G)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	if Scalar(loss) != Scalar(loss2) {
		t.Fatalf("loss %v, tape %v", Scalar(loss), Scalar(loss2))
	}
	for i, name := range names {
		a, w := Values(got[i]), Values(grads[i].Value())
		for j := range a {
			if d := a[j] - w[j]; d > 1e-12*(1+abs(w[j])) || d < -1e-12*(1+abs(w[j])) {
				t.Fatalf("d/d%s[%d] = %v, tape %v", name, j, a[j], w[j])
			}
		}
	}
}
