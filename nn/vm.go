package nn

import (
	"fmt"
	"reflect"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// machine runs a graph's ops in topological order, binding each result to its node. It does
// what gorgonia's TapeMachine does for these graphs, plus one thing the tape cannot: the
// chains of element-wise additions gorgonia.Grad builds to sum the gradient contributions of
// a node with several consumers (a + b, then + c, …, each a pass and, in gorgonia, a serial
// loop) run as one sum step with a reused output and the vectorised, parallel add loops.
type machine struct {
	steps []step
}

type step struct {
	node *gorgonia.Node
	op   gorgonia.Op      // nil for a sum step
	in   []*gorgonia.Node // the op's inputs, or the sum's terms
	vals []gorgonia.Value
	ds   []*tensor.Dense // a sum step's terms
	out  buffer          // a sum step's result
}

// newMachine compiles g. Nodes in keep (the outputs) are never folded into a sum. Nodes for which
// prunable is true are left out unless an output depends on them (gorgonia.Grad builds the
// gradients of every input of an op, also of inputs that are not parameters).
func newMachine(g *gorgonia.ExprGraph, keep gorgonia.Nodes, prunable func(*gorgonia.Node) bool) (*machine, error) {
	sorted, err := gorgonia.Sort(g)
	if err != nil {
		return nil, err
	}
	kept := map[int64]bool{}
	for _, n := range keep {
		if n != nil {
			kept[n.ID()] = true
		}
	}
	users := map[int64]int{}
	inputs := map[int64][]*gorgonia.Node{}
	for _, n := range sorted {
		it := g.From(n.ID())
		var in []*gorgonia.Node
		for it.Next() {
			c := it.Node().(*gorgonia.Node)
			in = append(in, c)
			users[c.ID()]++
		}
		inputs[n.ID()] = in
	}
	live := map[int64]bool{}
	for _, n := range sorted { // consumers before their inputs
		if kept[n.ID()] || live[n.ID()] || prunable == nil || !prunable(n) {
			live[n.ID()] = true
			for _, c := range inputs[n.ID()] {
				live[c.ID()] = true
			}
		}
	}
	m := &machine{}
	folded := map[int64]bool{}
	for i := len(sorted) - 1; i >= 0; i-- {
		n := sorted[i]
		in := inputs[n.ID()]
		if n.Op() == nil || len(in) == 0 || !live[n.ID()] {
			continue // an input, a constant, or nothing depends on it
		}
		if !isSum(n, in) {
			m.steps = append(m.steps, step{node: n, op: n.Op(), in: in, vals: make([]gorgonia.Value, len(in))})
			continue
		}
		if users[n.ID()] == 1 && !kept[n.ID()] && parentIsSum(g, n, inputs) {
			folded[n.ID()] = true // its consumer adds its terms instead
			continue
		}
		var terms []*gorgonia.Node
		var expand func(in []*gorgonia.Node)
		expand = func(in []*gorgonia.Node) {
			for _, t := range in {
				if folded[t.ID()] {
					expand(inputs[t.ID()])
					continue
				}
				terms = append(terms, t)
			}
		}
		expand(in)
		m.steps = append(m.steps, step{node: n, in: terms, vals: make([]gorgonia.Value, len(terms)), ds: make([]*tensor.Dense, len(terms))})
	}
	return m, nil
}

// isSum reports whether n is gorgonia's element-wise a + b of two float matrices of n's shape.
func isSum(n *gorgonia.Node, in []*gorgonia.Node) bool {
	op := n.Op()
	if len(in) != 2 || reflect.TypeOf(op).Name() != "elemBinOp" || op.String() != "+ false" {
		return false
	}
	dt := n.Dtype()
	for _, c := range in {
		if !c.Shape().Eq(n.Shape()) || c.Dtype() != dt || c.IsScalar() {
			return false
		}
	}
	return dt == tensor.Float32 || dt == tensor.Float64
}

// parentIsSum reports whether n's one consumer is a sum step too (so n can be folded into it).
func parentIsSum(g *gorgonia.ExprGraph, n *gorgonia.Node, inputs map[int64][]*gorgonia.Node) bool {
	it := g.To(n.ID())
	for it.Next() {
		p := it.Node().(*gorgonia.Node)
		if p.Op() == nil || !isSum(p, inputs[p.ID()]) {
			return false
		}
	}
	return true
}

// run executes every step.
func (m *machine) run() error {
	for i := range m.steps {
		s := &m.steps[i]
		for j, c := range s.in {
			s.vals[j] = c.Value()
		}
		var v gorgonia.Value
		var err error
		if s.op != nil {
			v, err = s.op.Do(s.vals...)
		} else {
			v, err = s.sum()
		}
		if err != nil {
			return fmt.Errorf("%v: %w", s.node.Op(), err)
		}
		if err := gorgonia.UnsafeLet(s.node, v); err != nil {
			return err
		}
	}
	return nil
}

// sum adds the step's terms into its output buffer, a block at a time so that the partial
// sums stay in cache.
func (s *step) sum() (gorgonia.Value, error) {
	ds := s.ds
	for i, v := range s.vals {
		d, ok := v.(*tensor.Dense)
		if !ok || !d.Shape().Eq(s.node.Shape()) || d.Dtype() != s.node.Dtype() {
			return nil, fmt.Errorf("sum term %d is %v, want %v %v", i, v, s.node.Dtype(), s.node.Shape())
		}
		ds[i] = d
	}
	out := s.out.get(s.node.Dtype(), s.node.Shape()...)
	if out.Dtype() == tensor.Float64 {
		sumInto(out.Float64s(), ds, (*tensor.Dense).Float64s)
	} else {
		sumInto(out.Float32s(), ds, (*tensor.Dense).Float32s)
	}
	return out, nil
}

func sumInto[T Float](out []T, ds []*tensor.Dense, data func(*tensor.Dense) []T) {
	terms := make([][]T, len(ds))
	for i, d := range ds {
		terms[i] = data(d)
	}
	const blk = 2048
	parallelRange((len(out)+blk-1)/blk, blk, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			a, z := b*blk, min((b+1)*blk, len(out))
			add2(out[a:z], terms[0][a:z], terms[1][a:z])
			for _, t := range terms[2:] {
				addTo(out[a:z], t[a:z])
			}
		}
	})
}
