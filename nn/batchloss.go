package nn

import (
	"fmt"
	"slices"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/kern"
	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/tensor"
)

// BatchLoss is the loss a net with holders like in (its loss, element type and classes; the
// bucket does not matter) computes for batch bt, formed on the host from pred, the predictions
// of bt's real rows (graphs, or nodes for node-level tasks; Classes values per row for
// classification) as Eval returns them: the same kernel (kern.MaskedL1, kern.MaskedBCE,
// kern.WeightedCE) and the same targets and weights (TargetWeights) on the
// same values in the same order as the net's loss op, so on the CPU it equals the loss of
// Eval(bt) bit for bit. The net's padding rows add nothing to its sums (weight 0, or no label).
// It reads and changes none of in's holders.
func (in *Inputs) BatchLoss(bt *data.Batch, pred []float64) (float64, error) {
	switch {
	case in.Y != nil:
		cols := in.Y.Shape()[1]
		if len(pred) != bt.NumGraphs*cols {
			return 0, fmt.Errorf("batch loss: %d predictions for %d graphs of %d targets", len(pred), bt.NumGraphs, cols)
		}
		if in.Dtype == tensor.Float64 {
			return pointLoss(in, bt, slices.Clone(pred), cols)
		}
		p := make([]float32, len(pred))
		for i, v := range pred {
			p[i] = float32(v)
		}
		return pointLoss(in, bt, p, cols)
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

// pointLoss is the L1 or BCE loss of predictions p (the batch's real graphs, cols per graph) with
// the targets and weights TargetWeights gives.
func pointLoss[T kern.Float](in *Inputs, bt *data.Batch, p []T, cols int) (float64, error) {
	y, w := make([]T, len(p)), make([]T, len(p))
	if err := TargetWeights(y, w, bt, cols, in.BCE); err != nil {
		return 0, fmt.Errorf("batch loss: %w", err)
	}
	var out [1]T
	if in.BCE {
		kern.MaskedBCE(out[:], p, y, w, len(p))
	} else {
		kern.MaskedL1(out[:], p, y, w, len(p))
	}
	return float64(out[0]), nil
}
