package nn

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/gorgonia"
)

// End is how a message-passing layer ends in benchmarking-gnns' models: batch norm, ReLU, the
// residual connection and dropout, each as the config says.
type End struct {
	BatchNorm, Residual bool
	Dropout             float64
}

// LayerEnd is x → [BN] → ReLU → [+ res] → dropout (e: which steps), the batch norm's parameters
// and statistics called bn and the dropout site drop. With batch norm, normalisation, ReLU and
// the residual are one fused op (ops.BatchNormRelu); mask picks the rows the statistics cover.
// res is the layer's input; it is ignored without the residual connection.
func (b *Builder) LayerEnd(e End, x, res *gorgonia.Node, mask *ops.Mask, bn, drop string) *gorgonia.Node {
	return b.Dropout(b.NormAct(e, x, res, mask, bn), drop, e.Dropout)
}

// NormAct is LayerEnd without the dropout: x → [BN] → ReLU → [+ res].
func (b *Builder) NormAct(e End, x, res *gorgonia.Node, mask *ops.Mask, bn string) *gorgonia.Node {
	if !e.Residual {
		res = nil
	}
	if !e.BatchNorm {
		y := b.Relu(x)
		if res != nil {
			y = b.Add(res, y)
		}
		return y
	}
	if b.err != nil {
		return nil
	}
	d := x.Shape()[1]
	gamma, beta := b.Param(bn+".gamma", Const(1), d), b.Param(bn+".beta", Const(0), d)
	return b.Apply(bn, func() (*gorgonia.Node, error) {
		return ops.BatchNormRelu(x, gamma, beta, b.P.BNState(bn, d), mask, res)
	})
}

// LeakyRelu is max(x, slope·x) for 0 ≤ slope ≤ 1, formed as slope·x + (1 − slope)·ReLU(x).
func (b *Builder) LeakyRelu(x *gorgonia.Node, slope float64) *gorgonia.Node {
	return b.Add(b.Scale(x, slope), b.Scale(b.Relu(x), 1-slope))
}

// LayerFunc adds one message-passing layer called name (layer0, layer1, …) on node states h and
// the embedded edge inputs e (nil without edge inputs), reading the batch through in, and
// returns the new node states.
type LayerFunc func(b *Builder, in *Inputs, name string, h, e *gorgonia.Node) *gorgonia.Node

// Stack builds the usual network for bucket bk on parameters p: the shared input layer of io at
// width d, layers layers (each output a checkpoint), the head and, with train, the gradients.
// spec is what the network reads from a batch: io's inputs (io.InputSpec) and the weighted
// indexes or scalers its layers ask for.
func Stack(p *Params, bk Bucket, train bool, io IO, spec InputSpec, d, layers int, layer LayerFunc) (*Net, error) {
	b, in := NewBuilder(p), NewInputs(bk, p.Dtype, spec)
	h, e := b.NodeInput(in, io, d), b.EdgeInput(in, io, d)
	for l := 0; l < layers; l++ {
		h = layer(b, in, fmt.Sprintf("layer%d", l), h, e)
		b.Checkpoint(h)
	}
	pred, loss := b.Head(in, io, h, d)
	return Finish(b, in, pred, loss, train)
}

// CheckEdgeEncodings reports the edge encodings (shortest path, adjacency powers) of a network
// whose edges carry no input: they would have nowhere to enter.
func (io IO) CheckEdgeEncodings() error {
	if (io.SPRows > 0 || io.AdjDim > 0) && !io.HasEdgeInput() {
		return fmt.Errorf("the edge encodings need edge inputs (model.edge_feat)")
	}
	return nil
}

// CheckEdgeInput reports a network whose edges carry no input, for models whose layers read one.
func (io IO) CheckEdgeInput() error {
	if !io.HasEdgeInput() {
		return fmt.Errorf("edges need an input feature (edge vocabulary or float width)")
	}
	return nil
}

// CheckShape reports a depth, width or dropout no model builds: fewer than one layer, a width
// under 4, dropout outside [0, 1). Each model's Validate starts with it.
func CheckShape(layers, hidden int, dropout float64) error {
	switch {
	case layers < 1:
		return fmt.Errorf("layers %d, want at least 1", layers)
	case hidden < 4:
		return fmt.Errorf("hidden %d, want at least 4", hidden)
	case dropout < 0 || dropout >= 1:
		return fmt.Errorf("dropout %g outside [0, 1)", dropout)
	}
	return nil
}

// Model is a model's config as Bind takes it: its checks and its parameter count.
type Model interface {
	Validate() error
	Params() int
}

// Bind is what a model's registry constructor (models.Register) returns for its config c: c's
// first error (Validate), or the BuildFunc that builds c's network with build (BuildOf) and c's
// parameter count.
func Bind[C Model](c C, build func(C, *Params, Bucket, bool) (*Net, error)) (BuildFunc, int, error) {
	f, err := bind(c, build)
	if err != nil {
		return nil, 0, err
	}
	return f, c.Params(), nil
}

// BuildOf returns the BuildFunc of config c: build(c, p, b, train) for a bucket b with no empty
// dimension, or c's first error (Validate, checked once here). A model's Build assumes both.
func BuildOf[C Model](c C, build func(C, *Params, Bucket, bool) (*Net, error)) BuildFunc {
	f, _ := bind(c, build)
	return f
}

// bind checks c once and returns its BuildFunc (which returns c's error if there is one) and
// that error.
func bind[C Model](c C, build func(C, *Params, Bucket, bool) (*Net, error)) (BuildFunc, error) {
	invalid := c.Validate()
	return func(p *Params, b Bucket, train bool) (*Net, error) {
		if invalid != nil {
			return nil, invalid
		}
		if b.Nodes < 1 || b.Edges < 1 || b.Graphs < 1 {
			return nil, fmt.Errorf("bucket %v has an empty dimension", b)
		}
		return build(c, p, b, train)
	}, invalid
}

// Check returns the first of errs that is not nil, under the name of the model whose config's
// checks they are (a model's Validate).
func Check(model string, errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("%s: %w", model, err)
		}
	}
	return nil
}

// CheckHeads reports a head count that does not divide the width into heads of at least one
// feature.
func CheckHeads(hidden, heads int) error {
	if heads < 1 || hidden%heads != 0 {
		return fmt.Errorf("hidden %d, heads %d: want at least one head and hidden a multiple of heads", hidden, heads)
	}
	return nil
}
