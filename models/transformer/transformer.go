// Package transformer builds the paper's graph Transformer (REFERENCE §4.1) as a Gorgonia graph
// per shape bucket: multi-head attention over each node's in-edges in the rewired graph, scores
// (A_k ĥ_i)ᵀ(B_k ĥ_j) + C_k ê_ij divided by the hidden width d, pre-norm batch norm by default.
package transformer

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/nn"
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
	NodeVocab, EdgeVocab  int
	SPRows, AdjDim, LapQ  int    // encodings (0: off)
	Readout               string // "mean" or "cls"
	Out                   int
	Norm                  string // PreBN, PostBN, PreLN or PostLN
}

// ZINC is the 100K ZINC configuration of REFERENCE §4.2: L = 4, d = 48, 6 heads, pre-BN.
func ZINC() Config {
	return Config{Layers: 4, Hidden: 48, Heads: 6, NodeVocab: 28, EdgeVocab: 4, Readout: "mean", Out: 1, Norm: PreBN}
}

// Validate reports the first setting that cannot build a network.
func (c Config) Validate() error {
	switch {
	case c.Layers < 1 || c.Hidden < 4 || c.Heads < 1:
		return fmt.Errorf("transformer: layers %d, hidden %d, heads %d: all must be positive (hidden ≥ 4)", c.Layers, c.Hidden, c.Heads)
	case c.Hidden%c.Heads != 0:
		return fmt.Errorf("transformer: hidden %d is not divisible by %d heads", c.Hidden, c.Heads)
	case c.NodeVocab < 1 || c.EdgeVocab < 1:
		return fmt.Errorf("transformer: node/edge vocabulary %d/%d, want at least 1", c.NodeVocab, c.EdgeVocab)
	case c.SPRows < 0 || c.AdjDim < 0 || c.LapQ < 0:
		return fmt.Errorf("transformer: negative encoding width (sp %d, adj %d, lap %d)", c.SPRows, c.AdjDim, c.LapQ)
	case c.Readout != "mean" && c.Readout != "cls":
		return fmt.Errorf("transformer: readout %q, want mean or cls", c.Readout)
	case c.Norm != PreBN && c.Norm != PostBN && c.Norm != PreLN && c.Norm != PostLN:
		return fmt.Errorf("transformer: norm %q, want %s, %s, %s or %s", c.Norm, PreBN, PostBN, PreLN, PostLN)
	case c.Out < 1:
		return fmt.Errorf("transformer: output width %d", c.Out)
	}
	return nil
}

// Inputs says which batch inputs the network reads.
func (c Config) Inputs() nn.InputSpec {
	return nn.InputSpec{SP: c.SPRows > 0, CLS: c.Readout == "cls", AdjDim: c.AdjDim, LapQ: c.LapQ}
}

// Params is the trainable-parameter count: per layer 11d² + (H+12)d (§4.1), plus embeddings,
// encoders and the head.
func (c Config) Params() int {
	d := c.Hidden
	p := c.Layers*(11*d*d+(c.Heads+12)*d) + c.NodeVocab*d + c.EdgeVocab*d + c.SPRows*d
	if c.AdjDim > 0 {
		p += (c.AdjDim + 1) * d
	}
	if c.LapQ > 0 {
		p += (c.LapQ + 1) * d
	}
	h1, h2 := d/2, d/4
	return p + d*h1 + h1 + h1*h2 + h2 + h2*c.Out + c.Out
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
	h := bd.Embedding(in.NodeCat, "node_emb", cfg.NodeVocab, d)
	if cfg.LapQ > 0 {
		h = bd.Add(h, bd.Linear(bd.Input("lap", in.Lap), "lap_pe", cfg.LapQ, d))
	}
	e := bd.Embedding(in.EdgeCat, "edge_emb", cfg.EdgeVocab, d)
	if cfg.SPRows > 0 {
		e = bd.Add(e, bd.Embedding(in.SP, "sp_pe", cfg.SPRows, d))
	}
	if cfg.AdjDim > 0 {
		e = bd.Add(e, bd.Linear(bd.Input("adj", in.Adj), "adj_pe", cfg.AdjDim, d))
	}
	for l := 0; l < cfg.Layers; l++ {
		h, e = layer(bd, in, cfg, fmt.Sprintf("layer%d", l), h, e)
	}
	pred := bd.MLPReadout(bd.Readout(in, cfg.Readout, h), "readout", d, cfg.Out)
	net, err := nn.Finish(bd, in, pred, bd.L1(pred, in), train)
	if err != nil {
		return nil, fmt.Errorf("transformer: bucket %v: %w", b, err)
	}
	return net, nil
}

// Builder returns the BuildFunc of cfg for a trainer.
func Builder(cfg Config) nn.BuildFunc {
	return func(p *nn.Params, b nn.Bucket, train bool) (*nn.Net, error) { return Build(cfg, p, b, train) }
}

// layer is one Transformer layer. Pre-BN (§4.1):
//
//	ĥ = BN_h1(h), ê = BN_e(e)
//	ĥĥ = attention(ĥ, ê) + h,  h' = FFN_h(BN_h2(ĥĥ)) + ĥĥ,  e' = FFN_e(ê) + e
//
// Post-BN: ĥĥ = BN_h1(attention(h, e) + h), h' = BN_h2(FFN_h(ĥĥ) + ĥĥ), e' = BN_e(FFN_e(e) + e).
// The LN variants put LayerNorm where these put BN (same parameter count).
func layer(b *nn.Builder, in *nn.Inputs, c Config, name string, h, e *gorgonia.Node) (*gorgonia.Node, *gorgonia.Node) {
	d := c.Hidden
	bn := func(x *gorgonia.Node, which string, mask *nn.Mask) *gorgonia.Node {
		if c.Norm == PreLN || c.Norm == PostLN {
			return b.LayerNorm(x, name+"."+which, mask)
		}
		return b.BatchNorm(x, name+"."+which, mask)
	}
	if c.Norm == PostBN || c.Norm == PostLN {
		hh := bn(b.Add(attention(b, in, c, name, h, e), h), "bn_h1", in.NodeMask)
		h2 := bn(b.Add(ffn(b, name+".ffn_h", hh, d), hh), "bn_h2", in.NodeMask)
		e2 := bn(b.Add(ffn(b, name+".ffn_e", e, d), e), "bn_e", in.EdgeMask)
		return h2, e2
	}
	hn, en := bn(h, "bn_h1", in.NodeMask), bn(e, "bn_e", in.EdgeMask)
	hh := b.Add(attention(b, in, c, name, hn, en), h)
	h2 := b.Add(ffn(b, name+".ffn_h", bn(hh, "bn_h2", in.NodeMask), d), hh)
	e2 := b.Add(ffn(b, name+".ffn_e", en, d), e)
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
	dot := b.Apply(name+" scores", func() (*gorgonia.Node, error) { return nn.HeadDot(qd, ks, heads) })
	s := b.Scale(b.Add(dot, ce), 1/float64(d))
	a := b.SegmentSoftmax(s, in.Dst, in.B.Nodes)
	vs := b.Gather(v, in.Src)
	msg := b.Apply(name+" weighting", func() (*gorgonia.Node, error) { return nn.HeadScale(vs, a) })
	return b.ScatterAdd(msg, in.Dst, in.B.Nodes)
}

// ffn is Linear(d→2d) → ReLU → Linear(2d→d).
func ffn(b *nn.Builder, name string, x *gorgonia.Node, d int) *gorgonia.Node {
	return b.Linear(b.Relu(b.Linear(x, name+".0", d, 2*d)), name+".1", 2*d, d)
}
