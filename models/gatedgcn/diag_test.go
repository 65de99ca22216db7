package gatedgcn

import (
	"fmt"
	"testing"

	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/tensor"
)

func TestDiagMem2(t *testing.T) {
	cfg := ZINC()
	cfg.Layers = 16
	cfg.AdjDim = 3
	p, _ := nn.NewParams(tensor.Float32, 1)
	b := nn.Bucket{Nodes: 1000, Edges: 10000, Graphs: 8}
	for _, rc := range []bool{false, true} {
		net, err := Build(cfg, p, b, true)
		if err != nil {
			t.Fatal(err)
		}
		net.SetRecompute(rc)
		m := net.Machine()
		ew := float64(b.Edges*cfg.Hidden*4) * 16
		sl, un := m.PlanBytes()
		fmt.Printf("rc=%v slots %.2f unshared %.2f bytes %.2f (edge-width per layer) steps %d\n", rc, float64(sl)/ew, float64(un)/ew, float64(m.Bytes())/ew, len(m.Steps()))
	}
}
