package nn

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Adam is PyTorch's Adam without weight decay (docs/protocol.md §"Optimiser"): with
// bias-corrected moments m̂ = m/(1−β₁ᵗ), v̂ = v/(1−β₂ᵗ), each parameter moves by −lr·m̂/(√v̂ + ε).
type Adam struct {
	LR, Beta1, Beta2, Eps float64
	step                  int
	m, v                  map[string][]float64
}

// NewAdam returns Adam with lr and the paper's β₁ = 0.9, β₂ = 0.999, ε = 1e-8.
func NewAdam(lr float64) *Adam {
	return &Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, m: map[string][]float64{}, v: map[string][]float64{}}
}

// Step applies one update to p.T[names[i]] with gradient grads[i], for every i.
func (a *Adam) Step(p *Params, names []string, grads []gorgonia.Value) error {
	if len(names) != len(grads) {
		return fmt.Errorf("adam: %d names for %d gradients", len(names), len(grads))
	}
	a.step++
	c1 := 1 - math.Pow(a.Beta1, float64(a.step))
	c2 := 1 - math.Pow(a.Beta2, float64(a.step))
	for i, name := range names {
		t, ok := p.T[name]
		if !ok {
			return fmt.Errorf("adam: no parameter %q", name)
		}
		g, ok := grads[i].(*tensor.Dense)
		if !ok || g.Dtype() != t.Dtype() || g.Shape().TotalSize() != t.Shape().TotalSize() {
			return fmt.Errorf("adam: gradient of %q is %v, want %v %v", name, grads[i], t.Dtype(), t.Shape())
		}
		n := t.Shape().TotalSize()
		m, v := a.m[name], a.v[name]
		if m == nil {
			m, v = make([]float64, n), make([]float64, n)
			a.m[name], a.v[name] = m, v
		}
		switch t.Dtype() {
		case tensor.Float64:
			adamUpdate(a, t.Float64s(), g.Float64s(), m, v, c1, c2)
		default:
			adamUpdate(a, t.Float32s(), g.Float32s(), m, v, c1, c2)
		}
	}
	return nil
}

func adamUpdate[T ~float32 | ~float64](a *Adam, x, g []T, m, v []float64, c1, c2 float64) {
	for i, gi := range g {
		gf := float64(gi)
		m[i] = a.Beta1*m[i] + (1-a.Beta1)*gf
		v[i] = a.Beta2*v[i] + (1-a.Beta2)*gf*gf
		x[i] -= T(a.LR * (m[i] / c1) / (math.Sqrt(v[i]/c2) + a.Eps))
	}
}
