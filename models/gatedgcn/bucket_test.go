package gatedgcn

import (
	"math"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/tensor"
)

// TestBucketsAgree runs the same batch through the graphs of two different shape buckets
// (sharing one parameter set) and checks that padding changes neither loss nor gradients.
func TestBucketsAgree(t *testing.T) {
	gs := loadZINC(t, 8)
	real, err := data.NewBatch(gs)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cfg  Config
		bt   *data.Batch
	}{
		{"tiny with encodings", tinyConfig("mean"), tinyBatch(t)},
		{"ZINC 8 molecules", ZINC(), real},
	}
	for _, c := range cases {
		p, err := nn.NewParams(tensor.Float64, 11)
		if err != nil {
			t.Fatal(err)
		}
		u := &c.bt.Union
		small := nn.Bucket{Nodes: u.N, Edges: u.NumEdges(), Graphs: c.bt.NumGraphs}
		large := nn.Bucket{Nodes: u.N + 37, Edges: u.NumEdges() + 101, Graphs: c.bt.NumGraphs + 5}
		var losses [2]float64
		var grads [2]map[string][]float64
		for i, b := range []nn.Bucket{small, large} {
			net, err := Build(c.cfg, p, b, true)
			if err != nil {
				t.Fatal(err)
			}
			losses[i], err = net.Run(c.bt)
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
			t.Fatalf("%s: loss %.15g in %v, %.15g in %v", c.name, losses[0], small, losses[1], large)
		}
		if len(grads[0]) != len(grads[1]) {
			t.Fatalf("%s: %d and %d gradients", c.name, len(grads[0]), len(grads[1]))
		}
		worst := 0.0
		for n, g0 := range grads[0] {
			g1 := grads[1][n]
			for j := range g0 {
				worst = max(worst, math.Abs(g0[j]-g1[j])/max(math.Abs(g0[j]), 1e-8))
			}
		}
		t.Logf("%s: loss %.12g in both buckets; worst relative gradient difference %.2g", c.name, losses[0], worst)
		if worst > 1e-9 {
			t.Fatalf("%s: gradients differ between buckets (worst relative %.3g)", c.name, worst)
		}
	}
}
