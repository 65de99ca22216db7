package gin

import (
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/internal/testgraphs"
	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/tensor"
)

// tiny is a small GIN on testgraphs.Tiny's batch, with edge inputs and encodings (GINE) or
// without (plain GIN), ε = 0 or not.
func tiny(t *testing.T, edges bool, eps float64, readout string) nn.BuildFunc {
	t.Helper()
	io := nn.IO{NodeVocab: 5, NodeEnc: "lp", NodePE: 2, Readout: readout, Loss: nn.LossL1, Out: 1}
	if edges {
		io.EdgeVocab, io.SPRows, io.AdjDim = 3, 3, 2
	}
	build, params, err := New(config.Model{Name: "gin", Layers: 2, Hidden: 8, BatchNorm: true, Residual: true, Own: map[string]any{"eps": eps}}, io)
	if err != nil {
		t.Fatal(err)
	}
	p, err := nn.NewParams(tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	net, err := build(p, nn.Bucket{Nodes: 30, Edges: 60, Graphs: 2}, false)
	if err != nil {
		t.Fatal(err)
	}
	net.Close()
	if p.Count() != params {
		t.Fatalf("built %d parameters, the formula says %d", p.Count(), params)
	}
	return build
}

func TestGradCheck(t *testing.T) {
	bt, err := testgraphs.Tiny()
	if err != nil {
		t.Fatal(err)
	}
	testgraphs.GradCheck(t, tiny(t, false, 0, "mean"), bt, 10, 1e-5)
	testgraphs.GradCheck(t, tiny(t, true, 0.5, "cls"), bt, 10, 1e-5)
}

func TestBucketsAgree(t *testing.T) {
	bt, err := testgraphs.Tiny()
	if err != nil {
		t.Fatal(err)
	}
	testgraphs.BucketsAgree(t, tiny(t, true, 0, "mean"), bt)
}

// TestTrainZINC trains the default model on 64 molecules and checks that the loss falls.
func TestTrainZINC(t *testing.T) { testgraphs.ZINCFalls(t, "gin", New) }
