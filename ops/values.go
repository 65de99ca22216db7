package ops

import (
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Scalar returns the float value of a scalar node.
func Scalar(n *gorgonia.Node) float64 {
	switch v := n.Value().Data().(type) {
	case float64:
		return v
	case float32:
		return float64(v)
	}
	return 0
}

// Values copies a float tensor's values as float64.
func Values(v gorgonia.Value) []float64 {
	d, ok := v.(*tensor.Dense)
	if !ok {
		return nil
	}
	switch d.Dtype() {
	case tensor.Float64:
		return append([]float64(nil), d.Float64s()...)
	case tensor.Float32:
		out := make([]float64, d.Shape().TotalSize())
		for i, x := range d.Float32s() {
			out[i] = float64(x)
		}
		return out
	}
	return nil
}
