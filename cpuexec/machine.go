package cpuexec

import (
	"fmt"
	"github.com/rewiregnn/rewiregnn/prog"

	"github.com/rewiregnn/rewiregnn/kern"
	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Machine runs a graph's ops in topological order, binding each result to its node. It does
// what gorgonia's TapeMachine does for these graphs, plus one thing the tape cannot: the
// chains of element-wise additions gorgonia.Grad builds to sum the gradient contributions of
// a node with several consumers (a + b, then + c, …, each a pass and, in gorgonia, a serial
// loop) run as one sum step with a reused output and the vectorised, parallel add loops.
//
// What it decides about a node (a summand folded into an op, a product's bias or column sums
// computed in a shared pass, a gradient no output needs) lives in its steps; the ops are not
// changed.
type Machine struct {
	steps []step
	// The activation plan (slots.go): every value a step writes into a buffer the machine
	// provides (a project op's result, a sum, a product gradient's pair result) is one of vals;
	// values whose lifetimes do not overlap share a slot. Slots are allocated on the first run.
	vals    []value
	lives   []prog.Life
	layout  prog.Layout
	slots   []any // []float32 or []float64 per slot, once allocated
	dies    [][]int
	unshare bool         // every value its own slot (SetShared)
	poison  bool         // fill a value's slot with NaN after its last reader (SetPoison)
	scratch kern.Scratch // shared by the product gradients' passes (RunOpts.Scratch)
	arena   *Arena       // where the slots are cut from (nil: the machine's own)
	gen     int          // the arena's generation the slots were cut at
}

// value is one planned value: the node it is bound to and the view of its slot (no node: an
// op's aux buffer, given to it as its slot).
type value struct {
	node *gorgonia.Node
	view *tensor.Dense
}

type step struct {
	node *gorgonia.Node
	op   gorgonia.Op      // nil for a sum step
	in   []*gorgonia.Node // the op's inputs, or the sum's terms
	also *gorgonia.Node   // a sum folded into the op: also bound to its result
	vals []gorgonia.Value
	ds   []*tensor.Dense // a sum step's terms
	out  ops.Buffer      // a sum step's result
	// summand: the op (an ops.Func that SumsIn) is given a summand as its last input.
	summand bool
	// plan is passed to an ops.Func (nil: none).
	plan *ops.RunOpts
	// filled is the value another step's pass writes: the step binds it and runs no op.
	filled *tensor.Dense
	// val is the planned value the step writes (-1: the op's own buffer); pair, for a product
	// gradient whose pass also computes its pair's result, that result's value (-1: none).
	val, pair int
	aux       []int // the planned values of the op's aux buffers (ops.Func.Aux)
	replay    bool  // a forward step run again for the backward pass (recompute.go)
}

// GraphStep describes one step of a compiled Machine, for tests and diagnostics.
type GraphStep struct {
	Node    *gorgonia.Node
	Op      gorgonia.Op      // nil for a sum step
	In      []*gorgonia.Node // the op's inputs (a summand last), or the sum's terms
	Summand bool             // the op adds a sum's other term to its result
	Filled  bool             // another step's pass computes the result (a ColSum)
}

// Steps lists the steps in the order they run.
func (m *Machine) Steps() []GraphStep {
	out := make([]GraphStep, len(m.steps))
	for i, s := range m.steps {
		out[i] = GraphStep{Node: s.node, Op: s.op, In: s.in, Summand: s.summand, Filled: s.filled != nil}
	}
	return out
}

// Compile compiles g. Nodes in sums (from Grad) run as sum steps; nodes in keep (the outputs)
// are never folded into a sum. Nodes for which prunable is true are left out unless an output
// depends on them (gorgonia.Grad builds the gradients of every input of an op, also of inputs
// that are not parameters).
//
// With rc, the forward pass keeps only rc's checkpoints and the backward pass recomputes the
// rest (recompute.go).
func Compile(g *gorgonia.ExprGraph, keep gorgonia.Nodes, sums map[int64]bool, prunable func(*gorgonia.Node) bool, rc *Recompute) (*Machine, error) {
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
		f, _ := n.Op().(*ops.Func)
		for it.Next() {
			c := it.Node().(*gorgonia.Node)
			if len(in) > 0 || f == nil || !f.OrderOnly() {
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
	isSum := func(n *gorgonia.Node) bool { return sums[n.ID()] && len(inputs[n.ID()]) == 2 }
	m := &Machine{}
	folded := map[int64]bool{}
	nodeOf := map[*ops.Func]*gorgonia.Node{}
	for i := len(sorted) - 1; i >= 0; i-- {
		n := sorted[i]
		in := inputs[n.ID()]
		if n.Op() == nil || len(in) == 0 {
			continue // an input or a constant
		}
		if f, ok := n.Op().(*ops.Func); ok {
			nodeOf[f] = n
		}
		if !live[n.ID()] {
			continue
		}
		if !isSum(n) {
			m.steps = append(m.steps, step{node: n, op: n.Op(), in: in, vals: make([]gorgonia.Value, len(in))})
			continue
		}
		if users[n.ID()] == 1 && !kept[n.ID()] && parentIsSum(g, n, isSum) {
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
	// A product's gradient op whose pair no output needs computes its own result only.
	for i := range m.steps {
		s := &m.steps[i]
		if f, ok := s.op.(*ops.Func); ok {
			if _, ok := f.ProductGrad(); ok {
				if p := nodeOf[f.Pair()]; p == nil || !live[p.ID()] {
					s.plan = &ops.RunOpts{Alone: true}
				}
			}
		}
	}
	m.fuseBias(users, kept)
	m.foldSums(users, kept)
	m.shareColSums(users)
	if rc != nil {
		if err := m.recompute(rc, kept); err != nil {
			return nil, err
		}
	}
	if err := m.planValues(kept); err != nil {
		return nil, err
	}
	return m, nil
}

// foldSums lets an op that can add a summand to its result (ops.Func.SumsIn) compute a
// two-term sum step itself when it produces one of the terms for the sum alone and the other
// term is ready before it runs: one pass over the data instead of two.
func (m *Machine) foldSums(users map[int64]int, kept map[int64]bool) {
	at := map[int64]int{}
	for i, s := range m.steps {
		at[s.node.ID()] = i
	}
	gone := map[int]bool{}
	var follow [][2]*ops.Func // (a, b): a's step must come after b's
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
			f, ok := m.steps[p].op.(*ops.Func)
			if !ok || !f.SumsIn() || m.steps[p].summand {
				continue
			}
			if q, ok := at[s.in[1-t].ID()]; ok && q > p {
				continue // the summand is not ready when the op runs
			}
			if f.Pair() != nil && !m.canRunAfter(f.Pair(), p, users) {
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
		f := p.op.(*ops.Func)
		p.summand = true
		p.in = append(p.in, s.in[1-best])
		p.vals = append(p.vals, nil)
		p.also = s.node
		gone[i] = true
		if f.Pair() != nil {
			follow = append(follow, [2]*ops.Func{f.Pair(), f})
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
func (m *Machine) canRunAfter(op *ops.Func, p int, users map[int64]int) bool {
	j := m.stepOf(op)
	return j < 0 || j > p || users[m.steps[j].node.ID()] == 0
}

// stepOf returns the index of op's step, or -1.
func (m *Machine) stepOf(op *ops.Func) int {
	for j := range m.steps {
		if m.steps[j].op == gorgonia.Op(op) {
			return j
		}
	}
	return -1
}

// fuseBias runs each product whose only reader is an AddBias as one step with it (the bias
// added by the product's kernel).
func (m *Machine) fuseBias(users map[int64]int, kept map[int64]bool) {
	at := map[int64]int{}
	for i, s := range m.steps {
		at[s.node.ID()] = i
	}
	gone := map[int]bool{}
	for i := range m.steps {
		s := &m.steps[i]
		if f, ok := s.op.(*ops.Func); !ok || !f.AddsBias() || len(s.in) != 2 {
			continue
		}
		x := s.in[0]
		p, ok := at[x.ID()]
		if !ok || users[x.ID()] != 1 || kept[x.ID()] {
			continue
		}
		f, ok := m.steps[p].op.(*ops.Func)
		if !ok {
			continue
		}
		fused := f.WithBias()
		if fused == nil {
			continue
		}
		s.op = fused
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

// parentIsSum reports whether n's consumers are all sum steps (so n can be folded into its one
// consumer).
func parentIsSum(g *gorgonia.ExprGraph, n *gorgonia.Node, isSum func(*gorgonia.Node) bool) bool {
	it := g.To(n.ID())
	for it.Next() {
		p := it.Node().(*gorgonia.Node)
		if p.Op() == nil || !isSum(p) {
			return false
		}
	}
	return true
}

// Run executes every step.
func (m *Machine) Run() error {
	if m.slots == nil || (m.arena != nil && m.gen != m.arena.gen) {
		m.alloc()
	}
	for i := range m.steps {
		s := &m.steps[i]
		for j, c := range s.in {
			s.vals[j] = c.Value()
		}
		var v gorgonia.Value
		var err error
		switch {
		case s.filled != nil:
			v = s.filled
		case s.op == nil:
			v, err = s.sum(m.viewOf(s))
		case s.plan != nil:
			v, err = s.op.(*ops.Func).Run(s.plan, s.vals...)
		default:
			v, err = s.op.Do(s.vals...)
		}
		if err != nil {
			return fmt.Errorf("%v: %w", s.node.Op(), err)
		}
		if err := bind(s, v); err != nil {
			return err
		}
		if m.poison {
			m.poisonAfter(i)
		}
	}
	return nil
}

// viewOf returns the slot view of step s's value, or nil.
func (m *Machine) viewOf(s *step) *tensor.Dense {
	if s.val < 0 {
		return nil
	}
	return m.vals[s.val].view
}

// sum adds the step's terms into out (nil: the step's own buffer), a block at a time so that
// the partial sums stay in cache.
func (s *step) sum(out *tensor.Dense) (gorgonia.Value, error) {
	ds := s.ds
	for i, v := range s.vals {
		d, ok := v.(*tensor.Dense)
		if !ok || !d.Shape().Eq(s.node.Shape()) || d.Dtype() != s.node.Dtype() {
			return nil, fmt.Errorf("sum term %d is %v, want %v %v", i, v, s.node.Dtype(), s.node.Shape())
		}
		ds[i] = d
	}
	if out == nil {
		out = s.out.Get(s.node.Dtype(), s.node.Shape()...)
	}
	if out.Dtype() == tensor.Float64 {
		sumInto(out.Float64s(), ds, (*tensor.Dense).Float64s)
	} else {
		sumInto(out.Float32s(), ds, (*tensor.Dense).Float32s)
	}
	return out, nil
}

func sumInto[T kern.Float](out []T, ds []*tensor.Dense, data func(*tensor.Dense) []T) {
	terms := make([][]T, len(ds))
	for i, d := range ds {
		terms[i] = data(d)
	}
	sumTerms(out, terms)
}

// sumTerms sets out = ((t0 + t1) + t2) + … for n ≥ 2 terms of at least len(out) values, a block
// at a time so that the partial sums stay in cache (the graph machine's sum steps and the
// runner's GradSum).
func sumTerms[T kern.Float](out []T, terms [][]T) {
	const blk = 2048
	kern.ParallelRange((len(out)+blk-1)/blk, blk, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			a, z := b*blk, min((b+1)*blk, len(out))
			kern.Add2(out[a:z], terms[0][a:z], terms[1][a:z])
			for _, t := range terms[2:] {
				kern.AddTo(out[a:z], t[a:z])
			}
		}
	})
}

// shareColSums lets a product's gradient pass also compute a ColSum of its output gradient g
// (the gradient of the bias added to the product): the ColSum step then only binds the
// result, moved after both gradient steps. Only for a ColSum whose result nothing in the graph
// reads (an output), so that it can move.
func (m *Machine) shareColSums(users map[int64]int) {
	type pass struct{ dx, dw *ops.Func } // a product's gradient ops
	lins := map[int64]pass{}             // g's node → the product it is the gradient of
	for _, s := range m.steps {
		if f, ok := s.op.(*ops.Func); ok {
			if which, ok := f.ProductGrad(); ok {
				g, p := s.in[0], pass{f, f.Pair()} // dx's op reads (g, w), dw's (x, g)
				if which == 1 {
					g, p = s.in[1], pass{f.Pair(), f}
				}
				lins[g.ID()] = p
			}
		}
	}
	claimed := map[pass]bool{}
	for i := 0; i < len(m.steps); i++ {
		s := m.steps[i]
		f, ok := s.op.(*ops.Func)
		if !ok || !f.IsColSum() || users[s.node.ID()] != 0 {
			continue
		}
		p, ok := lins[s.in[0].ID()]
		if !ok || claimed[p] {
			continue
		}
		a, b := m.stepOf(p.dx), m.stepOf(p.dw)
		last := max(a, b)
		if last < 0 {
			continue
		}
		claimed[p] = true
		db := tensor.New(tensor.WithShape(s.node.Shape()...), tensor.Of(s.node.Dtype()))
		for _, j := range []int{a, b} {
			if j >= 0 {
				pl := ops.RunOpts{ColSum: db}
				if m.steps[j].plan != nil {
					pl.Alone = m.steps[j].plan.Alone
				}
				m.steps[j].plan = &pl
			}
		}
		s.filled = db
		m.steps[i] = s
		if i < last {
			copy(m.steps[i:last], m.steps[i+1:last+1])
			m.steps[last] = s
			i--
		}
	}
}

// Bytes returns the memory the machine holds once it has run, known from the shapes before
// running: its activation slots (PlanBytes), the scratch its product gradients share, the results of the steps outside the plan (a
// Gorgonia operator allocates a new one per run, counted once; a shared ColSum) and what each
// op of package ops keeps between runs (ops.Func.KeptBytes). Buffers are reused between runs,
// so this is also the executor's share of a training step's peak.
func (m *Machine) Bytes() int64 {
	n, _ := m.PlanBytes()
	n += m.ScratchBytes()
	for _, s := range m.steps {
		if s.replay {
			continue // the op's state and a Gorgonia operator's result are counted at its first run
		}
		elem := int(s.node.Dtype().Size())
		if s.val < 0 {
			n += int64(s.node.Shape().TotalSize()) * int64(elem)
		}
		if f, ok := s.op.(*ops.Func); ok && s.filled == nil {
			shapes := make([]tensor.Shape, len(s.in))
			for i, c := range s.in {
				shapes[i] = c.Shape()
			}
			n += f.KeptBytes(shapes, elem)
		}
	}
	return n
}
