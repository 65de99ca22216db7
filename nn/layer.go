package nn

import (
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
