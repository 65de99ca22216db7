package nn_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/gpu"
	"github.com/rewiregnn/rewiregnn/gpuopt"
	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/tensor"
)

// TestActivationMemoryPerEdge plans the training nets of the registered models (8 layers, their
// ZINC widths) on a bucket of 20 edges per node, as a rewired graph has, and reports the
// activation bytes per edge per layer at the plan's peak and the whole executor's (kept op
// state, scratch, results outside the plan), normal and recomputed (docs/memory.md). It
// requires GatedGCN's targets: at most 4 edge-width values (4·d bytes) per edge per layer
// held for the backward pass normally and at most 1.5 with recomputation; its peak slots
// hold what the backward pass keeps plus the transients of one layer, so they bound it. The GPU
// plan is given in float32 and with train.precision bf16's storage (ê in bf16), which must not
// need more.
func TestActivationMemoryPerEdge(t *testing.T) {
	const layers = 8
	b := nn.Bucket{Nodes: 2000, Edges: 40000, Graphs: 16}
	type model struct {
		name   string
		build  nn.BuildFunc
		hidden int
	}
	var cases []model
	for name, build := range zincModels(t, fmt.Sprintf("model.layers=%d", layers)) {
		r, err := config.Load("", []string{"dataset.name=zinc", "model.name=" + name})
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, model{name, build, r.Model.Hidden})
	}
	slices.SortFunc(cases, func(a, b model) int { return strings.Compare(a.name, b.name) })
	for _, tc := range cases {
		p, err := nn.NewParams(tensor.Float32, 1)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := tc.build(p, b, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-11s evaluation: executor %6.0f B per edge per layer", tc.name, float64(ev.Runner().Bytes())/float64(b.Edges*layers))
		for _, rc := range []bool{false, true} {
			p, err := nn.NewParams(tensor.Float32, 1)
			if err != nil {
				t.Fatal(err)
			}
			n, err := tc.build(p, b, true)
			if err != nil {
				t.Fatal(err)
			}
			if err := n.SetRecompute(rc); err != nil {
				t.Fatal(err)
			}
			slots, _ := n.Runner().PlanBytes()
			dev := "-"
			if !rc {
				pl, err := gpu.Compile(n, p)
				if err != nil {
					t.Fatal(err)
				}
				bf, err := gpu.CompileWith(n, p, gpuopt.Default().WithPrecision(gpuopt.BF16))
				if err != nil {
					t.Fatal(err)
				}
				if bf.Bytes() > pl.Bytes() {
					t.Errorf("%s: the GPU plan needs %d bytes with ê in bf16, more than float32's %d", tc.name, bf.Bytes(), pl.Bytes())
				}
				dev = fmt.Sprintf("%.0f B (bf16 %.0f B)", float64(pl.Bytes())/float64(b.Edges*layers), float64(bf.Bytes())/float64(b.Edges*layers))
			}
			per := float64(b.Edges * layers)
			width := float64(4 * tc.hidden) // one edge-width value: d float32
			t.Logf("%-11s recompute=%-5v peak activations %6.0f B per edge per layer (%.2f edge-width values), executor %6.0f B, GPU plan %s",
				tc.name, rc, float64(slots)/per, float64(slots)/per/width, float64(n.Runner().Bytes())/per, dev)
			if tc.name == "gatedgcn" {
				limit := 4.0
				if rc {
					limit = 1.5
				}
				if v := float64(slots) / per / width; v > limit {
					t.Errorf("gatedgcn recompute=%v: %.2f edge-width values per edge per layer, want at most %g", rc, v, limit)
				}
			}
		}
	}
}
