// Package gin is the smallest model: GIN (Xu et al., "How Powerful are Graph Neural Networks?"),
// with GINE's edge term (Hu et al., 2020) when the edges carry inputs (features and the paper's
// edge encodings). One of the models beyond the paper's (docs/models.md).
package gin

import (
	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/gorgonia"
)

// Config is the network's shape; Eps is GIN's ε (fixed, not learnt).
type Config struct {
	Layers, Hidden int
	nn.IO
	Eps                 float64
	BatchNorm, Residual bool
	Dropout             float64
}

// New is the registry's constructor (models.Register); eps is the model's own key.
func New(m config.Model, io nn.IO) (nn.BuildFunc, int, error) {
	return nn.Bind(Config{m.Layers, m.Hidden, io, m.Float("eps"), m.BatchNorm, m.Residual, m.Dropout}, Build)
}

// Validate reports the first setting that cannot build a network.
func (c Config) Validate() error {
	return nn.Check("gin", nn.CheckShape(c.Layers, c.Hidden, c.Dropout), c.CheckEdgeEncodings(), c.IO.Validate())
}

// Params is L·(2(d²+d) [+ 2d with batch norm]) plus the input layer and the head.
func (c Config) Params() int {
	per := 2 * (c.Hidden*c.Hidden + c.Hidden)
	if c.BatchNorm {
		per += 2 * c.Hidden
	}
	return c.Layers*per + c.NodeParams(c.Hidden) + c.EdgeParams(c.Hidden) + c.HeadParams(c.Hidden)
}

// Build adds the network for bucket bk: per layer
//
//	h'_v = MLP((1+ε)·h_v + Σ_{u→v} m_uv),  m_uv = ReLU(h_u + e_uv) (GINE), or h_u without edge inputs
//
// with MLP = Linear → ReLU → Linear, then batch norm, ReLU, residual and dropout as configured.
func Build(c Config, p *nn.Params, bk nn.Bucket, train bool) (*nn.Net, error) {
	return nn.Stack(p, bk, train, c.IO, c.InputSpec(), c.Hidden, c.Layers, c.layer)
}

// layer is one GIN layer on node states h and the embedded edge inputs e (nil without).
func (c Config) layer(b *nn.Builder, in *nn.Inputs, name string, h, e *gorgonia.Node) *gorgonia.Node {
	d := c.Hidden
	var sum *gorgonia.Node
	if e == nil {
		sum = b.Propagate(h, in)
	} else {
		sum = b.PropagateEdges(b.Relu(b.Add(b.Sources(h, in), e)), in)
	}
	self := h
	if c.Eps != 0 {
		self = b.Scale(h, 1+c.Eps)
	}
	x := b.Linear(b.Relu(b.Linear(b.Add(self, sum), name+".mlp0", d, d)), name+".mlp1", d, d)
	if c.BatchNorm {
		x = b.BatchNorm(x, name+".bn", in.NodeMask)
	}
	if x = b.Relu(x); c.Residual {
		x = b.Add(h, x)
	}
	return b.Dropout(x, name+".drop", c.Dropout)
}
