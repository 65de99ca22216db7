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
	also *gorgonia.Node   // a sum folded into the op: also bound to its result
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
		f, _ := n.Op().(*funcOp)
		for it.Next() {
			c := it.Node().(*gorgonia.Node)
			if len(in) > 0 || f == nil || !f.after {
				users[c.ID()]++ // (not counting an input only waited for)
			}
			in = append(in, c)
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
		if n.Op() == nil || len(in) == 0 {
			continue // an input or a constant
		}
		if !live[n.ID()] {
			if f, ok := n.Op().(*funcOp); ok && f.dead != nil {
				f.dead()
			}
			continue
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
	m.fuseBias(users, kept)
	m.foldSums(users, kept)
	m.shareColSums(users)
	return m, nil
}

// foldSums lets an op that can add a summand to its result (funcOp.sumsIn) compute a two-term
// sum step itself when it produces one of the terms for the sum alone and the other term is
// ready before it runs: one pass over the data instead of two.
func (m *machine) foldSums(users map[int64]int, kept map[int64]bool) {
	at := map[int64]int{}
	for i, s := range m.steps {
		at[s.node.ID()] = i
	}
	gone := map[int]bool{}
	var follow [][2]*funcOp // (a, b): a's step must come after b's
	for i := range m.steps {
		s := &m.steps[i]
		if s.op != nil || len(s.in) != 2 {
			continue
		}
		best := -1
		for t, term := range s.in {
			p, ok := at[term.ID()]
			if !ok || gone[p] || users[term.ID()] != 1 || kept[term.ID()] || !term.Shape().Eq(s.node.Shape()) || m.steps[p].also != nil {
				continue
			}
			f, ok := m.steps[p].op.(*funcOp)
			if !ok || !f.sumsIn || f.withSum {
				continue
			}
			if q, ok := at[s.in[1-t].ID()]; ok && q > p {
				continue // the summand is not ready when the op runs
			}
			if f.pair != nil && !m.canRunAfter(f.pair, p, users) {
				continue
			}
			if best < 0 || p > at[s.in[best].ID()] {
				best = t
			}
		}
		if best < 0 {
			continue
		}
		p := &m.steps[at[s.in[best].ID()]]
		f := p.op.(*funcOp)
		f.withSum = true
		p.in = append(p.in, s.in[1-best])
		p.vals = append(p.vals, nil)
		p.also = s.node
		gone[i] = true
		if f.pair != nil {
			follow = append(follow, [2]*funcOp{f.pair, f})
		}
	}
	kept2 := m.steps[:0]
	for i, s := range m.steps {
		if !gone[i] {
			kept2 = append(kept2, s)
		}
	}
	m.steps = kept2
	for _, f := range follow {
		a, b := m.stepOf(f[0]), m.stepOf(f[1])
		if a >= 0 && a < b {
			st := m.steps[a]
			copy(m.steps[a:b], m.steps[a+1:b+1])
			m.steps[b] = st
		}
	}
}

// canRunAfter reports whether op's step comes after step p, or can be moved there because
// nothing in the graph reads its node (its value is an output only), or is not run at all.
func (m *machine) canRunAfter(op *funcOp, p int, users map[int64]int) bool {
	j := m.stepOf(op)
	return j < 0 || j > p || users[m.steps[j].node.ID()] == 0
}

// stepOf returns the index of op's step, or -1.
func (m *machine) stepOf(op *funcOp) int {
	for j := range m.steps {
		if m.steps[j].op == gorgonia.Op(op) {
			return j
		}
	}
	return -1
}

// fuseBias runs each product whose only reader is an AddBias as one step with it (the bias
// added by the product's kernel).
func (m *machine) fuseBias(users map[int64]int, kept map[int64]bool) {
	at := map[int64]int{}
	for i, s := range m.steps {
		at[s.node.ID()] = i
	}
	gone := map[int]bool{}
	for i := range m.steps {
		s := &m.steps[i]
		if f, ok := s.op.(*funcOp); !ok || !f.addsBias || len(s.in) != 2 {
			continue
		}
		x := s.in[0]
		p, ok := at[x.ID()]
		if !ok || users[x.ID()] != 1 || kept[x.ID()] {
			continue
		}
		f, ok := m.steps[p].op.(*funcOp)
		if !ok || f.withBias == nil {
			continue
		}
		s.op = f.withBias()
		s.in = []*gorgonia.Node{m.steps[p].in[0], m.steps[p].in[1], s.in[1]}
		s.vals = make([]gorgonia.Value, 3)
		gone[p] = true
	}
	kept2 := m.steps[:0]
	for i, s := range m.steps {
		if !gone[i] {
			kept2 = append(kept2, s)
		}
	}
	m.steps = kept2
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
		if s.also != nil {
			if err := gorgonia.UnsafeLet(s.also, v); err != nil {
				return err
			}
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

// shareColSums lets a product's gradient pass also compute a ColSum of its output gradient g
// (the gradient of the bias added to the product): the ColSum step then only hands out the
// result, moved after both gradient steps. Only for a ColSum whose result nothing in the graph
// reads (an output), so that it can move.
func (m *machine) shareColSums(users map[int64]int) {
	lins := map[int64]*linGrad{} // g's node → the state of the product it is the gradient of
	for _, s := range m.steps {
		if f, ok := s.op.(*funcOp); ok && f.lin != nil {
			g := s.in[0] // dx's op reads (g, w), dw's (x, g)
			if f == f.lin.ops[1] {
				g = s.in[1]
			}
			lins[g.ID()] = f.lin
		}
	}
	for i := 0; i < len(m.steps); i++ {
		s := m.steps[i]
		f, ok := s.op.(*funcOp)
		if !ok || !f.colSum || users[s.node.ID()] != 0 {
			continue
		}
		st := lins[s.in[0].ID()]
		if st == nil || st.db != nil {
			continue
		}
		last := max(m.stepOf(st.ops[0]), m.stepOf(st.ops[1]))
		if last < 0 {
			continue
		}
		st.db, f.filled = f, true
		if i < last {
			copy(m.steps[i:last], m.steps[i+1:last+1])
			m.steps[last] = s
			i--
		}
	}
}
