package testgraphs

import (
	"github.com/rewiregnn/rewiregnn/lower"
	"math"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/gradcheck"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// GradCheck builds a float64 network for bt and compares gorgonia.Grad with central finite
// differences for every parameter the loss depends on (at most perNode entries each).
func GradCheck(t *testing.T, build nn.BuildFunc, bt *data.Batch, perNode int, tol float64) {
	t.Helper()
	p, err := nn.NewParams(tensor.Float64, 5)
	if err != nil {
		t.Fatal(err)
	}
	u := &bt.Union
	net, err := build(p, nn.Bucket{Nodes: u.N + 2, Edges: u.NumEdges() + 3, Graphs: bt.NumGraphs + 1}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	if err := net.In.Load(bt); err != nil {
		t.Fatal(err)
	}
	used := lower.Reaches(net.B.G, net.Loss)
	var wrt gorgonia.Nodes
	for _, n := range net.B.Learn {
		if used[n.ID()] {
			wrt = append(wrt, n)
		}
	}
	res, err := gradcheck.Run(net.B.G, net.Loss, wrt, 1e-6, perNode)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d parameter tensors, %d entries: max abs %.2g, max rel %.2g", len(wrt), len(net.B.Learn), res.Checked, res.MaxAbs, res.MaxRel)
	if res.MaxGrad == 0 {
		t.Fatal("every gradient is zero")
	}
	if res.MaxRel > tol {
		t.Fatalf("max relative error %.3g at %s", res.MaxRel, res.Worst)
	}
}

// BucketsAgree runs bt in its exact-size bucket and in a much larger one (float64, shared
// parameters) and checks that loss and gradients agree to rounding.
func BucketsAgree(t *testing.T, build nn.BuildFunc, bt *data.Batch) {
	t.Helper()
	p, err := nn.NewParams(tensor.Float64, 11)
	if err != nil {
		t.Fatal(err)
	}
	u := &bt.Union
	small := nn.Bucket{Nodes: u.N, Edges: u.NumEdges(), Graphs: bt.NumGraphs}
	large := nn.Bucket{Nodes: u.N + 37, Edges: u.NumEdges() + 101, Graphs: bt.NumGraphs + 5}
	var losses [2]float64
	var grads [2]map[string][]float64
	for i, b := range []nn.Bucket{small, large} {
		net, err := build(p, b, true)
		if err != nil {
			t.Fatal(err)
		}
		losses[i], err = net.Run(bt)
		if err != nil {
			t.Fatal(err)
		}
		names, vals := net.Gradients()
		grads[i] = map[string][]float64{}
		for j, n := range names {
			grads[i][n] = ops.Values(vals[j])
		}
		net.Close()
	}
	if d := math.Abs(losses[0] - losses[1]); d > 1e-12 {
		t.Fatalf("loss %.15g in %v, %.15g in %v", losses[0], small, losses[1], large)
	}
	if len(grads[0]) != len(grads[1]) {
		t.Fatalf("%d and %d gradients", len(grads[0]), len(grads[1]))
	}
	worst := 0.0
	for n, g0 := range grads[0] {
		// Entries far below their tensor's largest are compared on that tensor's scale: a
		// product's blocking follows the row count, which the bucket changes, and rounding
		// of the large entries then shows in relation to the tiny ones.
		floor := 1e-8
		for _, v := range g0 {
			floor = max(floor, 1e-6*math.Abs(v))
		}
		g1 := grads[1][n]
		for j := range g0 {
			worst = max(worst, math.Abs(g0[j]-g1[j])/max(math.Abs(g0[j]), floor))
		}
	}
	t.Logf("loss %.12g in buckets %v and %v; worst relative gradient difference %.2g", losses[0], small, large, worst)
	if worst > 1e-9 {
		t.Fatalf("gradients differ between buckets (worst relative %.3g)", worst)
	}
}
