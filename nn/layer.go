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
