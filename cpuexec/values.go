package cpuexec

import (
	"fmt"
	"github.com/rewiregnn/rewiregnn/prog"
	"math"

	"github.com/rewiregnn/rewiregnn/kern"
	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The machine's activation plan: which values it provides buffers for, how long each is live,
// and the slots they share (prog.AssignSlots).

// planned reports whether the machine provides step s's output buffer: a project op's result
// or a sum, not a scalar and not a value another step's pass fills. Gorgonia's own operators
// and the losses keep allocating theirs (small or scalar in every model here).
func planned(s *step) bool {
	if s.filled != nil || len(s.node.Shape()) == 0 || s.node.IsScalar() {
		return false
	}
	if s.op == nil {
		return true
	}
	_, ok := s.op.(*ops.Func)
	return ok
}

// classOf is the slot class of an element type: values of one type only share a slot.
func classOf(dt tensor.Dtype) int {
	if dt == tensor.Float64 {
		return 1
	}
	return 0
}

// planValues records the planned values (steps' results, an op's aux buffers, and the result a
// product gradient's pass computes for its pair's later step), their lifetimes (from the step
// writing them to the last step reading them; outputs in keep until after the run) and lays
// them out. Going through the steps in order, a node's readers read its latest value: a step
// that recomputes a node (Recompute) starts a new value of it.
func (m *Machine) planValues(kept map[int64]bool) error {
	end := len(m.steps)
	cur := map[int64]int{}   // node → its current value
	early := map[int64]int{} // node → its value, written by its pair's earlier pass
	auxOf := map[any][]int{} // forward state → the aux values of its latest forward step
	use := func(v, at int) {
		if at > m.lives[v].Last {
			m.lives[v].Last = at
		}
	}
	add := func(s *step, def int) int {
		n := s.node
		m.vals = append(m.vals, value{node: n})
		m.lives = append(m.lives, prog.Life{Size: int64(n.Shape().TotalSize()), Class: classOf(n.Dtype()), Def: def, Last: def})
		v := len(m.vals) - 1
		cur[n.ID()] = v
		if s.also != nil {
			cur[s.also.ID()] = v
		}
		return v
	}
	for i := range m.steps {
		m.steps[i].val, m.steps[i].pair, m.steps[i].aux = -1, -1, nil
	}
	for i := range m.steps {
		s := &m.steps[i]
		for _, c := range s.in {
			if v, ok := cur[c.ID()]; ok {
				use(v, i)
			}
		}
		f, _ := s.op.(*ops.Func)
		var sizes []int
		if f != nil {
			sizes = f.Aux(shapesOf(s.in))
		}
		if f != nil && f.State() != nil && len(sizes) == 0 {
			for _, v := range auxOf[f.State()] { // a gradient op of the state reads them
				use(v, i)
			}
		}
		if !planned(s) {
			continue
		}
		if v, ok := early[s.node.ID()]; ok {
			delete(early, s.node.ID())
			s.val = v
			use(v, i) // the step binds it
			continue
		}
		s.val = add(s, i)
		m.lives[s.val].Reuse = m.inPlace(s, f, cur)
		if f == nil {
			continue
		}
		if len(sizes) > 0 { // a forward op (or its replay) writes new ones
			for _, size := range sizes {
				m.vals = append(m.vals, value{})
				m.lives = append(m.lives, prog.Life{Size: int64(size), Class: classOf(s.node.Dtype()), Def: i, Last: i})
				s.aux = append(s.aux, len(m.vals)-1)
			}
			auxOf[f.State()] = s.aux
		}
		if _, ok := f.ProductGrad(); ok && (s.plan == nil || !s.plan.Alone) {
			if j := m.stepOf(f.Pair()); j > i && planned(&m.steps[j]) {
				s.pair = add(&m.steps[j], i)
				early[m.steps[j].node.ID()] = s.pair
			}
		}
	}
	for id := range kept {
		if v, ok := cur[id]; ok {
			use(v, end)
		}
	}
	return m.lay()
}

// lay assigns the slots (each value its own with unshare) and lists the values dying at each
// step.
func (m *Machine) lay() error {
	end := len(m.steps)
	lives := m.lives
	if m.unshare {
		lives = make([]prog.Life, len(m.lives))
		for i, l := range m.lives {
			l.Def, l.Last = 0, end
			lives[i] = l
		}
	}
	l, err := prog.AssignSlots(lives, end)
	if err != nil {
		return fmt.Errorf("exec: %w", err)
	}
	m.layout, m.slots = l, nil
	m.dies = make([][]int, end)
	taken := map[int]bool{}
	for _, c := range l.Took {
		if c >= 0 {
			taken[c] = true
		}
	}
	for v, life := range m.lives {
		if life.Last < end && !taken[v] { // (a slot taken over in place holds the new value)
			m.dies[life.Last] = append(m.dies[life.Last], v)
		}
	}
	return nil
}

// inPlace returns the current values of the inputs step s may overwrite: a sum's first two
// terms (its blocks add them first) and an op's InPlace inputs. The planner hands one over
// only where the step is its last reader.
func (m *Machine) inPlace(s *step, f *ops.Func, cur map[int64]int) []int {
	var ks []int
	switch {
	case s.op == nil:
		ks = []int{0, 1}
	case f != nil && !s.summand:
		ks = f.InPlace()
	}
	var out []int
	for _, k := range ks {
		if k < len(s.in) {
			if v, ok := cur[s.in[k].ID()]; ok && m.vals[v].node != nil {
				out = append(out, v)
			}
		}
	}
	return out
}

// SetShared, false, gives every planned value a buffer of its own (as if no two were ever dead
// at once): the reference the shared layout is tested against. Call it before the first Run.
func (m *Machine) SetShared(shared bool) error {
	m.unshare = !shared
	return m.lay()
}

// SetPoison, true, fills a value's buffer with NaN once its last reader has run, so that a
// kernel reading a value after its lifetime (through a reference it kept) shows in the results.
// For tests.
func (m *Machine) SetPoison(on bool) { m.poison = on }

// alloc allocates the slots and binds every planned step to its value's view.
func (m *Machine) alloc() {
	if m.arena != nil {
		m.slots = m.slotsFrom(m.arena)
	} else {
		m.slots = make([]any, len(m.layout.Slots))
		for i, sl := range m.layout.Slots {
			if sl.Class == 1 {
				m.slots[i] = make([]float64, sl.Size)
			} else {
				m.slots[i] = make([]float32, sl.Size)
			}
		}
	}
	scratch := &m.scratch
	if m.arena != nil {
		scratch = &m.arena.scratch
	}
	for v := range m.vals {
		if n := m.vals[v].node; n != nil {
			m.vals[v].view = tensor.New(tensor.WithShape(n.Shape().Clone()...), tensor.WithBacking(m.slots[m.layout.Of[v]]))
		}
	}
	for i := range m.steps {
		s := &m.steps[i]
		if _, ok := s.op.(*ops.Func); !ok || (s.val < 0 && !s.replay) {
			continue
		}
		p := ops.RunOpts{}
		if s.plan != nil {
			p = *s.plan
			p.Aux = nil
		}
		p.Replay = s.replay
		if s.val >= 0 {
			p.Out = m.vals[s.val].view
		}
		if s.pair >= 0 {
			p.PairOut = m.vals[s.pair].view
		}
		if _, ok := s.op.(*ops.Func).ProductGrad(); ok {
			p.Scratch = scratch
		}
		for _, v := range s.aux {
			p.Aux = append(p.Aux, m.slots[m.layout.Of[v]])
		}
		s.plan = &p
	}
}

// poisonAfter fills the slots of the values whose last reader is step i with NaN.
func (m *Machine) poisonAfter(i int) {
	for _, v := range m.dies[i] {
		switch d := m.slots[m.layout.Of[v]].(type) {
		case []float32:
			for k := range d {
				d[k] = float32(math.NaN())
			}
		case []float64:
			for k := range d {
				d[k] = math.NaN()
			}
		}
	}
}

// PlanBytes returns the bytes of the machine's activation slots (the planned values at their
// peak, as laid out) and, for comparison, what the same values would take with a buffer each.
func (m *Machine) PlanBytes() (slots, unshared int64) {
	for _, sl := range m.layout.Slots {
		slots += sl.Size * elemBytes(sl.Class)
	}
	for _, l := range m.lives {
		unshared += l.Size * elemBytes(l.Class)
	}
	return slots, unshared
}

// ScratchBytes is the scratch the machine's product-gradient passes share (RunOpts.Scratch): the
// largest need of each of its buffers. With an arena it is the arena's.
func (m *Machine) ScratchBytes() int64 {
	var need kern.ScratchNeed
	var elem int64 = 4
	for _, s := range m.steps {
		f, ok := s.op.(*ops.Func)
		if !ok {
			continue
		}
		which, ok := f.ProductGrad()
		if !ok {
			continue
		}
		// dx's op reads (g [m, b], w [a, b]); dw's (x [m, a], g [m, b]).
		rows, a, b := s.in[0].Shape()[0], s.in[1].Shape()[0], s.in[0].Shape()[1]
		if which == 1 {
			rows, a, b = s.in[0].Shape()[0], s.in[0].Shape()[1], s.in[1].Shape()[1]
		}
		f32 := s.node.Dtype() == tensor.Float32
		if !f32 {
			elem = 8
		}
		withDX := which == 0 || s.plan == nil || !s.plan.Alone
		need = need.Max(kern.ProductGradNeed(rows, a, b, f32, withDX))
	}
	return elem * need.Values()
}

func elemBytes(class int) int64 {
	if class == 1 {
		return 8
	}
	return 4
}

func shapesOf(ns []*gorgonia.Node) []tensor.Shape {
	out := make([]tensor.Shape, len(ns))
	for i, n := range ns {
		out[i] = n.Shape()
	}
	return out
}

// bind binds v to the node of step s (and to the node of a sum it took over).
func bind(s *step, v gorgonia.Value) error {
	if err := gorgonia.UnsafeLet(s.node, v); err != nil {
		return err
	}
	if s.also != nil {
		return gorgonia.UnsafeLet(s.also, v)
	}
	return nil
}
