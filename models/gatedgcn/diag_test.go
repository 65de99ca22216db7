package gatedgcn

import (
	"fmt"
	"sort"
	"testing"

	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/tensor"
)

func TestDiagMem(t *testing.T) {
	cfg := ZINC()
	cfg.Layers = 16
	cfg.AdjDim = 3
	p, _ := nn.NewParams(tensor.Float32, 1)
	b := nn.Bucket{Nodes: 1000, Edges: 10000, Graphs: 8}
	net, err := Build(cfg, p, b, true)
	if err != nil {
		t.Fatal(err)
	}
	m := net.Machine()
	by := map[string]float64{}
	tot := 0.0
	for _, s := range m.Steps() {
		sz := float64(s.Node.Shape().TotalSize()) / float64(b.Edges*cfg.Hidden)
		name := "sum"
		if s.Op != nil {
			name = fmt.Sprintf("%T %v", s.Op, s.Op)
			if len(name) > 40 {
				name = name[:40]
			}
		}
		by[name] += sz
		tot += sz
	}
	var ks []string
	for k := range by {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return by[ks[i]] > by[ks[j]] })
	for _, k := range ks {
		fmt.Printf("%8.2f %s\n", by[k]/16, k)
	}
	fmt.Printf("total per layer %.2f; Bytes per layer per edge-width %.2f\n", tot/16, float64(m.Bytes())/4/float64(b.Edges*cfg.Hidden)/16)
}

func TestDiagMem2(t *testing.T) {
	cfg := ZINC()
	cfg.Layers = 16
	cfg.AdjDim = 3
	p, _ := nn.NewParams(tensor.Float32, 1)
	b := nn.Bucket{Nodes: 1000, Edges: 10000, Graphs: 8}
	for _, tr := range []bool{true, false} {
		net, err := Build(cfg, p, b, tr)
		if err != nil {
			t.Fatal(err)
		}
		m := net.Machine()
		ew := float64(b.Edges*cfg.Hidden*4) * 16
		sl, un := m.PlanBytes()
		fmt.Printf("train=%v slots %.2f unshared %.2f bytes %.2f (edge-width per layer)\n", tr, float64(sl)/ew, float64(un)/ew, float64(m.Bytes())/ew)
	}
}
