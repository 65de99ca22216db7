// Package gatedgcn builds the GatedGCN network of benchmarking-gnns with edge features
// (docs/protocol.md §"GatedGCN") as a Gorgonia graph per shape bucket, with the positional
// encodings and CLS readout of the paper (§"Input layer and encoders", §"Readouts").
package gatedgcn

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/gorgonia"
)

// Config is the network's shape: layers and width, the dataset-dependent input layer and head
// (nn.IO), and the layer switches.
type Config struct {
	Layers, Hidden int
	nn.IO
	BatchNorm bool
	Residual  bool
	Dropout   float64 // after each layer's residual (docs/protocol.md §"GatedGCN layer"; 0 in every paper config)
}

// ZINC is the 100K ZINC configuration (docs/protocol.md §"GatedGCN configuration") without
// encodings or CLS node.
func ZINC() Config {
	return Config{Layers: 4, Hidden: 70, IO: nn.IO{NodeVocab: 28, EdgeVocab: 4, Readout: nn.ReadoutMean, Loss: nn.LossL1, Out: 1},
		BatchNorm: true, Residual: true}
}

// Validate reports the first setting that cannot build a network.
func (c Config) Validate() error {
	return nn.Check("gatedgcn", nn.CheckShape(c.Layers, c.Hidden, c.Dropout), c.CheckEdgeInput(), c.IO.Validate())
}

// Inputs says which batch inputs the network reads.
func (c Config) Inputs() nn.InputSpec { return c.InputSpec() }

// Params is the trainable-parameter count: L(5d²+9d) + input layer + head (docs/protocol.md
// §"Parameter budgets").
func (c Config) Params() int {
	d := c.Hidden
	per := 5*d*d + 5*d // A, B, C, D, E with biases
	if c.BatchNorm {
		per += 4 * d // γ, β of h and of e
	}
	return c.Layers*per + c.NodeParams(d) + c.EdgeParams(d) + c.HeadParams(d)
}

// Build adds the network for bucket b to a new graph whose parameters live in p; with train,
// it also adds the gradient of the loss with respect to every parameter.
func Build(cfg Config, p *nn.Params, b nn.Bucket, train bool) (*nn.Net, error) {
	bd := nn.NewBuilder(p)
	in := nn.NewInputs(b, p.Dtype, cfg.Inputs())
	h, e := bd.NodeInput(in, cfg.IO, cfg.Hidden), bd.EdgeInput(in, cfg.IO, cfg.Hidden)
	for l := 0; l < cfg.Layers; l++ {
		h, e = layer(bd, in, cfg, fmt.Sprintf("layer%d", l), h, e)
		bd.Checkpoint(h, e)
	}
	pred, loss := bd.Head(in, cfg.IO, h, cfg.Hidden)
	net, err := nn.Finish(bd, in, pred, loss, train)
	if err != nil {
		return nil, fmt.Errorf("gatedgcn: bucket %v: %w", b, err)
	}
	return net, nil
}

// New is the model's constructor for the registry (models.Register): the network a config's
// model section describes on io.
func New(m config.Model, io nn.IO) (nn.BuildFunc, int, error) {
	return nn.Bind(Config{Layers: m.Layers, Hidden: m.Hidden, IO: io, BatchNorm: m.BatchNorm, Residual: m.Residual, Dropout: m.Dropout}, Build)
}

// layer is one GatedGCN layer (docs/protocol.md §"GatedGCN layer"):
//
//	ê = C e + D h_src + E h_dst,  η = σ(ê)
//	ĥ = A h + Σ_in η⊙B h_src ⊘ (Σ_in η + 1e-6)
//	then BN, ReLU, residual and dropout for both ĥ and ê.
func layer(b *nn.Builder, in *nn.Inputs, c Config, name string, h, e *gorgonia.Node) (*gorgonia.Node, *gorgonia.Node) {
	d, n := c.Hidden, in.B.Nodes
	ah := b.Linear(h, name+".A", d, d)
	bh := b.Linear(h, name+".B", d, d)
	dh := b.Linear(h, name+".D", d, d)
	eh := b.Linear(h, name+".E", d, d)
	ce := b.Linear(e, name+".C", d, d)
	ehat := b.Apply(name+" edge sum", func() (*gorgonia.Node, error) { return ops.EdgeSum(ce, dh, eh, in.Src, in.Dst) })
	agg := b.Apply(name+" gated aggregate", func() (*gorgonia.Node, error) {
		return ops.GatedAggregate(ehat, bh, in.Src, in.Dst, n)
	})
	hhat := b.Add(ah, agg)
	end := nn.End{BatchNorm: c.BatchNorm, Residual: c.Residual, Dropout: c.Dropout}
	return b.LayerEnd(end, hhat, h, in.NodeMask, name+".bn_h", name+".drop_h"), b.LayerEnd(end, ehat, e, in.EdgeMask, name+".bn_e", name+".drop_e")
}
