package transformer

import (
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testgraphs"
	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/tensor"
)

// TestParamCountZINC: 4·(11d² + (H+12)d) + 28d + 4d + MLPReadout(48→1)
// = 104 832 + 1344 + 192 + 1489 = 107 857 for d = 48, H = 6, for every norm (docs/protocol.md
// §"Transformer configuration", §"Parameter budgets").
func TestParamCountZINC(t *testing.T) {
	for _, norm := range []string{PreBN, PostBN, PreLN, PostLN} {
		cfg := ZINC()
		cfg.Norm = norm
		if got := cfg.Params(); got != 107857 {
			t.Fatalf("formula gives %d, want 107857", got)
		}
		p, err := nn.NewParams(tensor.Float32, 1)
		if err != nil {
			t.Fatal(err)
		}
		net, err := Build(cfg, p, nn.Bucket{Nodes: 30, Edges: 60, Graphs: 2}, false)
		if err != nil {
			t.Fatal(err)
		}
		net.Close()
		if got := p.Count(); got != 107857 {
			t.Fatalf("%s: built network has %d parameters, want 107857", norm, got)
		}
	}
}

func tiny(readout, norm string) Config {
	return Config{Layers: 2, Hidden: 12, Heads: 3, IO: nn.IO{NodeVocab: 5, EdgeVocab: 3, SPRows: 3, AdjDim: 2, NodeEnc: "lp", NodePE: 2, Readout: readout, Loss: nn.LossL1, Out: 1}, Norm: norm}
}

func tinyBatch(t *testing.T) *data.Batch {
	t.Helper()
	b, err := testgraphs.Tiny()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGradCheck(t *testing.T) {
	for _, norm := range []string{PreBN, PostBN, PreLN, PostLN} {
		testgraphs.GradCheck(t, nn.BuildOf(tiny("mean", norm), Build), tinyBatch(t), 10, 1e-5)
	}
	testgraphs.GradCheck(t, nn.BuildOf(tiny("cls", PreBN), Build), tinyBatch(t), 10, 1e-5)
}

// TestGeluGradCheck: the feed-forward blocks with GELU (model.ffn_activation gelu), every
// parameter gradient against central finite differences, and buckets agreeing.
func TestGeluGradCheck(t *testing.T) {
	c := tiny("mean", PreBN)
	c.FFNActivation = ActGelu
	testgraphs.GradCheck(t, nn.BuildOf(c, Build), tinyBatch(t), 10, 1e-5)
	testgraphs.BucketsAgree(t, nn.BuildOf(c, Build), tinyBatch(t))
	c.FFNActivation = "swish"
	if err := c.Validate(); err == nil {
		t.Fatal("unknown feed-forward activation accepted")
	}
}

func TestBucketsAgree(t *testing.T) {
	for _, norm := range []string{PreBN, PostBN, PreLN, PostLN} {
		testgraphs.BucketsAgree(t, nn.BuildOf(tiny("mean", norm), Build), tinyBatch(t))
	}
}

func TestRejectsBadConfig(t *testing.T) {
	c := ZINC()
	c.Heads = 5
	if err := c.Validate(); err == nil {
		t.Fatal("48 hidden with 5 heads accepted")
	}
	c = ZINC()
	c.Norm = "group-norm"
	if err := c.Validate(); err == nil {
		t.Fatal("unknown norm accepted")
	}
}

// TestTrainZINC trains the 100K ZINC Transformer on 64 real molecules and checks the loss falls.
func TestTrainZINC(t *testing.T) {
	steps := 120
	if testing.Short() {
		steps = 60
	}
	testgraphs.TrainFalls(t, nn.BuildOf(ZINC(), Build), testgraphs.ZINC(t, 64), 16, steps, 0.7)
}
