// Package transformer builds the paper's graph Transformer (docs/protocol.md §"Transformer layer")
// as a Gorgonia graph per shape bucket: multi-head attention over each node's in-edges in the
// rewired graph, scores (A_k ĥ_i)ᵀ(B_k ĥ_j) + C_k ê_ij divided by the hidden width d, pre-norm
// batch norm by default.
package transformer

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/gorgonia"
)

// Norm placements and kinds.
const (
	PreBN  = "pre-bn"  // the paper's: BN before attention and before the FFN
	PostBN = "post-bn" // graphtransformer's: residual first, then BN
	PreLN  = "pre-ln"  // as PreBN with LayerNorm
	PostLN = "post-ln" // as PostBN with LayerNorm
)

// Config is the network's shape.
type Config struct {
	Layers, Hidden, Heads int
	nn.IO
	Norm    string  // PreBN, PostBN, PreLN or PostLN
	Dropout float64 // on the attention and FFN outputs (0 in the paper)
}

// ZINC is the 100K ZINC configuration of docs/protocol.md §"Transformer configuration": L = 4,
// d = 48, 6 heads, pre-BN.
func ZINC() Config {
	return Config{Layers: 4, Hidden: 48, Heads: 6, IO: nn.IO{NodeVocab: 28, EdgeVocab: 4, Readout: nn.ReadoutMean, Loss: nn.LossL1, Out: 1}, Norm: PreBN}
}

// Validate reports the first setting that cannot build a network.
func (c Config) Validate() error {
	switch {
	case c.Layers < 1 || c.Hidden < 4 || c.Heads < 1:
		return fmt.Errorf("transformer: layers %d, hidden %d, heads %d: all must be positive (hidden ≥ 4)", c.Layers, c.Hidden, c.Heads)
	case c.Hidden%c.Heads != 0:
		return fmt.Errorf("transformer: hidden %d is not divisible by %d heads", c.Hidden, c.Heads)
	case !c.HasEdgeInput():
		return fmt.Errorf("transformer: edges need an input feature (edge vocabulary or float width)")
	case c.Norm != PreBN && c.Norm != PostBN && c.Norm != PreLN && c.Norm != PostLN:
		return fmt.Errorf("transformer: norm %q, want %s, %s, %s or %s", c.Norm, PreBN, PostBN, PreLN, PostLN)
	case c.Dropout < 0 || c.Dropout >= 1:
		return fmt.Errorf("transformer: dropout %g outside [0, 1)", c.Dropout)
	}
	if err := c.IO.Validate(); err != nil {
		return fmt.Errorf("transformer: %w", err)
	}
	return nil
}

// Inputs says which batch inputs the network reads.
func (c Config) Inputs() nn.InputSpec { return c.InputSpec() }

// Params is the trainable-parameter count: per layer 11d² + (H+12)d (docs/protocol.md
// §"Transformer layer"), plus the input layer and the head.
func (c Config) Params() int {
	d := c.Hidden
	return c.Layers*(11*d*d+(c.Heads+12)*d) + c.NodeParams(d) + c.EdgeParams(d) + c.HeadParams(d)
}

// Build adds the network for bucket b to a new graph on parameters p (with gradients if train).
func Build(cfg Config, p *nn.Params, b nn.Bucket, train bool) (*nn.Net, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if b.Nodes < 1 || b.Edges < 1 || b.Graphs < 1 {
		return nil, fmt.Errorf("transformer: bucket %v has an empty dimension", b)
	}
	bd := nn.NewBuilder(p)
	in := nn.NewInputs(b, p.Dtype, cfg.Inputs())
	d := cfg.Hidden
	h, e := bd.NodeInput(in, cfg.IO, d), bd.EdgeInput(in, cfg.IO, d)
	for l := 0; l < cfg.Layers; l++ {
		h, e = layer(bd, in, cfg, fmt.Sprintf("layer%d", l), h, e)
		bd.Checkpoint(h, e)
	}
	pred, loss := bd.Head(in, cfg.IO, h, d)
	net, err := nn.Finish(bd, in, pred, loss, train)
	if err != nil {
		return nil, fmt.Errorf("transformer: bucket %v: %w", b, err)
	}
	return net, nil
}

// Builder returns the BuildFunc of cfg for a trainer.
func Builder(cfg Config) nn.BuildFunc {
	return func(p *nn.Params, b nn.Bucket, train bool) (*nn.Net, error) { return Build(cfg, p, b, train) }
}

// layer is one Transformer layer. Pre-BN (docs/protocol.md §"Transformer layer"):
//
//	ĥ = BN_h1(h), ê = BN_e(e)
//	ĥĥ = attention(ĥ, ê) + h,  h' = FFN_h(BN_h2(ĥĥ)) + ĥĥ,  e' = FFN_e(ê) + e
//
// Post-BN: ĥĥ = BN_h1(attention(h, e) + h), h' = BN_h2(FFN_h(ĥĥ) + ĥĥ), e' = BN_e(FFN_e(e) + e).
// The LN variants put LayerNorm where these put BN (same parameter count).
func layer(b *nn.Builder, in *nn.Inputs, c Config, name string, h, e *gorgonia.Node) (*gorgonia.Node, *gorgonia.Node) {
	d := c.Hidden
	bn := func(x *gorgonia.Node, which string, mask *ops.Mask) *gorgonia.Node {
		if c.Norm == PreLN || c.Norm == PostLN {
			return b.LayerNorm(x, name+"."+which, mask)
		}
		return b.BatchNorm(x, name+"."+which, mask)
	}
	drop := func(x *gorgonia.Node, which string) *gorgonia.Node { return b.Dropout(x, name+"."+which, c.Dropout) }
	if c.Norm == PostBN || c.Norm == PostLN {
		hh := bn(b.Add(drop(attention(b, in, c, name, h, e), "drop_att"), h), "bn_h1", in.NodeMask)
		h2 := bn(b.Add(drop(ffn(b, name+".ffn_h", hh, d), "drop_h"), hh), "bn_h2", in.NodeMask)
		e2 := bn(b.Add(drop(ffn(b, name+".ffn_e", e, d), "drop_e"), e), "bn_e", in.EdgeMask)
		return h2, e2
	}
	hn, en := bn(h, "bn_h1", in.NodeMask), bn(e, "bn_e", in.EdgeMask)
	hh := b.Add(drop(attention(b, in, c, name, hn, en), "drop_att"), h)
	h2 := b.Add(drop(ffn(b, name+".ffn_h", bn(hh, "bn_h2", in.NodeMask), d), "drop_h"), hh)
	e2 := b.Add(drop(ffn(b, name+".ffn_e", en, d), "drop_e"), e)
	return h2, e2
}

// attention is ‖_k Σ_{j→i} softmax_j(s_ijk) W_k h_j with s_ijk = ((A_k h_i)ᵀ(B_k h_j) + C_k e_ij)/d,
// the softmax running over the in-edges of i (self-loops give the "∪ {i}" term).
func attention(b *nn.Builder, in *nn.Inputs, c Config, name string, h, e *gorgonia.Node) *gorgonia.Node {
	d, heads := c.Hidden, c.Heads
	bound := nn.Uniform(nn.LinearBound(d))
	q := b.LinearNoBias(h, name+".A", d, d, bound)
	k := b.LinearNoBias(h, name+".B", d, d, bound)
	v := b.LinearNoBias(h, name+".W", d, d, bound)
	ce := b.LinearNoBias(e, name+".C", d, heads, bound)
	qd, ks := b.Gather(q, in.Dst), b.Gather(k, in.Src)
	dot := b.Apply(name+" scores", func() (*gorgonia.Node, error) { return ops.HeadDot(qd, ks, heads) })
	s := b.Scale(b.Add(dot, ce), 1/float64(d))
	a := b.SegmentSoftmax(s, in.Dst, in.B.Nodes)
	vs := b.Gather(v, in.Src)
	msg := b.Apply(name+" weighting", func() (*gorgonia.Node, error) { return ops.HeadScale(vs, a) })
	return b.ScatterAdd(msg, in.Dst, in.B.Nodes)
}

// ffn is Linear(d→2d) → ReLU → Linear(2d→d).
func ffn(b *nn.Builder, name string, x *gorgonia.Node, d int) *gorgonia.Node {
	return b.Linear(b.Relu(b.Linear(x, name+".0", d, 2*d)), name+".1", 2*d, d)
}
