package monet

import (
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
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
	c := Config{Layers: 2, Hidden: 12, Kernels: 3, PseudoDim: 2, IO: nn.IO{NodeVocab: 5, NodeEnc: "lp", NodePE: 2, Readout: readout, Loss: nn.LossL1, Out: 1}, BatchNorm: true, Residual: true}
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
		testgraphs.GradCheck(t, nn.BuildOf(tiny("mean", edges), Build), tinyBatch(t), 10, 1e-5)
	}
	testgraphs.GradCheck(t, nn.BuildOf(tiny("cls", true), Build), tinyBatch(t), 10, 1e-5)
}

func TestBucketsAgree(t *testing.T) {
	testgraphs.BucketsAgree(t, nn.BuildOf(tiny("mean", true), Build), tinyBatch(t))
}

// An edge encoding without edge features makes the edge embedding by itself (model.edge_embed:
// encoding): the shortest-path table and U per layer are counted and built, nothing else.
func TestEdgeEncodingAloneIsTheEmbedding(t *testing.T) {
	c := ZINC()
	c.SPRows = 3
	want := 106002 + 3*90 + 4*(90*3+3)
	if got := count(t, c); got != want || c.Params() != want {
		t.Fatalf("built %d, formula %d, want %d", got, c.Params(), want)
	}
}

// encodingOnly is New's network for model.edge_embed: encoding on tiny's IO with edges: the
// bond table left out, the encodings kept.
func encodingOnly(t *testing.T) (nn.BuildFunc, int) {
	t.Helper()
	own := map[string]any{"kernels": 3, "pseudo_dim": 2, "edge_embed": EdgeEmbedEncoding}
	m := config.Model{Layers: 2, Hidden: 12, BatchNorm: true, Residual: true, Own: own}
	build, params, err := New(m, tiny("mean", true).IO)
	if err != nil {
		t.Fatal(err)
	}
	return build, params
}

// With model.edge_embed: encoding the edge embedding is the encoding alone: the bond table's
// 3·12 parameters are gone, the gradients check out, and the loss does not move when every bond
// type is changed (it does with the default reading, the control), but does when the adjacency
// encoding is.
func TestEdgeEmbedEncoding(t *testing.T) {
	build, params := encodingOnly(t)
	full := tiny("mean", true)
	if want := full.Params() - 3*12; params != want {
		t.Fatalf("parameters %d, want %d (the full reading's %d less the bond table)", params, want, full.Params())
	}
	testgraphs.GradCheck(t, build, tinyBatch(t), 10, 1e-5)
	base := loss(t, build, tinyBatch(t))
	bonds := tinyBatch(t)
	for i := range bonds.Union.Edge.Cat {
		bonds.Union.Edge.Cat[i] = (bonds.Union.Edge.Cat[i] + 1) % 3
	}
	if got := loss(t, build, bonds); got != base {
		t.Errorf("loss %v with the bond types changed, %v before: the bonds reach the network", got, base)
	}
	if loss(t, nn.BuildOf(full, Build), bonds) == loss(t, nn.BuildOf(full, Build), tinyBatch(t)) {
		t.Error("control: the default reading's loss does not depend on the bond types")
	}
	adj := tinyBatch(t)
	for i := range adj.Union.Adj {
		adj.Union.Adj[i] += 1
	}
	if loss(t, build, adj) == base {
		t.Error("loss unchanged when the adjacency encoding changes: the encoding does not reach the network")
	}
	bad := config.Model{Layers: 2, Hidden: 12, Own: map[string]any{"kernels": 3, "pseudo_dim": 2, "edge_embed": "bond"}}
	if _, _, err := New(bad, full.IO); err == nil {
		t.Error("model.edge_embed: bond accepted")
	}
}

// loss runs one forward pass of build's network (parameters seeded alike each time) on bt.
func loss(t *testing.T, build nn.BuildFunc, bt *data.Batch) float64 {
	t.Helper()
	p, err := nn.NewParams(tensor.Float64, 7)
	if err != nil {
		t.Fatal(err)
	}
	u := &bt.Union
	net, err := build(p, nn.Bucket{Nodes: u.N, Edges: u.NumEdges(), Graphs: bt.NumGraphs}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	l, err := net.Run(bt)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestTrainZINC trains the 100K ZINC MoNet on 64 real molecules and checks the loss falls.
func TestTrainZINC(t *testing.T) {
	steps := 120
	if testing.Short() {
		steps = 60
	}
	testgraphs.TrainFalls(t, nn.BuildOf(ZINC(), Build), testgraphs.ZINC(t, 64), 16, steps, 0.7)
}

// TestParamCountWithoutBatchNorm: model.batch_norm false drops γ and β (2d a layer).
func TestParamCountWithoutBatchNorm(t *testing.T) {
	cfg := ZINC()
	cfg.BatchNorm = false
	if got, want := count(t, cfg), 106002-4*2*90; got != want || cfg.Params() != want {
		t.Fatalf("built %d parameters, formula %d, want %d", got, cfg.Params(), want)
	}
}
