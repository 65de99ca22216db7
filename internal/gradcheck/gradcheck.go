// Package gradcheck checks gradients against central finite differences: Run compares
// gorgonia.Grad of a scalar loss with numerical derivatives, Assert fails a test on a mismatch,
// and RandMatrix makes the random float64 inputs such checks use.
package gradcheck

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Result is the worst disagreement between symbolic and finite-difference gradients.
type Result struct {
	Checked int     // number of entries compared
	MaxAbs  float64 // largest |analytic − numeric|
	MaxRel  float64 // largest |analytic − numeric| / max(|analytic|, |numeric|, 1e-3)
	Worst   string  // where MaxRel occurred
	MaxGrad float64 // largest |analytic| (a check of all-zero gradients proves nothing)
}

// Run compares gorgonia.Grad of the scalar loss with central finite differences (step h)
// for every entry of every node in wrt (float64 tensors bound to values), checking at most
// perNode entries per node, spread evenly. It builds the gradient nodes in g, so call it on a
// graph that is not used for anything else.
func Run(g *gorgonia.ExprGraph, loss *gorgonia.Node, wrt gorgonia.Nodes, h float64, perNode int) (Result, error) {
	var res Result
	grads, err := gorgonia.Grad(loss, wrt...)
	if err != nil {
		return res, fmt.Errorf("grad check: symbolic gradient: %w", err)
	}
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	run := func() (float64, error) {
		vm.Reset()
		if err := vm.RunAll(); err != nil {
			return 0, err
		}
		v, ok := loss.Value().Data().(float64)
		if !ok {
			return 0, fmt.Errorf("loss is %T, want a float64 scalar", loss.Value().Data())
		}
		return v, nil
	}
	if _, err := run(); err != nil {
		return res, fmt.Errorf("grad check: forward: %w", err)
	}
	analytic := make([][]float64, len(wrt))
	for i, gn := range grads {
		d, ok := gn.Value().(*tensor.Dense)
		if !ok || d.Dtype() != tensor.Float64 {
			return res, fmt.Errorf("grad check: gradient of %v is %T, want float64 tensor", wrt[i], gn.Value())
		}
		analytic[i] = append([]float64(nil), d.Float64s()...)
	}
	for i, n := range wrt {
		d, ok := n.Value().(*tensor.Dense)
		if !ok || d.Dtype() != tensor.Float64 {
			return res, fmt.Errorf("grad check: %v holds %T, want float64 tensor", n, n.Value())
		}
		xs := d.Float64s()
		step := max(1, len(xs)/max(perNode, 1))
		for j := 0; j < len(xs); j += step {
			orig := xs[j]
			xs[j] = orig + h
			up, err := run()
			if err != nil {
				return res, fmt.Errorf("grad check: %v[%d]+h: %w", n, j, err)
			}
			xs[j] = orig - h
			down, err := run()
			if err != nil {
				return res, fmt.Errorf("grad check: %v[%d]-h: %w", n, j, err)
			}
			xs[j] = orig
			num := (up - down) / (2 * h)
			a := analytic[i][j]
			res.MaxGrad = max(res.MaxGrad, math.Abs(a))
			diff := math.Abs(a - num)
			rel := diff / max(math.Abs(a), math.Abs(num), 1e-3)
			res.Checked++
			res.MaxAbs = max(res.MaxAbs, diff)
			if rel > res.MaxRel || math.IsNaN(rel) {
				res.MaxRel = rel
				res.Worst = fmt.Sprintf("%s[%d]: analytic %.8g, numeric %.8g", n.Name(), j, a, num)
			}
		}
	}
	if _, err := run(); err != nil {
		return res, fmt.Errorf("grad check: final forward: %w", err)
	}
	return res, nil
}
