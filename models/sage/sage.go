// Package sage builds GraphSAGE (Hamilton, Ying and Leskovec, "Inductive Representation Learning
// on Large Graphs") with the mean or the max-pooling aggregator and benchmarking-gnns' layer
// conventions (batch norm, ReLU, residual, dropout). Edge inputs (features and the paper's edge
// encodings) enter the messages as GINE's edge term does.
package sage

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/gorgonia"
)

// Aggregators (model.aggregator).
const (
	Mean = "mean"
	Max  = "max"
)

// Config is the network's shape.
type Config struct {
	Layers, Hidden int
	nn.IO
	nn.End
	Aggregator string // Mean or Max
}

// New is the registry's constructor (models.Register); aggregator is the model's own key.
func New(m config.Model, io nn.IO) (nn.BuildFunc, int, error) {
	return nn.Bind(Config{m.Layers, m.Hidden, io, nn.End{BatchNorm: m.BatchNorm, Residual: m.Residual, Dropout: m.Dropout}, m.Str("aggregator")}, Build)
}

// Validate reports the first setting that cannot build a network.
func (c Config) Validate() error {
	var agg error
	if c.Aggregator != Mean && c.Aggregator != Max {
		agg = fmt.Errorf("aggregator %q, want mean or max", c.Aggregator)
	}
	return nn.Check("sage", nn.CheckShape(c.Layers, c.Hidden, c.Dropout), agg, c.CheckEdgeEncodings(), c.IO.Validate())
}

// Params is L·(2d² + d [+ d² + d pooling layer with max] [+ 2d batch norm]) plus the input
// layer and the head.
func (c Config) Params() int {
	d := c.Hidden
	per := 2*d*d + d
	if c.Aggregator == Max {
		per += d*d + d
	}
	if c.BatchNorm {
		per += 2 * d
	}
	return c.Layers*per + c.NodeParams(d) + c.EdgeParams(d) + c.HeadParams(d)
}

// Build adds the network for bucket bk. Each layer is
//
//	h'_v = W_self h_v + W_neigh · agg_{u→v} m_uv + β
//
// then batch norm, ReLU, residual and dropout. With the mean aggregator, agg is the mean over
// v's in-neighbours (0 without any) and m_uv = h_u, or ReLU(h_u + e_uv) with edge inputs e;
// with the max aggregator (Hamilton's pooling aggregator), agg is the element-wise max (0
// without in-neighbours) of m_uv = ReLU(P h_u + π [+ e_uv]). Unlike the GraphSAGE paper and
// benchmarking-gnns, h' is not L2-normalised (PyTorch Geometric's default, normalize=False):
// batch norm follows at once.
func Build(c Config, p *nn.Params, bk nn.Bucket, train bool) (*nn.Net, error) {
	spec := c.InputSpec()
	spec.MeanAgg = c.Aggregator == Mean
	return nn.Stack(p, bk, train, c.IO, spec, c.Hidden, c.Layers, c.layer)
}

// layer is one GraphSAGE layer on node states h and the embedded edge inputs e (nil without).
func (c Config) layer(b *nn.Builder, in *nn.Inputs, name string, h, e *gorgonia.Node) *gorgonia.Node {
	d := c.Hidden
	var agg *gorgonia.Node
	if c.Aggregator == Max {
		m := b.Sources(b.Linear(h, name+".pool", d, d), in)
		if e != nil {
			m = b.Add(m, e)
		}
		agg = b.SegmentMax(b.Relu(m), in.Dst, in.B.Nodes)
	} else {
		m := b.Sources(h, in)
		if e != nil {
			m = b.Relu(b.Add(m, e))
		}
		agg = b.ScatterAdd(m, in.MeanDst, in.B.Nodes)
	}
	y := b.Add(b.LinearNoBias(h, name+".self", d, d, nn.Uniform(nn.LinearBound(d))), b.Linear(agg, name+".neigh", d, d))
	return b.LayerEnd(c.End, y, h, in.NodeMask, name+".bn", name+".drop")
}
