package nn

import (
	"fmt"
	"strings"

	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Builder adds layers to one Gorgonia graph. It remembers the first error, after which every
// method returns nil; check Err once the graph is built.
type Builder struct {
	G      *gorgonia.ExprGraph
	P      *Params
	Learn  gorgonia.Nodes // parameter nodes in creation order
	byName map[string]*gorgonia.Node
	err    error
	// checkpoints are the layer outputs the model declared (Checkpoint).
	checkpoints gorgonia.Nodes
}

// Checkpoint declares nodes as a layer's outputs: with activation recomputation
// (Net.SetRecompute) the forward pass keeps them and recomputes everything between them.
func (b *Builder) Checkpoint(nodes ...*gorgonia.Node) {
	for _, n := range nodes {
		if n != nil {
			b.checkpoints = append(b.checkpoints, n)
		}
	}
}

// NewBuilder starts a graph whose parameters live in p.
func NewBuilder(p *Params) *Builder {
	return &Builder{G: gorgonia.NewGraph(), P: p, byName: map[string]*gorgonia.Node{}}
}

// Err is the first error met while building.
func (b *Builder) Err() error { return b.err }

// Fail records err (with context) unless an error is already recorded.
func (b *Builder) Fail(err error, context string) {
	if err != nil && b.err == nil {
		b.err = fmt.Errorf("%s: %w", context, err)
	}
}

func (b *Builder) ok(n *gorgonia.Node, err error, what string) *gorgonia.Node {
	if err != nil {
		b.Fail(err, what)
		return nil
	}
	return n
}

// Param returns the node of the parameter called name, bound to the shared tensor.
func (b *Builder) Param(name string, init Init, shape ...int) *gorgonia.Node {
	if b.err != nil {
		return nil
	}
	if n, ok := b.byName[name]; ok {
		return n
	}
	t, err := b.P.Get(name, init, shape...)
	if err != nil {
		b.Fail(err, name)
		return nil
	}
	var n *gorgonia.Node
	if len(shape) == 1 {
		n = gorgonia.NewVector(b.G, b.P.Dtype, gorgonia.WithShape(shape...), gorgonia.WithValue(t), gorgonia.WithName(name))
	} else {
		n = gorgonia.NewMatrix(b.G, b.P.Dtype, gorgonia.WithShape(shape...), gorgonia.WithValue(t), gorgonia.WithName(name))
	}
	b.byName[name] = n
	b.Learn = append(b.Learn, n)
	return n
}

// Input returns a matrix node bound to t, whose values the caller refills per batch; asked again
// for the same name and tensor it returns the same node.
func (b *Builder) Input(name string, t *tensor.Dense) *gorgonia.Node {
	if b.err != nil {
		return nil
	}
	key := "input:" + name
	if n, ok := b.byName[key]; ok && n.Value() == gorgonia.Value(t) {
		return n
	}
	n := gorgonia.NewMatrix(b.G, t.Dtype(), gorgonia.WithShape(t.Shape()...), gorgonia.WithValue(t), gorgonia.WithName(name))
	b.byName[key] = n
	return n
}

// inputNodes returns the ids of the nodes Input made.
func (b *Builder) inputNodes() map[int64]bool {
	out := map[int64]bool{}
	for key, n := range b.byName {
		if strings.HasPrefix(key, "input:") {
			out[n.ID()] = true
		}
	}
	return out
}

// Const returns a constant matrix node (no gradient, never refilled) holding rows×cols values
// from fill(row, col), in the parameters' element type; asked again for name it returns the
// same node.
func (b *Builder) Const(name string, rows, cols int, fill func(r, c int) float64) *gorgonia.Node {
	if b.err != nil {
		return nil
	}
	key := "const:" + name
	if n, ok := b.byName[key]; ok {
		return n
	}
	var t *tensor.Dense
	if b.P.Dtype == tensor.Float64 {
		v := make([]float64, rows*cols)
		for i := range v {
			v[i] = fill(i/cols, i%cols)
		}
		t = tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(v))
	} else {
		v := make([]float32, rows*cols)
		for i := range v {
			v[i] = float32(fill(i/cols, i%cols))
		}
		t = tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(v))
	}
	n := gorgonia.NewConstant(t, gorgonia.In(b.G), gorgonia.WithName(name))
	b.byName[key] = n
	return n
}

// Lookup is the rows of a table node (a parameter or a constant) picked by ids.
func (b *Builder) Lookup(table *gorgonia.Node, ids *ops.Index, what string) *gorgonia.Node {
	return b.Apply(what, func() (*gorgonia.Node, error) { return ops.Embed(table, ids) })
}

// Linear is x·W + β with W [in, out] and β [out], both U(−1/√in, 1/√in) (PyTorch default).
func (b *Builder) Linear(x *gorgonia.Node, name string, in, out int) *gorgonia.Node {
	y := b.LinearNoBias(x, name, in, out, Uniform(LinearBound(in)))
	bias := b.Param(name+".b", Uniform(LinearBound(in)), out)
	return b.AddBias(y, bias)
}

// LinearNoBias is x·W with W [in, out] drawn by init.
func (b *Builder) LinearNoBias(x *gorgonia.Node, name string, in, out int, init Init) *gorgonia.Node {
	w := b.Param(name+".W", init, in, out)
	if b.err != nil {
		return nil
	}
	if x.Dims() != 2 || x.Shape()[1] != in {
		b.Fail(fmt.Errorf("input shape %v, want [rows, %d]", x.Shape(), in), name)
		return nil
	}
	y, err := ops.MatMul(x, w)
	return b.ok(y, err, name)
}

// Embedding looks ids up in a table of rows×d drawn from N(0, 1).
func (b *Builder) Embedding(ids *ops.Index, name string, rows, d int) *gorgonia.Node {
	t := b.Param(name+".W", Normal(0, 1), rows, d)
	return b.Apply(name, func() (*gorgonia.Node, error) { return ops.Embed(t, ids) })
}

// BatchNorm is a masked BatchNorm1d with γ = 1, β = 0 at start.
func (b *Builder) BatchNorm(x *gorgonia.Node, name string, mask *ops.Mask) *gorgonia.Node {
	if b.err != nil {
		return nil
	}
	d := x.Shape()[1]
	g, be := b.normAffine(name, d)
	return b.Apply(name, func() (*gorgonia.Node, error) { return ops.BatchNorm(x, g, be, b.P.BNState(name, d), mask) })
}

// MLPReadout is bgnn's MLPReadout: d → ⌊d/2⌋ → ⌊d/4⌋ → out with ReLU between
// (docs/protocol.md §"MLP readout").
func (b *Builder) MLPReadout(x *gorgonia.Node, name string, d, out int) *gorgonia.Node {
	h := b.Relu(b.Linear(x, name+".0", d, d/2))
	h = b.Relu(b.Linear(h, name+".1", d/2, d/4))
	return b.Linear(h, name+".2", d/4, out)
}

// AddBias adds β to every row of x.
func (b *Builder) AddBias(x, beta *gorgonia.Node) *gorgonia.Node {
	return b.Apply("add bias", func() (*gorgonia.Node, error) { return ops.AddBias(x, beta) })
}

// Gather, ScatterAdd and the element-wise helpers below wrap the ops with the sticky error (Apply).

func (b *Builder) Gather(x *gorgonia.Node, ix *ops.Index) *gorgonia.Node {
	return b.Apply("gather", func() (*gorgonia.Node, error) { return ops.Gather(x, ix) })
}

func (b *Builder) ScatterAdd(x *gorgonia.Node, ix *ops.Index, rows int) *gorgonia.Node {
	return b.Apply("scatter-add", func() (*gorgonia.Node, error) { return ops.ScatterAdd(x, ix, rows) })
}

// Message passing. A layer reads like its formula: Propagate(h, in) is Σ_{u→v} h_u, for every
// node v the sum of the rows of its in-neighbours (the edges Src → Dst of the batch); Sources
// and PropagateEdges split it for messages that depend on the edge: m_uv = f(h_u, e_uv) per edge,
// then Σ_{u→v} m_uv per node. They are the ops Gather and ScatterAdd over in.Src and in.Dst;
// padding edges (index -1) send nothing and padding nodes receive nothing.

// Propagate is Σ_{u→v} x_u for every node v: x [nodes, d] → [nodes, d].
func (b *Builder) Propagate(x *gorgonia.Node, in *Inputs) *gorgonia.Node {
	return b.PropagateEdges(b.Sources(x, in), in)
}

// Sources is x_u for every edge u → v: x [nodes, d] → [edges, d].
func (b *Builder) Sources(x *gorgonia.Node, in *Inputs) *gorgonia.Node { return b.Gather(x, in.Src) }

// Targets is x_v for every edge u → v: x [nodes, d] → [edges, d].
func (b *Builder) Targets(x *gorgonia.Node, in *Inputs) *gorgonia.Node { return b.Gather(x, in.Dst) }

// PropagateEdges is Σ_{u→v} m_uv for every node v: per-edge messages m [edges, d] → [nodes, d].
func (b *Builder) PropagateEdges(m *gorgonia.Node, in *Inputs) *gorgonia.Node {
	return b.ScatterAdd(m, in.Dst, in.B.Nodes)
}

// SegmentMax is the column-wise max of x's rows per destination: x [edges, d] → [nodes, d],
// 0 for a node no edge reaches (ops.SegmentMax).
func (b *Builder) SegmentMax(x *gorgonia.Node, dst *ops.Index, rows int) *gorgonia.Node {
	return b.Apply("segment max", func() (*gorgonia.Node, error) { return ops.SegmentMax(x, dst, rows) })
}

func (b *Builder) SegmentSoftmax(x *gorgonia.Node, dst *ops.Index, rows int) *gorgonia.Node {
	return b.Apply("segment softmax", func() (*gorgonia.Node, error) { return ops.SegmentSoftmax(x, dst, rows) })
}

func (b *Builder) Add(x, y *gorgonia.Node) *gorgonia.Node { return b.bin(ops.Add, x, y, "add") }

// Sub is x − y, formed as x + (−1)·y (the same bits: negation is exact), because Gorgonia
// differentiates its own subtraction with a negation op the executors do not run.
func (b *Builder) Sub(x, y *gorgonia.Node) *gorgonia.Node { return b.Add(x, b.Scale(y, -1)) }
func (b *Builder) Mul(x, y *gorgonia.Node) *gorgonia.Node {
	return b.bin(gorgonia.HadamardProd, x, y, "mul")
}
func (b *Builder) Div(x, y *gorgonia.Node) *gorgonia.Node {
	return b.bin(gorgonia.HadamardDiv, x, y, "div")
}

// MatMul is the matrix product x·y (ops.MatMul).
func (b *Builder) MatMul(x, y *gorgonia.Node) *gorgonia.Node {
	return b.bin(ops.MatMul, x, y, "matmul")
}

// HeadScale multiplies the k-th column block of every row of x by w's column k (ops.HeadScale).
func (b *Builder) HeadScale(x, w *gorgonia.Node) *gorgonia.Node {
	return b.bin(ops.HeadScale, x, w, "head scale")
}
func (b *Builder) Relu(x *gorgonia.Node) *gorgonia.Node { return b.un(ops.Relu, x, "relu") }

// Gelu is GELU in its tanh form (ops.Gelu).
func (b *Builder) Gelu(x *gorgonia.Node) *gorgonia.Node { return b.un(ops.Gelu, x, "gelu") }
func (b *Builder) Sigmoid(x *gorgonia.Node) *gorgonia.Node {
	return b.un(gorgonia.Sigmoid, x, "sigmoid")
}
func (b *Builder) Abs(x *gorgonia.Node) *gorgonia.Node  { return b.un(gorgonia.Abs, x, "abs") }
func (b *Builder) Exp(x *gorgonia.Node) *gorgonia.Node  { return b.un(gorgonia.Exp, x, "exp") }
func (b *Builder) Tanh(x *gorgonia.Node) *gorgonia.Node { return b.un(gorgonia.Tanh, x, "tanh") }

// Sqrt is the element-wise square root (gorgonia.Sqrt: NaN below zero). Its gradient is
// Gorgonia's, gradY ÷ (2 ⊙ y), which is not finite where y = 0: keep the argument away from zero
// (PNA's std is sqrt(relu(E[x²] − E[x]²) + ε)).
func (b *Builder) Sqrt(x *gorgonia.Node) *gorgonia.Node { return b.un(gorgonia.Sqrt, x, "sqrt") }

// AddConst adds the scalar c to every entry of x.
func (b *Builder) AddConst(x *gorgonia.Node, c float64) *gorgonia.Node {
	return b.withConst(gorgonia.Add, x, c, "add constant")
}

// withConst applies f to x and the scalar c as a constant of x's element type.
func (b *Builder) withConst(f func(x, y *gorgonia.Node) (*gorgonia.Node, error), x *gorgonia.Node, c float64, what string) *gorgonia.Node {
	if b.err != nil {
		return nil
	}
	k := gorgonia.NewConstant(c)
	if x.Dtype() == tensor.Float32 {
		k = gorgonia.NewConstant(float32(c))
	}
	return b.bin(f, x, k, what)
}

func (b *Builder) bin(f func(x, y *gorgonia.Node) (*gorgonia.Node, error), x, y *gorgonia.Node, what string) *gorgonia.Node {
	return b.Apply(what, func() (*gorgonia.Node, error) { return f(x, y) })
}

func (b *Builder) un(f func(x *gorgonia.Node) (*gorgonia.Node, error), x *gorgonia.Node, what string) *gorgonia.Node {
	return b.Apply(what, func() (*gorgonia.Node, error) { return f(x) })
}

// L1 is the mean absolute error over the real graphs' targets of a prediction [Graphs, T]:
// Σ w |pred − y| with w = 1/(B·T) on the entries of the B real graphs and 0 on padding
// (Inputs.Load).
func (b *Builder) L1(pred *gorgonia.Node, in *Inputs) *gorgonia.Node {
	return b.pointLoss("L1 loss", ops.MaskedL1, pred, in)
}

// BCE is the binary cross-entropy with logits of a prediction [Graphs, C] against the real
// graphs' labels, averaged over the labelled entries: Σ w·ℓ(pred, y) with w = 1/(labelled
// entries) on them and 0 on padding and missing labels (Inputs.Load).
func (b *Builder) BCE(pred *gorgonia.Node, in *Inputs) *gorgonia.Node {
	return b.pointLoss("BCE loss", ops.MaskedBCE, pred, in)
}

// pointLoss applies an element-wise loss op to pred and the batch's targets and loss weights.
func (b *Builder) pointLoss(what string, f func(pred, y, w *gorgonia.Node) (*gorgonia.Node, error), pred *gorgonia.Node, in *Inputs) *gorgonia.Node {
	y := b.Input("y", in.Y)
	w := b.Input("graph_w", in.GraphW)
	return b.Apply(what, func() (*gorgonia.Node, error) { return f(pred, y, w) })
}

// Apply runs an op constructor with the sticky error; what names it in errors.
func (b *Builder) Apply(what string, f func() (*gorgonia.Node, error)) *gorgonia.Node {
	if b.err != nil {
		return nil
	}
	y, err := f()
	return b.ok(y, err, what)
}

// normAffine is a norm's per-feature scale and shift, γ = 1 and β = 0 at start.
func (b *Builder) normAffine(name string, d int) (gamma, beta *gorgonia.Node) {
	return b.Param(name+".gamma", Const(1), d), b.Param(name+".beta", Const(0), d)
}

// Scale multiplies every entry of x by c.
func (b *Builder) Scale(x *gorgonia.Node, c float64) *gorgonia.Node {
	return b.withConst(gorgonia.Mul, x, c, "scale")
}

// LayerNorm is a masked LayerNorm over the features of each row, γ = 1, β = 0 at start.
func (b *Builder) LayerNorm(x *gorgonia.Node, name string, mask *ops.Mask) *gorgonia.Node {
	if b.err != nil {
		return nil
	}
	d := x.Shape()[1]
	g, be := b.normAffine(name, d)
	return b.Apply(name, func() (*gorgonia.Node, error) { return ops.LayerNorm(x, g, be, mask) })
}
