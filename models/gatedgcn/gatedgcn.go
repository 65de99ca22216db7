// Package gatedgcn builds the GatedGCN network of benchmarking-gnns with edge features
// (REFERENCE §2) as a Gorgonia graph per shape bucket, with the positional encodings and CLS
// readout of the paper (§5.6, §1.4).
package gatedgcn

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/gorgonia"
)

// Config is the network's shape.
type Config struct {
	Layers, Hidden int
	NodeVocab      int    // rows of the node-type embedding (ZINC: 28, 29 with the CLS id)
	EdgeVocab      int    // rows of the edge-type embedding (ZINC: 4)
	SPRows         int    // rows of the shortest-path encoding table (r+2); 0 without it
	AdjDim         int    // width r of the adjacency-power encoding; 0 without it
	LapQ           int    // width of the Laplacian encoding; 0 without it
	Readout        string // "mean" or "cls"
	Out            int    // output width of the MLP readout
	BatchNorm      bool
	Residual       bool
}

// ZINC is the 100K ZINC configuration (REFERENCE §2.3) without encodings or CLS node.
func ZINC() Config {
	return Config{Layers: 4, Hidden: 70, NodeVocab: 28, EdgeVocab: 4, Readout: "mean", Out: 1, BatchNorm: true, Residual: true}
}

// Validate reports the first setting that cannot build a network.
func (c Config) Validate() error {
	switch {
	case c.Layers < 1:
		return fmt.Errorf("gatedgcn: layers = %d, want at least 1", c.Layers)
	case c.Hidden < 4:
		return fmt.Errorf("gatedgcn: hidden = %d, want at least 4", c.Hidden)
	case c.NodeVocab < 1 || c.EdgeVocab < 1:
		return fmt.Errorf("gatedgcn: node/edge vocabulary %d/%d, want at least 1", c.NodeVocab, c.EdgeVocab)
	case c.SPRows < 0 || c.AdjDim < 0 || c.LapQ < 0:
		return fmt.Errorf("gatedgcn: negative encoding width (sp %d, adj %d, lap %d)", c.SPRows, c.AdjDim, c.LapQ)
	case c.Readout != "mean" && c.Readout != "cls":
		return fmt.Errorf("gatedgcn: readout %q, want mean or cls", c.Readout)
	case c.Out < 1:
		return fmt.Errorf("gatedgcn: output width %d", c.Out)
	}
	return nil
}

// Inputs says which batch inputs the network reads.
func (c Config) Inputs() nn.InputSpec {
	return nn.InputSpec{SP: c.SPRows > 0, CLS: c.Readout == "cls", AdjDim: c.AdjDim, LapQ: c.LapQ}
}

// Params is the trainable-parameter count: L(5d²+9d) + embeddings + encoders + head (§2.4).
func (c Config) Params() int {
	d := c.Hidden
	p := c.Layers*(5*d*d+9*d) + c.NodeVocab*d + c.EdgeVocab*d
	p += c.SPRows * d
	if c.AdjDim > 0 {
		p += (c.AdjDim + 1) * d
	}
	if c.LapQ > 0 {
		p += (c.LapQ + 1) * d
	}
	h1, h2 := d/2, d/4
	return p + d*h1 + h1 + h1*h2 + h2 + h2*c.Out + c.Out
}

// Build adds the network for bucket b to a new graph whose parameters live in p; with train,
// it also adds the gradient of the loss with respect to every parameter.
func Build(cfg Config, p *nn.Params, b nn.Bucket, train bool) (*nn.Net, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if b.Nodes < 1 || b.Edges < 1 || b.Graphs < 1 {
		return nil, fmt.Errorf("gatedgcn: bucket %v has an empty dimension", b)
	}
	bd := nn.NewBuilder(p)
	in := nn.NewInputs(b, p.Dtype, cfg.Inputs())
	h, e := inputLayer(bd, in, cfg)
	for l := 0; l < cfg.Layers; l++ {
		h, e = layer(bd, in, cfg, fmt.Sprintf("layer%d", l), h, e)
	}
	pred := bd.MLPReadout(bd.Readout(in, cfg.Readout, h), "readout", cfg.Hidden, cfg.Out)
	net, err := nn.Finish(bd, in, pred, bd.L1(pred, in), train)
	if err != nil {
		return nil, fmt.Errorf("gatedgcn: bucket %v: %w", b, err)
	}
	return net, nil
}

// Builder returns the BuildFunc of cfg for a trainer.
func Builder(cfg Config) nn.BuildFunc {
	return func(p *nn.Params, b nn.Bucket, train bool) (*nn.Net, error) { return Build(cfg, p, b, train) }
}

// inputLayer embeds node and edge types and adds the encodings (REFERENCE §5.6).
func inputLayer(b *nn.Builder, in *nn.Inputs, c Config) (h, e *gorgonia.Node) {
	d := c.Hidden
	h = b.Embedding(in.NodeCat, "node_emb", c.NodeVocab, d)
	if c.LapQ > 0 {
		h = b.Add(h, b.Linear(b.Input("lap", in.Lap), "lap_pe", c.LapQ, d))
	}
	e = b.Embedding(in.EdgeCat, "edge_emb", c.EdgeVocab, d)
	if c.SPRows > 0 {
		e = b.Add(e, b.Embedding(in.SP, "sp_pe", c.SPRows, d))
	}
	if c.AdjDim > 0 {
		e = b.Add(e, b.Linear(b.Input("adj", in.Adj), "adj_pe", c.AdjDim, d))
	}
	return h, e
}

// layer is one GatedGCN layer (REFERENCE §2.1):
//
//	ê = C e + D h_src + E h_dst,  η = σ(ê)
//	ĥ = A h + Σ_in η⊙B h_src ⊘ (Σ_in η + 1e-6)
//	then BN, ReLU, residual for both ĥ and ê.
func layer(b *nn.Builder, in *nn.Inputs, c Config, name string, h, e *gorgonia.Node) (*gorgonia.Node, *gorgonia.Node) {
	d, n := c.Hidden, in.B.Nodes
	ah := b.Linear(h, name+".A", d, d)
	bh := b.Linear(h, name+".B", d, d)
	dh := b.Linear(h, name+".D", d, d)
	eh := b.Linear(h, name+".E", d, d)
	ce := b.Linear(e, name+".C", d, d)
	ehat := b.Apply(name+" edge sum", func() (*gorgonia.Node, error) { return nn.EdgeSum(ce, dh, eh, in.Src, in.Dst) })
	agg := b.Apply(name+" gated aggregate", func() (*gorgonia.Node, error) {
		return nn.GatedAggregate(ehat, bh, in.Src, in.Dst, n)
	})
	hhat := b.Add(ah, agg)
	return normAct(b, c, hhat, name+".bn_h", in.NodeMask, h), normAct(b, c, ehat, name+".bn_e", in.EdgeMask, e)
}

// normAct is x → BN → ReLU (+ res with the residual), batch norm and residual as c says; with
// batch norm it is one fused op (nn.BatchNormRelu).
func normAct(b *nn.Builder, c Config, x *gorgonia.Node, name string, mask *nn.Mask, res *gorgonia.Node) *gorgonia.Node {
	if !c.Residual {
		res = nil
	}
	if !c.BatchNorm {
		y := b.Relu(x)
		if res != nil {
			y = b.Add(res, y)
		}
		return y
	}
	if b.Err() != nil {
		return nil
	}
	d := x.Shape()[1]
	gamma, beta := b.Param(name+".gamma", nn.Const(1), d), b.Param(name+".beta", nn.Const(0), d)
	return b.Apply(name, func() (*gorgonia.Node, error) {
		return nn.BatchNormRelu(x, gamma, beta, b.P.BNState(name, d), mask, res)
	})
}
