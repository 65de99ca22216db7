package gradcheck

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// RandMatrix is a float64 vector (one dimension) or matrix of standard normal entries drawn
// from rng, bound to a value and named.
func RandMatrix(g *gorgonia.ExprGraph, rng *rand.Rand, name string, shape ...int) *gorgonia.Node {
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

// Assert runs the check on up to 200 entries per node with step 1e-6 and fails the test when a
// gradient is off by more than 1e-6 relative, or when every gradient is zero.
func Assert(t testing.TB, g *gorgonia.ExprGraph, loss *gorgonia.Node, wrt ...*gorgonia.Node) {
	t.Helper()
	res, err := Run(g, loss, wrt, 1e-6, 200)
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
