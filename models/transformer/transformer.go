// Package transformer builds the paper's graph Transformer (docs/protocol.md §"Transformer layer")
// as a Gorgonia graph per shape bucket: multi-head attention over each node's in-edges in the
// rewired graph, scores (A_k ĥ_i)ᵀ(B_k ĥ_j) + C_k ê_ij divided by the hidden width d, pre-norm
// batch norm by default.
package transformer

import (
	"fmt"
	"math"

	"github.com/rewiregnn/rewiregnn/config"
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

// Relative-position variants (docs/protocol.md §"Relative-position Transformer").
const (
	RelLearned  = "learned"  // R_ij: a learnable vector per shortest-path value, or W_R·(walk counts)
	RelSinusoid = "sinusoid" // R_ij = W_R·p(path length), p the sinusoids of "Attention is all you need"
)

// Config is the network's shape.
type Config struct {
	Layers, Hidden, Heads int
	nn.IO
	Norm    string  // PreBN, PostBN, PreLN or PostLN
	Dropout float64 // on the attention and FFN outputs (0 in the paper)
	// Relative adds Transformer-XL's relative-position terms to the scores: "" (off), RelLearned
	// or RelSinusoid (shortest-path table encoding only).
	Relative string
	// ScoreScale is what the scores are divided by: "" the width d, as the paper writes it, or
	// ScaleHead √(d/H), the head width's root of scaled dot-product attention
	// (docs/protocol.md §"Transformer layer").
	ScoreScale string
	// FFNActivation is the feed-forward blocks' activation: "" ReLU (the paper's) or ActGelu,
	// GELU in its tanh form (model.ffn_activation).
	FFNActivation string
}

// ActGelu makes the feed-forward blocks use GELU (tanh form) instead of ReLU.
const ActGelu = "gelu"

// ScaleHead divides the attention scores by √(d/H) instead of the paper's d (model.score_scale).
const ScaleHead = "head"

// scoreDivisor is the number the scores are divided by.
func (c Config) scoreDivisor() float64 {
	if c.ScoreScale == ScaleHead {
		return math.Sqrt(float64(c.Hidden / c.Heads))
	}
	return float64(c.Hidden)
}

// ZINC is the Transformer's default shape (L = 4, d = 48, 6 heads, pre-BN; docs/protocol.md
// §"Transformer configuration") on ZINC's inputs: 107,857 parameters. The committed ZINC
// configs use L = 10, d = 30 instead (configs/defaults/override/zinc-transformer.yaml).
func ZINC() Config {
	return Config{Layers: 4, Hidden: 48, Heads: 6, IO: nn.IO{NodeVocab: 28, EdgeVocab: 4, Readout: nn.ReadoutMean, Loss: nn.LossL1, Out: 1}, Norm: PreBN}
}

// Validate reports the first setting that cannot build a network.
func (c Config) Validate() error {
	return nn.Check("transformer", nn.CheckShape(c.Layers, c.Hidden, c.Dropout), nn.CheckHeads(c.Hidden, c.Heads), c.CheckEdgeInput(),
		c.checkOwn(), c.IO.Validate())
}

// checkOwn reports the first of the Transformer's own settings that cannot build a network.
func (c Config) checkOwn() error {
	switch {
	case c.Norm != PreBN && c.Norm != PostBN && c.Norm != PreLN && c.Norm != PostLN:
		return fmt.Errorf("norm %q, want %s, %s, %s or %s", c.Norm, PreBN, PostBN, PreLN, PostLN)
	case c.Relative != "" && c.Relative != RelLearned && c.Relative != RelSinusoid:
		return fmt.Errorf("relative %q, want %s or %s", c.Relative, RelLearned, RelSinusoid)
	case c.Relative != "" && c.SPRows == 0 && c.AdjDim == 0:
		return fmt.Errorf("relative positions need the shortest-path table or the adjacency encoding")
	case c.Relative != "" && c.SPLinear:
		return fmt.Errorf("relative positions index the path length: they need the shortest-path table, not its linear encoder")
	case c.Relative == RelSinusoid && c.SPRows == 0:
		return fmt.Errorf("sinusoid relative positions need the shortest-path table encoding")
	case c.ScoreScale != "" && c.ScoreScale != ScaleHead:
		return fmt.Errorf("score scale %q, want \"\" (the width d) or %s (√(d/H))", c.ScoreScale, ScaleHead)
	case c.FFNActivation != "" && c.FFNActivation != ActGelu:
		return fmt.Errorf("feed-forward activation %q, want \"\" (ReLU) or %s", c.FFNActivation, ActGelu)
	}
	return nil
}

// Inputs says which batch inputs the network reads.
func (c Config) Inputs() nn.InputSpec { return c.InputSpec() }

// Params is the trainable-parameter count: per layer 11d² + (H+12)d (docs/protocol.md
// §"Transformer layer"), plus the input layer and the head.
func (c Config) Params() int {
	d := c.Hidden
	return c.Layers*(11*d*d+(c.Heads+12)*d+c.relParams()) + c.NodeParams(d) + c.EdgeParams(d) + c.HeadParams(d)
}

// relParams are the relative-position parameters of a layer: u and v (2d) and W_R·R: a table of
// SPRows vectors, or W_R of d×d (sinusoids) or AdjDim×d (walk counts).
func (c Config) relParams() int {
	d := c.Hidden
	switch {
	case c.Relative == "":
		return 0
	case c.Relative == RelSinusoid:
		return 2*d + d*d
	case c.SPRows > 0:
		return 2*d + c.SPRows*d
	}
	return 2*d + c.AdjDim*d
}

// norms maps the config's norm names (model.norm) to the Norm constants.
var norms = map[string]string{"pre_bn": PreBN, "post_bn": PostBN, "pre_ln": PreLN, "post_ln": PostLN}

// New is the model's constructor for the registry (models.Register): the network a config's
// model section describes on io (own keys: heads, norm, relative, score_scale, ffn_activation).
func New(m config.Model, io nn.IO) (nn.BuildFunc, int, error) {
	norm, ok := norms[m.Str("norm")]
	if !ok {
		return nil, 0, fmt.Errorf("model.norm %q, want pre_bn, post_bn, pre_ln or post_ln", m.Str("norm"))
	}
	return nn.Bind(Config{Layers: m.Layers, Hidden: m.Hidden, Heads: m.Int("heads"), IO: io, Norm: norm, Dropout: m.Dropout, Relative: m.Str("relative"),
		ScoreScale: m.Str("score_scale"), FFNActivation: m.Str("ffn_activation")}, Build)
}

// Build adds the network for bucket b to a new graph on parameters p (with gradients if train).
func Build(cfg Config, p *nn.Params, b nn.Bucket, train bool) (*nn.Net, error) {
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

// layer is one Transformer layer. Pre-BN (docs/protocol.md §"Transformer layer"):
//
//	ĥ = BN_h1(h), ê = BN_e(e)
//	ĥĥ = attention(ĥ, ê) + h,  h' = FFN_h(BN_h2(ĥĥ)) + ĥĥ,  e' = FFN_e(ê) + e
//
// Post-BN: ĥĥ = BN_h1(attention(h, e) + h), h' = BN_h2(FFN_h(ĥĥ) + ĥĥ), e' = BN_e(FFN_e(e) + e).
// The LN variants put LayerNorm where these put BN (same parameter count).
func layer(b *nn.Builder, in *nn.Inputs, c Config, name string, h, e *gorgonia.Node) (*gorgonia.Node, *gorgonia.Node) {
	bn := func(x *gorgonia.Node, which string, mask *ops.Mask) *gorgonia.Node {
		if c.Norm == PreLN || c.Norm == PostLN {
			return b.LayerNorm(x, name+"."+which, mask)
		}
		return b.BatchNorm(x, name+"."+which, mask)
	}
	drop := func(x *gorgonia.Node, which string) *gorgonia.Node { return b.Dropout(x, name+"."+which, c.Dropout) }
	if c.Norm == PostBN || c.Norm == PostLN {
		hh := bn(b.Add(drop(attention(b, in, c, name, h, e), "drop_att"), h), "bn_h1", in.NodeMask)
		h2 := bn(b.Add(drop(ffn(b, c, name+".ffn_h", hh), "drop_h"), hh), "bn_h2", in.NodeMask)
		e2 := bn(b.Add(drop(ffn(b, c, name+".ffn_e", e), "drop_e"), e), "bn_e", in.EdgeMask)
		return h2, e2
	}
	hn, en := bn(h, "bn_h1", in.NodeMask), bn(e, "bn_e", in.EdgeMask)
	hh := b.Add(drop(attention(b, in, c, name, hn, en), "drop_att"), h)
	h2 := b.Add(drop(ffn(b, c, name+".ffn_h", bn(hh, "bn_h2", in.NodeMask)), "drop_h"), hh)
	e2 := b.Add(drop(ffn(b, c, name+".ffn_e", en), "drop_e"), e)
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
	a := b.SegmentSoftmax(scores(b, in, c, name, q, k, ce), in.Dst, in.B.Nodes)
	vs := b.Gather(v, in.Src)
	msg := b.Apply(name+" weighting", func() (*gorgonia.Node, error) { return ops.HeadScale(vs, a) })
	return b.ScatterAdd(msg, in.Dst, in.B.Nodes)
}

// scores are the attention scores s_ijk, one column per head, of every edge j→i:
//
//	plain:    ((A_k h_i)ᵀ(B_k h_j) + C_k e_ij) / d
//	relative: ((q_i + u)ᵀ k_j + (q_i + v)ᵀ r_ij + C_k e_ij) / d,  q = A h, k = B h, r_ij = W_R R_ij
//
// (divided by √(d/H) instead of d with ScoreScale ScaleHead)
//
// per head k on its slice of the d columns; the relative form is Transformer-XL's four terms
// q·k + q·r + u·k + v·r with u, v learnable per layer. q = A h and k = B h are node rows, ce = C e
// edge rows (one column per head).
func scores(b *nn.Builder, in *nn.Inputs, c Config, name string, q, k, ce *gorgonia.Node) *gorgonia.Node {
	d, heads := c.Hidden, c.Heads
	bound := nn.Uniform(nn.LinearBound(d))
	ks := b.Gather(k, in.Src)
	headDot := func(x, y *gorgonia.Node, what string) *gorgonia.Node {
		return b.Apply(name+" "+what, func() (*gorgonia.Node, error) { return ops.HeadDot(x, y, heads) })
	}
	if c.Relative == "" {
		return b.Scale(b.Add(headDot(b.Gather(q, in.Dst), ks, "scores"), ce), 1/c.scoreDivisor())
	}
	qu := b.AddBias(q, b.Param(name+".u", bound, d))
	qv := b.AddBias(q, b.Param(name+".v", bound, d))
	content := headDot(b.Gather(qu, in.Dst), ks, "content scores")
	position := headDot(b.Gather(qv, in.Dst), relative(b, in, c, name), "position scores")
	return b.Scale(b.Add(b.Add(content, position), ce), 1/c.scoreDivisor())
}

// relative is r_ij = W_R R_ij of every edge: a learnable row per shortest-path value (learned,
// short), W_R applied to the walk counts (learned, adj), or W_R applied to the sinusoids of the
// path length (sinusoid).
func relative(b *nn.Builder, in *nn.Inputs, c Config, name string) *gorgonia.Node {
	d := c.Hidden
	switch {
	case c.Relative == RelSinusoid:
		table := b.Const("sp_sinusoid", c.SPRows, d, func(k, col int) float64 { return Sinusoid(k, col, d) })
		return b.LinearNoBias(b.Lookup(table, in.SP, "sinusoid of the path length"), name+".R", d, d, nn.Uniform(nn.LinearBound(d)))
	case c.SPRows > 0:
		return b.Embedding(in.SP, name+".R", c.SPRows, d)
	}
	return b.LinearNoBias(b.Input("adj", in.Adj), name+".R", c.AdjDim, d, nn.Uniform(nn.LinearBound(c.AdjDim)))
}

// Sinusoid is the position encoding of "Attention is all you need" as the paper writes it:
// p(k, 2l) = sin(k / 10000^{2l/d}), p(k, 2l+1) = cos(k / 10000^{(2l+1)/d}).
func Sinusoid(k, col, d int) float64 {
	x := float64(k) / math.Pow(10000, float64(col)/float64(d))
	if col%2 == 0 {
		return math.Sin(x)
	}
	return math.Cos(x)
}

// ffn is Linear(d→2d) → ReLU (or GELU: c.FFNActivation) → Linear(2d→d).
func ffn(b *nn.Builder, c Config, name string, x *gorgonia.Node) *gorgonia.Node {
	d := c.Hidden
	act := b.Relu
	if c.FFNActivation == ActGelu {
		act = b.Gelu
	}
	return b.Linear(act(b.Linear(x, name+".0", d, 2*d)), name+".1", 2*d, d)
}
