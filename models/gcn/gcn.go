// Package gcn builds GCN (Kipf and Welling, "Semi-Supervised Classification with Graph
// Convolutional Networks") with benchmarking-gnns' layer conventions (batch norm, ReLU, residual,
// dropout) and, when the edges carry inputs (features and the paper's edge encodings), the edge
// term of OGB's GCN for molecules. It is the example of docs/design.md §"Adding a model".
package gcn

import (
	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/gorgonia"
)

// Config is the network's shape.
type Config struct {
	Layers, Hidden int
	nn.IO
	nn.End
}

// New is the registry's constructor (models.Register). GCN has no keys of its own.
func New(m config.Model, io nn.IO) (nn.BuildFunc, int, error) {
	return nn.Bind(Config{m.Layers, m.Hidden, io, nn.End{BatchNorm: m.BatchNorm, Residual: m.Residual, Dropout: m.Dropout}}, Build)
}

// Validate reports the first setting that cannot build a network.
func (c Config) Validate() error {
	return nn.Check("gcn", nn.CheckShape(c.Layers, c.Hidden, c.Dropout), c.CheckEdgeEncodings(), c.IO.Validate())
}

// Params is L·(d² + d [+ 2d batch norm]) plus the input layer and the head.
func (c Config) Params() int {
	d := c.Hidden
	per := d*d + d
	if c.BatchNorm {
		per += 2 * d
	}
	return c.Layers*per + c.NodeParams(d) + c.EdgeParams(d) + c.HeadParams(d)
}

// Build adds the network for bucket bk. Each layer is, with x = W h + β and d_v node v's
// in-degree,
//
//	h'_v = Σ_{u→v} (x_u + e_uv) / √((d_u+1)(d_v+1)) + x_v / (d_v+1)
//
// (Kipf and Welling's propagation with self-loops; the embedded edge inputs e_uv, features and
// the paper's edge encodings, are added to the messages, and left out without them), then batch
// norm, ReLU, residual and dropout. OGB's GCN for molecules takes ReLU(x_u + e_uv) and a root
// embedding instead; before batch norm, that ReLU silences a feature for every node whenever
// it is negative everywhere, which small graphs with few distinct node types make common.
func Build(c Config, p *nn.Params, bk nn.Bucket, train bool) (*nn.Net, error) {
	spec := c.InputSpec()
	spec.GCNNorm = true
	return nn.Stack(p, bk, train, c.IO, spec, c.Hidden, c.Layers, c.layer)
}

// layer is one GCN layer on node states h and the embedded edge inputs e (nil without).
func (c Config) layer(b *nn.Builder, in *nn.Inputs, name string, h, e *gorgonia.Node) *gorgonia.Node {
	x := b.Linear(h, name+".W", c.Hidden, c.Hidden)
	m := b.Sources(x, in)
	if e != nil {
		m = b.Add(m, e)
	}
	y := b.Add(b.ScatterAdd(m, in.GCNDst, in.B.Nodes), b.Gather(x, in.GCNSelf))
	return b.LayerEnd(c.End, y, h, in.NodeMask, name+".bn", name+".drop")
}
