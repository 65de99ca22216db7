package cpuexec

import (
	"fmt"
	"math"

	"github.com/rewiregnn/rewiregnn/kern"
	"github.com/rewiregnn/rewiregnn/prog"
)

// CompileProgram compiles program p for the CPU (compile.go's passes), fed by host, and plans
// its activations: every value a step writes lives from that step to its last reader (the
// host's outputs to the end of the run), and values whose lifetimes do not overlap share a
// buffer (prog.AssignSlots).
//
// With recompute, the forward pass keeps only the checkpoints (Program.Checkpoints) and what
// crosses between layers, and the backward pass recomputes the rest (compile.go's recompute).
func CompileProgram(p *prog.Program, host Host, recompute bool) (*Runner, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	dt, err := dtypeOf(p)
	if err != nil {
		return nil, err
	}
	need := p.Needed()
	c := newCompiler(p, need)
	c.makeSteps(need)
	c.fuseBias()
	c.foldSums()
	c.shareColSums()
	c.pairProducts()
	if err := c.joinMembers(); err != nil {
		return nil, err
	}
	if recompute {
		if err := c.recompute(); err != nil {
			return nil, err
		}
	}
	r := &Runner{P: p, steps: c.steps, host: host, dtype: dt, data: make([]any, len(p.Vals)), groups: make([]any, p.Groups),
		scratch: &kern.Scratch{}, bounds: p.IndexBounds(need)}
	if err := r.plan(); err != nil {
		return nil, err
	}
	return r, nil
}

// dtypeOf returns the element type of the program's computed values (one for all).
func dtypeOf(p *prog.Program) (prog.Dtype, error) {
	dt := p.Vals[p.Loss].Dtype
	for v := range p.Vals {
		if p.Vals[v].Dtype != dt {
			return 0, fmt.Errorf("cpu: %s is %v, the loss %v: one element type per program", p.Describe(v), p.Vals[v].Dtype, dt)
		}
	}
	return dt, nil
}

// inPlace lists the inputs of step st whose buffer its result may take over (prog.Spec.InPlace);
// none for a step given a summand.
func inPlace(st *Step) []int {
	if st.Summand >= 0 {
		return nil
	}
	return st.Kind.Spec().InPlace
}

// plan sets the lifetimes of the values the steps write and lays them out.
func (r *Runner) plan() error {
	p := r.P
	end := len(r.steps)
	r.planned = make([]int, len(p.Vals))
	for v := range r.planned {
		r.planned[v] = -1
	}
	r.lives = r.lives[:0]
	use := func(v, at int) {
		if k := r.planned[v]; k >= 0 && at > r.lives[k].Last {
			r.lives[k].Last = at
		}
	}
	write := func(v, at int, replay bool) error {
		if r.planned[v] >= 0 && !replay {
			return fmt.Errorf("cpu: %s is written by two steps", p.Describe(v))
		}
		cl := 0
		if p.Vals[v].Dtype == prog.Float64 {
			cl = 1
		}
		r.planned[v] = len(r.lives)
		r.lives = append(r.lives, prog.Life{Size: int64(p.Vals[v].Elems()), Class: cl, Def: at, Last: at})
		r.vals = append(r.vals, v)
		return nil
	}
	for i := range r.steps {
		st := &r.steps[i]
		for _, v := range st.reads() {
			if p.Vals[v].Kind == prog.Computed && r.planned[v] < 0 {
				return fmt.Errorf("cpu: %s reads %s, which no step before it computes", p.Describe(st.out()), p.Describe(v))
			}
			use(v, i)
		}
		st.vers = st.vers[:0]
		for _, o := range append(append([]int(nil), st.Outs...), st.ColSum) {
			if o < 0 {
				st.vers = append(st.vers, -1)
				continue
			}
			if err := write(o, i, st.Replay); err != nil {
				return err
			}
			st.vers = append(st.vers, r.planned[o])
		}
		if k := r.planned[st.out()]; k >= 0 {
			for _, j := range inPlace(st) {
				if j < len(st.Ins[0]) && r.planned[st.Ins[0][j]] >= 0 {
					r.lives[k].Reuse = append(r.lives[k].Reuse, r.planned[st.Ins[0][j]])
				}
			}
		}
	}
	for _, v := range p.Outputs() {
		if p.Vals[v].Kind == prog.Computed && r.planned[v] < 0 {
			return fmt.Errorf("cpu: output %s is computed by no step", p.Describe(v))
		}
		use(v, end)
	}
	return r.lay()
}

// lay assigns the slots (each planned value its own with SetShared(false)) and lists the values
// whose last reader each step is (for SetPoison; not those another value took over in place:
// their slot holds the new value).
func (r *Runner) lay() error {
	end := len(r.steps)
	lives := r.lives
	if r.unshare {
		lives = make([]prog.Life, len(r.lives))
		for i, l := range r.lives {
			l.Def, l.Last, l.Reuse = 0, end, nil
			lives[i] = l
		}
	}
	l, err := prog.AssignSlots(lives, end)
	if err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	r.layout, r.slots = l, nil
	r.dies = make([][]int, end)
	if r.unshare {
		return nil
	}
	taken := map[int]bool{}
	for _, t := range l.Took {
		if t >= 0 {
			taken[t] = true
		}
	}
	for k, life := range r.lives {
		if life.Last < end && !taken[k] {
			r.dies[life.Last] = append(r.dies[life.Last], k)
		}
	}
	return nil
}

// alloc allocates the slots and points every planned value at its slot.
func (r *Runner) alloc() {
	if r.arena != nil {
		r.slots, r.gen = cutSlots(r.arena, r.layout), r.arena.gen
	} else {
		r.slots = make([]any, len(r.layout.Slots))
		for i, sl := range r.layout.Slots {
			if sl.Class == 1 {
				r.slots[i] = make([]float64, sl.Size)
			} else {
				r.slots[i] = make([]float32, sl.Size)
			}
		}
	}
	r.views = make([]any, len(r.vals))
	for k, v := range r.vals {
		n := r.P.Vals[v].Elems()
		switch s := r.slots[r.layout.Of[k]].(type) {
		case []float32:
			r.views[k] = s[:n:n]
		case []float64:
			r.views[k] = s[:n:n]
		}
	}
}

// bind points the parameters, inputs and constants at their contents for this run.
func (r *Runner) bind() error {
	p := r.P
	for v := range p.Vals {
		val := &p.Vals[v]
		var d any
		switch val.Kind {
		case prog.Computed:
			continue
		case prog.Param:
			d = r.host.Param(val.Name)
		case prog.Input:
			d = r.host.Input(v)
		case prog.Const:
			if val.Dtype == prog.Float64 {
				d = val.F64
			} else {
				d = val.F32
			}
		}
		n := -1
		switch x := d.(type) {
		case []float32:
			if val.Dtype == prog.Float32 {
				n = len(x)
			}
		case []float64:
			if val.Dtype == prog.Float64 {
				n = len(x)
			}
		}
		if n != val.Elems() {
			return fmt.Errorf("cpu: %s: the host gives %T of %d elements, want %v of %d", p.Describe(v), d, n, val.Dtype, val.Elems())
		}
		r.data[v] = d
	}
	return nil
}

// Run runs one step of the program: the host's current parameters and inputs in, the outputs
// (Value) out.
func (r *Runner) Run() error {
	if r.slots == nil || (r.arena != nil && r.gen != r.arena.gen) {
		r.alloc()
	}
	if err := r.bind(); err != nil {
		return err
	}
	if r.dtype == prog.Float64 {
		return run(r, table64)
	}
	return run(r, table32)
}

// Value returns value v's contents after a run ([]float32 or []float64, a scalar as one
// element): the loss, the prediction and the gradients stay valid until the next run.
func (r *Runner) Value(v int) any { return r.data[v] }

// Steps returns the compiled steps, in the order they run.
func (r *Runner) Steps() []Step { return r.steps }

// SetShared, false, gives every planned value a buffer of its own (as if no two were ever
// dead at once): the reference the shared layout is tested against. Call it before the first
// Run.
func (r *Runner) SetShared(shared bool) error {
	r.unshare = !shared
	return r.lay()
}

// SetPoison, true, fills a value's buffer with NaN once its last reader has run, so that a
// kernel reading a value after its lifetime shows in the results. For tests.
func (r *Runner) SetPoison(on bool) { r.poison = on }

// poisonAfter fills the buffers of the planned values whose last reader is step i with NaN.
func (r *Runner) poisonAfter(i int) {
	for _, k := range r.dies[i] {
		switch d := r.views[k].(type) {
		case []float32:
			for j := range d {
				d[j] = float32(math.NaN())
			}
		case []float64:
			for j := range d {
				d[j] = math.NaN()
			}
		}
	}
}

// PlanBytes returns the bytes of the runner's activation slots (the planned values at their
// peak, as laid out) and, for comparison, what the same values would take with a buffer each.
func (r *Runner) PlanBytes() (slots, unshared int64) {
	for _, sl := range r.layout.Slots {
		slots += sl.Size * elemBytes(sl.Class)
	}
	for _, l := range r.lives {
		unshared += l.Size * elemBytes(l.Class)
	}
	return slots, unshared
}
