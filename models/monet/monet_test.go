package monet

import (
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testgraphs"
	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/tensor"
)

func count(t *testing.T, cfg Config) int {
	t.Helper()
	p, err := nn.NewParams(tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	net, err := Build(cfg, p, nn.Bucket{Nodes: 30, Edges: 60, Graphs: 2}, false)
	if err != nil {
		t.Fatal(err)
	}
	net.Close()
	return p.Count()
}

// TestParamCountZINC: 4·(K·d² + 2K·p + 3d + 3p) + 28·d + MLPReadout(90→1)
// = 4·24 588 + 2520 + 5130 = 106 002 (docs/protocol.md §"MoNet configuration",
// §"Parameter budgets"). The edge embedding (§"MoNet edge embedding") adds 4·90 (bond
// embedding) + 4·(90·3 + 3).
func TestParamCountZINC(t *testing.T) {
	cfg := ZINC()
	if got := cfg.Params(); got != 106002 {
		t.Fatalf("formula gives %d, want 106002", got)
	}
	if got := count(t, cfg); got != 106002 {
		t.Fatalf("built network has %d parameters, want 106002", got)
	}
	cfg.EdgeVocab = 4
	want := 106002 + 4*90 + 4*(90*3+3)
	if got := count(t, cfg); got != want || cfg.Params() != want {
		t.Fatalf("with edge embedding: built %d, formula %d, want %d", got, cfg.Params(), want)
	}
}

func tiny(readout string, edges bool) Config {
	c := Config{Layers: 2, Hidden: 12, Kernels: 3, PseudoDim: 2, IO: nn.IO{NodeVocab: 5, LapQ: 2, Readout: readout, Loss: nn.LossL1, Out: 1}, BatchNorm: true, Residual: true}
	if edges {
		c.EdgeVocab, c.SPRows, c.AdjDim = 3, 3, 2
	}
	return c
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
	for _, edges := range []bool{false, true} {
		testgraphs.GradCheck(t, Builder(tiny("mean", edges)), tinyBatch(t), 10, 1e-5)
	}
	testgraphs.GradCheck(t, Builder(tiny("cls", true)), tinyBatch(t), 10, 1e-5)
}

func TestBucketsAgree(t *testing.T) {
	testgraphs.BucketsAgree(t, Builder(tiny("mean", true)), tinyBatch(t))
}

func TestRejectsEdgeEncodingWithoutEmbedding(t *testing.T) {
	c := ZINC()
	c.SPRows = 3
	if err := c.Validate(); err == nil {
		t.Fatal("shortest-path encoding without edge embedding accepted")
	}
}

// TestTrainZINC trains the 100K ZINC MoNet on 64 real molecules and checks the loss falls.
func TestTrainZINC(t *testing.T) {
	steps := 120
	if testing.Short() {
		steps = 60
	}
	testgraphs.TrainFalls(t, Builder(ZINC()), testgraphs.ZINC(t, 64), 16, steps, 0.7)
}

// TestParamCountWithoutBatchNorm: model.batch_norm false drops γ and β (2d a layer).
func TestParamCountWithoutBatchNorm(t *testing.T) {
	cfg := ZINC()
	cfg.BatchNorm = false
	if got, want := count(t, cfg), 106002-4*2*90; got != want || cfg.Params() != want {
		t.Fatalf("built %d parameters, formula %d, want %d", got, cfg.Params(), want)
	}
}
