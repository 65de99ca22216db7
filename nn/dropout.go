package nn

import (
	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/gorgonia"
)

// Dropout adds dropout with rate to x under the site name; a rate of 0 adds nothing.
func (b *Builder) Dropout(x *gorgonia.Node, name string, rate float64) *gorgonia.Node {
	if b.err != nil || rate == 0 {
		return x
	}
	st := b.P.DropState(name, rate)
	return b.Apply("dropout "+name, func() (*gorgonia.Node, error) { return ops.Dropout(x, st) })
}

// DropState returns the dropout site called name, creating it with rate and a seed drawn from
// the parameters' generator.
func (p *Params) DropState(name string, rate float64) *ops.DropState {
	if s, ok := p.Drop[name]; ok {
		return s
	}
	if p.Drop == nil {
		p.Drop = map[string]*ops.DropState{}
	}
	s := ops.NewDropState(name, rate, p.rng.Uint64(), &p.Step)
	p.Drop[name] = s
	return s
}
