// Package monet builds MoNet (Gaussian-mixture model CNN, benchmarking-gnns GMMLayer with sum
// aggregation, docs/protocol.md §"MoNet") as a Gorgonia graph per shape bucket, with the paper's
// optional edge embeddings added to the kernel weights (§"MoNet edge embedding") and the
// positional encodings of §"Input layer and encoders".
package monet

import (
	"fmt"
	"math"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/gorgonia"
)

// Config is the network's shape. The edge embedding ε (nn.IO's edge features and edge encoding,
// as the IO has them) is optional: without either this is bgnn's MoNet; with them, ε enters the
// kernel weights (docs/protocol.md §"MoNet edge embedding"). EdgeEmbed says which reading of the
// paper's sentence built the IO's edge part (New).
type Config struct {
	Layers, Hidden int
	Kernels        int // K Gaussian kernels
	PseudoDim      int // width of the projected pseudo-coordinates
	nn.IO
	BatchNorm bool
	Residual  bool
	Dropout   float64 // after each layer's bias (0 in every paper config)
}

// EdgeEmbed values (the own key model.edge_embed): which edge inputs make the edge embedding ε
// (docs/protocol.md §"MoNet edge embedding").
const (
	EdgeEmbedAll      = ""         // the edge features (bond types) and the edge encoding: this project's first reading
	EdgeEmbedEncoding = "encoding" // the edge encoding alone: the rewiring's positional encoding, no bond types
)

// ZINC is bgnn's 100K MoNet configuration for ZINC (docs/protocol.md
// §"MoNet configuration"), without edge embedding.
func ZINC() Config {
	return Config{Layers: 4, Hidden: 90, Kernels: 3, PseudoDim: 2,
		IO: nn.IO{NodeVocab: 28, Readout: nn.ReadoutMean, Loss: nn.LossL1, Out: 1}, BatchNorm: true, Residual: true}
}

// Validate reports the first setting that cannot build a network.
func (c Config) Validate() error {
	var gauss error
	if c.Kernels < 1 || c.PseudoDim < 1 {
		gauss = fmt.Errorf("kernels %d, pseudo dim %d: want at least 1 each", c.Kernels, c.PseudoDim)
	}
	return nn.Check("monet", nn.CheckShape(c.Layers, c.Hidden, c.Dropout), gauss, c.IO.Validate())
}

// Inputs says which batch inputs the network reads.
func (c Config) Inputs() nn.InputSpec {
	s := c.InputSpec()
	s.Pseudo = true
	return s
}

// Params is the trainable-parameter count: per layer K·d² + 2K·p + 3d + 3p (F, μ, 1/σ, bias,
// BN, pseudo projection), plus d·K + K per layer with edge embeddings, plus the input layer and
// the head.
func (c Config) Params() int {
	d, k, pd := c.Hidden, c.Kernels, c.PseudoDim
	per := k*d*d + 2*k*pd + d + 3*pd // kernels, Gaussians, bias, pseudo-coordinate projection
	if c.BatchNorm {
		per += 2 * d // γ, β
	}
	if c.HasEdgeEmbedding() {
		per += d*k + k
	}
	return c.Layers*per + c.NodeParams(d) + c.EdgeParams(d) + c.HeadParams(d)
}

// Build adds the network for bucket b to a new graph on parameters p (with gradients if train).
func Build(cfg Config, p *nn.Params, b nn.Bucket, train bool) (*nn.Net, error) {
	bd := nn.NewBuilder(p)
	in := nn.NewInputs(b, p.Dtype, cfg.Inputs())
	d := cfg.Hidden
	h := bd.NodeInput(in, cfg.IO, d)
	eps := bd.EdgeInput(in, cfg.IO, d) // static edge embedding ε (docs/protocol.md §"MoNet edge embedding"), nil without edge input or encoding
	u := bd.Input("pseudo", in.DegSrc)
	for l := 0; l < cfg.Layers; l++ {
		h = layer(bd, in, cfg, fmt.Sprintf("layer%d", l), h, u, eps)
		bd.Checkpoint(h)
	}
	pred, loss := bd.Head(in, cfg.IO, h, d)
	net, err := nn.Finish(bd, in, pred, loss, train)
	if err != nil {
		return nil, fmt.Errorf("monet: bucket %v: %w", b, err)
	}
	return net, nil
}

// New is the model's constructor for the registry (models.Register): the network a config's
// model section describes on io (own keys: kernels, pseudo_dim, edge_embed: with "encoding" the
// edge features are left out of ε, which keeps the edge encoding alone).
func New(m config.Model, io nn.IO) (nn.BuildFunc, int, error) {
	switch e := m.Str("edge_embed"); e {
	case EdgeEmbedAll:
	case EdgeEmbedEncoding:
		io.EdgeVocab, io.EdgeVocabs, io.EdgeFloat = 0, nil, 0
	default:
		return nil, 0, fmt.Errorf("monet: model.edge_embed %q, want \"\" (features and encoding) or %q", e, EdgeEmbedEncoding)
	}
	return nn.Bind(Config{Layers: m.Layers, Hidden: m.Hidden, Kernels: m.Int("kernels"), PseudoDim: m.Int("pseudo_dim"), IO: io,
		BatchNorm: m.BatchNorm, Residual: m.Residual, Dropout: m.Dropout}, Build)
}

// layer is one GMM layer (docs/protocol.md §"MoNet layer"): kernel weights
// w = Gaussian(tanh(P·u + p); μ, 1/σ) (+ U·ε), h̃_i = Σ_k Σ_in w_k · (F h_src)_k, then BN, ReLU,
// residual and the bias, in bgnn's order.
func layer(b *nn.Builder, in *nn.Inputs, c Config, name string, h, u, eps *gorgonia.Node) *gorgonia.Node {
	d, k, pd := c.Hidden, c.Kernels, c.PseudoDim
	ut := b.Tanh(b.Linear(u, name+".pseudo", 2, pd))
	mu := b.Param(name+".mu", nn.Normal(0, 0.1), k, pd)
	is := b.Param(name+".inv_sigma", nn.Const(1), k, pd)
	w := b.Apply(name+" kernel weights", func() (*gorgonia.Node, error) { return ops.GaussianWeights(ut, mu, is) })
	if eps != nil {
		w = b.Add(w, b.Linear(eps, name+".U", d, k))
	}
	std := math.Sqrt2 * math.Sqrt(2/float64(d+k*d)) // Xavier normal, ReLU gain
	x := b.LinearNoBias(h, name+".F", d, k*d, nn.Normal(0, std))
	xs := b.Sources(x, in) // (F h)_u per edge u → v
	msg := b.Apply(name+" kernel mix", func() (*gorgonia.Node, error) { return ops.KernelMix(xs, w) })
	out := b.PropagateEdges(msg, in) // Σ_{u→v} Σ_k w_k (F h_u)_k
	if c.BatchNorm {
		out = b.BatchNorm(out, name+".bn", in.NodeMask)
	}
	out = b.Relu(out)
	if c.Residual {
		out = b.Add(h, out)
	}
	return b.Dropout(b.AddBias(out, b.Param(name+".bias", nn.Const(0), d)), name+".drop", c.Dropout)
}
