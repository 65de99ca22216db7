package nn

import (
	"math"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"gorgonia.org/tensor"
)

// TestAvgLogDegree checks δ on a hand-counted case: a graph whose node 0 has in-degree 2 and
// nodes 1, 2 none, and a graph of one node without edges: (log 3 + 3·log 1)/4.
func TestAvgLogDegree(t *testing.T) {
	gs := []*data.Graph{{N: 3, Src: []int32{1, 2}, Dst: []int32{0, 0}}, {N: 1}}
	if got, want := AvgLogDegree(gs), math.Log(3)/4; got != want {
		t.Fatalf("δ = %v, want %v", got, want)
	}
	if got := AvgLogDegree(nil); got != 0 {
		t.Fatalf("δ of no graphs = %v, want 0", got)
	}
}

// TestDegreeInputs checks the degree-weighted indexes and the scalers on a hand-counted graph:
// in-degrees 2, 1, 0 (edges 1→0, 2→0, 0→1), δ = 0.5, with two padding nodes and edges.
func TestDegreeInputs(t *testing.T) {
	g := &data.Graph{N: 3, Src: []int32{1, 2, 0}, Dst: []int32{0, 0, 1}, Node: data.Features{CatDim: 1, Cat: []int32{0, 0, 0}}, Y: []float32{0}}
	bt, err := data.NewBatch([]*data.Graph{g})
	if err != nil {
		t.Fatal(err)
	}
	in := NewInputs(Bucket{Nodes: 5, Edges: 5, Graphs: 1}, tensor.Float64,
		InputSpec{NodeCols: 1, Loss: LossL1, GCNNorm: true, MeanAgg: true, DegScale: true, AvgLogDeg: 0.5})
	if err := in.Load(bt); err != nil {
		t.Fatal(err)
	}
	// GCN: 1/√((d_src+1)(d_dst+1)) per edge, 1/(d+1) per node
	wantDst := []float64{1 / math.Sqrt(2*3), 1 / math.Sqrt(1*3), 1 / math.Sqrt(3*2), 0, 0}
	wantSelf := []float64{1.0 / 3, 1.0 / 2, 1, 0, 0}
	wantMean := []float64{0.5, 0.5, 1, 0, 0}
	for i := range wantDst {
		if math.Abs(in.GCNDst.W[i]-wantDst[i]) > 1e-15 || math.Abs(in.GCNSelf.W[i]-wantSelf[i]) > 1e-15 || in.MeanDst.W[i] != wantMean[i] {
			t.Fatalf("entry %d: gcn dst %v, gcn self %v, mean %v; want %v, %v, %v", i, in.GCNDst.W[i], in.GCNSelf.W[i], in.MeanDst.W[i], wantDst[i], wantSelf[i], wantMean[i])
		}
	}
	if got := in.GCNSelf.Idx; got[2] != 2 || got[3] != -1 {
		t.Fatalf("gcn self index %v, want 0 1 2 -1 -1", got)
	}
	// scalers: d clamped at 1, so node 2 (no in-edges) scales like node 1
	l2, l1 := math.Log(3), math.Log(2)
	want := []float64{1, l2 / 0.5, 0.5 / l2, 1, l1 / 0.5, 0.5 / l1, 1, l1 / 0.5, 0.5 / l1, 0, 0, 0, 0, 0, 0}
	for i, v := range in.DegScale.Float64s() {
		if math.Abs(v-want[i]) > 1e-15 {
			t.Fatalf("scalers %v, want %v", in.DegScale.Float64s(), want)
		}
	}
}
