package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/tensor"
)

// Params holds a model's trainable tensors and batch-norm statistics by name. One Params is
// shared by every compiled graph (shape bucket) of a model, so an optimiser step updates all of
// them at once. Tensors are created, and initialised, the first time a name is asked for.
type Params struct {
	Dtype tensor.Dtype
	Names []string // creation order
	T     map[string]*tensor.Dense
	BN    map[string]*ops.BNState
	Drop  map[string]*ops.DropState
	Step  uint64 // training steps taken; dropout masks depend on it
	rng   *rand.Rand
}

// NewParams returns an empty parameter set of float32 or float64 tensors whose initial values
// are drawn from a generator seeded with seed.
func NewParams(dt tensor.Dtype, seed uint64) (*Params, error) {
	if dt != tensor.Float32 && dt != tensor.Float64 {
		return nil, fmt.Errorf("params: element type %v, want float32 or float64", dt)
	}
	return &Params{Dtype: dt, T: map[string]*tensor.Dense{}, BN: map[string]*ops.BNState{}, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}, nil
}

// Init fills a new parameter's values.
type Init func(rng *rand.Rand, xs []float64)

// Uniform draws from U(−a, a).
func Uniform(a float64) Init {
	return func(rng *rand.Rand, xs []float64) {
		for i := range xs {
			xs[i] = (2*rng.Float64() - 1) * a
		}
	}
}

// Normal draws from N(mean, std²).
func Normal(mean, std float64) Init {
	return func(rng *rand.Rand, xs []float64) {
		for i := range xs {
			xs[i] = mean + std*rng.NormFloat64()
		}
	}
}

// Const sets every value to c.
func Const(c float64) Init {
	return func(_ *rand.Rand, xs []float64) {
		for i := range xs {
			xs[i] = c
		}
	}
}

// Get returns the tensor called name, creating it with shape and init if it does not exist.
// An existing tensor of another shape is an error.
func (p *Params) Get(name string, init Init, shape ...int) (*tensor.Dense, error) {
	if t, ok := p.T[name]; ok {
		if !t.Shape().Eq(tensor.Shape(shape)) {
			return nil, fmt.Errorf("params: %q has shape %v, asked for %v", name, t.Shape(), shape)
		}
		return t, nil
	}
	n := 1
	for _, s := range shape {
		if s <= 0 {
			return nil, fmt.Errorf("params: %q: shape %v has a non-positive size", name, shape)
		}
		n *= s
	}
	xs := make([]float64, n)
	init(p.rng, xs)
	var t *tensor.Dense
	if p.Dtype == tensor.Float64 {
		t = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(xs))
	} else {
		ys := make([]float32, n)
		for i, v := range xs {
			ys[i] = float32(v)
		}
		t = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(ys))
	}
	p.T[name] = t
	p.Names = append(p.Names, name)
	return t, nil
}

// BNState returns the batch-norm statistics called name, creating them for d features.
func (p *Params) BNState(name string, d int) *ops.BNState {
	if s, ok := p.BN[name]; ok {
		return s
	}
	s := ops.NewBNState(name, d)
	p.BN[name] = s
	return s
}

// SetTraining switches every batch norm between training and evaluation statistics.
func (p *Params) SetTraining(on bool) {
	for _, s := range p.BN {
		s.Training = on
	}
	for _, s := range p.Drop {
		s.Training = on
	}
}

// Count is the number of trainable values.
func (p *Params) Count() int {
	n := 0
	for _, t := range p.T {
		n += t.Shape().TotalSize()
	}
	return n
}

// LinearBound is the PyTorch default init bound 1/√fanIn of Linear weights and biases.
func LinearBound(fanIn int) float64 { return 1 / math.Sqrt(float64(fanIn)) }
