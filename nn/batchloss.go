package nn

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/kern"
	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/tensor"
)

// BatchLoss is the loss a net with holders like in (its loss, element type and classes; the
// bucket does not matter) computes for batch bt, formed on the host from pred, the predictions
// of bt's real rows (graphs, or nodes for node-level tasks; Classes values per row for
// classification) as Eval returns them: the same kernel (kern.MaskedL1, kern.WeightedCE) on the
// same values in the same order as the net's loss op, so on the CPU it equals the loss of
// Eval(bt) bit for bit. The net's padding rows add nothing to its sums (weight 0, or no label).
// It reads and changes none of in's holders.
func (in *Inputs) BatchLoss(bt *data.Batch, pred []float64) (float64, error) {
	switch {
	case in.Y != nil:
		n := bt.NumGraphs
		if bt.YDim != 1 || len(bt.Y) != n {
			return 0, fmt.Errorf("batch loss: batch targets have width %d, want 1", bt.YDim)
		}
		if len(pred) != n {
			return 0, fmt.Errorf("batch loss: %d predictions for %d graphs", len(pred), n)
		}
		if in.Dtype == tensor.Float64 {
			p, y, w := make([]float64, n), make([]float64, n), make([]float64, n)
			for i := range p {
				p[i], y[i], w[i] = pred[i], float64(bt.Y[i]), 1/float64(n)
			}
			var out [1]float64
			kern.MaskedL1(out[:], p, y, w, n)
			return out[0], nil
		}
		p, w := make([]float32, n), make([]float32, n)
		for i := range p {
			p[i], w[i] = float32(pred[i]), 1/float32(n)
		}
		var out [1]float32
		kern.MaskedL1(out[:], p, bt.Y, w, n)
		return float64(out[0]), nil
	case in.Labels != nil:
		labels := bt.Labels
		if in.NodeLevel {
			labels = bt.Union.NodeLabel
			if len(labels) != bt.Union.N {
				return 0, fmt.Errorf("batch loss: the batch has %d node labels for %d nodes", len(labels), bt.Union.N)
			}
		}
		rows, cl := len(labels), in.Classes
		if len(pred) != rows*cl {
			return 0, fmt.Errorf("batch loss: %d predictions for %d rows of %d classes", len(pred), rows, cl)
		}
		for i, y := range labels {
			if int(y) >= cl {
				return 0, fmt.Errorf("batch loss: label %d of row %d outside %d classes", y, i, cl)
			}
		}
		w := make([]float64, rows)
		if in.SBM {
			if err := ops.SBMClassWeights(labels, cl, w); err != nil {
				return 0, fmt.Errorf("batch loss: %w", err)
			}
		} else {
			for i, y := range labels {
				w[i] = float64(btoi(y >= 0))
			}
		}
		if in.Dtype == tensor.Float64 {
			var out [1]float64
			kern.WeightedCE(out[:], pred, labels, w, rows, cl)
			return out[0], nil
		}
		z := make([]float32, len(pred))
		for i, v := range pred {
			z[i] = float32(v)
		}
		var out [1]float32
		kern.WeightedCE(out[:], z, labels, w, rows, cl)
		return float64(out[0]), nil
	}
	return 0, fmt.Errorf("batch loss: the inputs carry neither targets nor labels")
}
