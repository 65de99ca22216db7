// Package pna builds PNA (Corso et al., "Principal Neighbourhood Aggregation for Graph Nets")
// with one tower: the mean, max, min and standard-deviation aggregators, each scaled by the
// identity, amplification and attenuation degree scalers, and benchmarking-gnns' layer
// conventions (batch norm, ReLU, residual, dropout). Edge inputs (features and the paper's edge
// encodings) enter the messages through a per-layer projection, as in PNA's pre-transformation
// on [h_u, h_v, e_uv].
package pna

import (
	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/gorgonia"
)

// StdEps is added to the variance under the standard deviation's square root (PNA's 1e-5), so
// that its gradient stays finite at zero variance.
const StdEps = 1e-5

// Scalers is the number of degree scalers: identity, amplification, attenuation.
const Scalers = 3

// aggregators names the aggregators in the order of their parameters.
var aggregators = []string{"mean", "max", "min", "std"}

// Config is the network's shape.
type Config struct {
	Layers, Hidden int
	nn.IO
	nn.End
}

// New is the registry's constructor (models.Register). PNA has no keys of its own; its δ, the
// mean log(d+1) over the training split's nodes, comes with io (nn.IO.AvgLogDeg).
func New(m config.Model, io nn.IO) (nn.BuildFunc, int, error) {
	return nn.Bind(Config{m.Layers, m.Hidden, io, nn.End{BatchNorm: m.BatchNorm, Residual: m.Residual, Dropout: m.Dropout}}, Build)
}

// Validate reports the first setting that cannot build a network.
func (c Config) Validate() error {
	return nn.Check("pna", nn.CheckShape(c.Layers, c.Hidden, c.Dropout), c.CheckEdgeEncodings(), c.IO.Validate())
}

// Params is L·((2 [+ 1 with edge inputs])·d² + d pre-transformation, (1 + 4·3)·d² + d
// post-transformation [+ 2d batch norm]) plus the input layer and the head.
func (c Config) Params() int {
	d := c.Hidden
	per := 2*d*d + d + (1+len(aggregators)*Scalers)*d*d + d
	if c.HasEdgeInput() {
		per += d * d
	}
	if c.BatchNorm {
		per += 2 * d
	}
	return c.Layers*per + c.NodeParams(d) + c.EdgeParams(d) + c.HeadParams(d)
}

// Build adds the network for bucket bk. Each layer is
//
//	m_uv = U h_u + V h_v [+ E e_uv] + μ                              (pre-transformation)
//	a_v  = [mean, max, min, std]_{u→v} m_uv                          (0 without in-edges; std = √(ReLU(E[m²] − E[m]²) + 1e-5))
//	h'_v = W h_v + β + Σ_agg (W_agg,1 + s_amp(v) W_agg,2 + s_att(v) W_agg,3) a_v,agg   (post-transformation)
//
// with s_amp = log(d+1)/δ, s_att = δ/log(d+1), d the in-degree clamped at 1 and δ the training
// split's mean log(d+1) (PNA's scalers), then batch norm, ReLU, residual and dropout. The
// post-transformation is PNA's linear map of [h_v, the 12 scaled aggregates], the scalers
// applied after the products (the same map: a scaler is one number per node).
func Build(c Config, p *nn.Params, bk nn.Bucket, train bool) (*nn.Net, error) {
	spec := c.InputSpec()
	spec.MeanAgg, spec.DegScale = true, true
	return nn.Stack(p, bk, train, c.IO, spec, c.Hidden, c.Layers, c.layer)
}

// layer is one PNA layer on node states h and the embedded edge inputs e (nil without), with
// the batch's degree scalers [nodes, 3]. Every piece of a transformation is drawn with the bound
// of the one linear map PNA has (1/√fan-in of its concatenated input), its bias once.
func (c Config) layer(b *nn.Builder, in *nn.Inputs, name string, h, e *gorgonia.Node) *gorgonia.Node {
	d, n := c.Hidden, in.B.Nodes
	scale := b.Input("degree scalers", in.DegScale)
	pre := piece(b, d, 2+btoi(e != nil))
	m := b.Add(b.Sources(pre(h, name+".pre_src", d), in), b.Targets(pre(h, name+".pre_dst", d), in))
	if e != nil {
		m = b.Add(m, pre(e, name+".pre_edge", d))
	}
	m = b.AddBias(m, b.Param(name+".pre.b", nn.Uniform(nn.LinearBound(2*d+btoi(e != nil)*d)), d))
	mean := b.ScatterAdd(m, in.MeanDst, n)
	sq := b.ScatterAdd(b.Mul(m, m), in.MeanDst, n)
	aggs := map[string]*gorgonia.Node{
		"mean": mean,
		"max":  b.SegmentMax(m, in.Dst, n),
		"min":  b.Scale(b.SegmentMax(b.Scale(m, -1), in.Dst, n), -1),
		"std":  b.Sqrt(b.AddConst(b.Relu(b.Sub(sq, b.Mul(mean, mean))), StdEps)),
	}
	post := piece(b, d, 1+len(aggregators)*Scalers)
	// Σ_agg a_agg·[W_agg,1 | W_agg,2 | W_agg,3], whose three column blocks the scalers then mix
	var mixed *gorgonia.Node
	for _, a := range aggregators {
		x := post(aggs[a], name+".post_"+a, Scalers*d)
		if mixed == nil {
			mixed = x
		} else {
			mixed = b.Add(mixed, x)
		}
	}
	mix := b.Apply(name+" scalers", func() (*gorgonia.Node, error) { return ops.KernelMix(mixed, scale) })
	y := b.Add(post(h, name+".post_self", d), mix)
	y = b.AddBias(y, b.Param(name+".post.b", nn.Uniform(nn.LinearBound((1+len(aggregators)*Scalers)*d)), d))
	return b.LayerEnd(c.End, y, h, in.NodeMask, name+".bn", name+".drop")
}

// piece returns x ↦ x·W for W [d, out] named name.W, one block of a linear map whose input is
// blocks·d wide, drawn as PyTorch draws that map: U(−1/√(blocks·d), 1/√(blocks·d)).
func piece(b *nn.Builder, d, blocks int) func(x *gorgonia.Node, name string, out int) *gorgonia.Node {
	bound := nn.LinearBound(blocks * d)
	return func(x *gorgonia.Node, name string, out int) *gorgonia.Node {
		return b.LinearNoBias(x, name, d, out, nn.Uniform(bound))
	}
}

func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}
