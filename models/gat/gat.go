// Package gat builds GATv2 (Brody, Alon and Yahav, "How Attentive are Graph Attention
// Networks?"), multi-head, with benchmarking-gnns' layer conventions (batch norm, ReLU, residual,
// dropout). Edge inputs (features and the paper's edge encodings) enter the attention scores
// through a per-layer projection, as PyTorch Geometric's GATv2Conv with edge_dim does.
package gat

import (
	"fmt"
	"math"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/gorgonia"
)

// Slope is the negative slope of the attention's LeakyReLU (GATv2's 0.2).
const Slope = 0.2

// Config is the network's shape: Heads attention heads of Hidden/Heads features each,
// concatenated.
type Config struct {
	Layers, Hidden int
	nn.IO
	nn.End
	Heads int
}

// New is the registry's constructor (models.Register); heads is the model's own key.
func New(m config.Model, io nn.IO) (nn.BuildFunc, int, error) {
	return nn.Bind(Config{m.Layers, m.Hidden, io, nn.End{BatchNorm: m.BatchNorm, Residual: m.Residual, Dropout: m.Dropout}, m.Int("heads")}, Build)
}

// Validate reports the first setting that cannot build a network.
func (c Config) Validate() error {
	return nn.Check("gat", nn.CheckShape(c.Layers, c.Hidden, c.Dropout), nn.CheckHeads(c.Hidden, c.Heads), c.CheckEdgeEncodings(), c.IO.Validate())
}

// Params is L·(2(d² + d) + 2d [+ d² edge projection] [+ 2d batch norm]) plus the input layer and
// the head.
func (c Config) Params() int {
	d := c.Hidden
	per := 2*(d*d+d) + 2*d // source and target projections, attention vector, bias
	if c.HasEdgeInput() {
		per += d * d
	}
	if c.BatchNorm {
		per += 2 * d
	}
	return c.Layers*per + c.NodeParams(d) + c.EdgeParams(d) + c.HeadParams(d)
}

// Build adds the network for bucket bk. Each layer is, per head k (its block of w = d/H
// features),
//
//	z_uv = S h_u + T h_v [+ E e_uv],  s_uv,k = a_kᵀ LeakyReLU(z_uv)_k,
//	α_uv,k = softmax over the edges into v of s_uv,k,  h'_v,k = Σ_{u→v} α_uv,k (S h_u)_k + β_k
//
// (GATv2: the attention vector applied after the non-linearity), the heads concatenated, then
// batch norm, ReLU, residual and dropout. benchmarking-gnns' GAT uses ELU after batch norm; ReLU
// here, like every other model of this package tree.
func Build(c Config, p *nn.Params, bk nn.Bucket, train bool) (*nn.Net, error) {
	return nn.Stack(p, bk, train, c.IO, c.InputSpec(), c.Hidden, c.Layers, c.layer)
}

// layer is one GATv2 layer on node states h and the embedded edge inputs e (nil without).
func (c Config) layer(b *nn.Builder, in *nn.Inputs, name string, h, e *gorgonia.Node) *gorgonia.Node {
	d, n := c.Hidden, in.B.Nodes
	xs := b.Sources(b.Linear(h, name+".src", d, d), in)
	z := b.Add(xs, b.Targets(b.Linear(h, name+".dst", d, d), in))
	if e != nil {
		z = b.Add(z, b.LinearNoBias(e, name+".edge", d, d, nn.Uniform(nn.LinearBound(d))))
	}
	score := b.MatMul(b.LeakyRelu(z, Slope), attention(b, name+".att", d, c.Heads))
	alpha := b.SegmentSoftmax(score, in.Dst, n)
	y := b.AddBias(b.ScatterAdd(b.HeadScale(xs, alpha), in.Dst, n), b.Param(name+".bias", nn.Const(0), d))
	return b.LayerEnd(c.End, y, h, in.NodeMask, name+".bn", name+".drop")
}

// attention is the heads' attention vectors as one block-diagonal [d, H] matrix: column k holds
// a's entries of head k's block of w = d/H rows and zeros elsewhere, so z·A is every head's
// score at once. The parameter is a alone ([d, 1], Glorot-uniform per head as PyTorch
// Geometric draws it); the block pattern is a constant.
func attention(b *nn.Builder, name string, d, heads int) *gorgonia.Node {
	w := d / heads
	a := b.Param(name, nn.Uniform(glorot(w, 1)), d, 1)
	blocks := b.Const(fmt.Sprintf("head blocks %dx%d", d, heads), d, heads, func(r, c int) float64 {
		if r/w == c {
			return 1
		}
		return 0
	})
	return b.HeadScale(blocks, a)
}

// glorot is the bound √(6/(fanIn + fanOut)) of Glorot's uniform initialisation.
func glorot(fanIn, fanOut int) float64 { return math.Sqrt(6 / float64(fanIn+fanOut)) }
