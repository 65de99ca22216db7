package cpuexec

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/dispatch"
	"github.com/rewiregnn/rewiregnn/kern"
	"github.com/rewiregnn/rewiregnn/prog"
)

// Step is one kernel call of a Runner: a program node, or the nodes one pass computes together
// (a gradient group's members; a product's two gradients), with what the CPU policies decided
// for it (a summand folded in, a bias fused, a bias gradient shared).
type Step struct {
	Kind prog.Op
	Node prog.Node // attributes, of the step's first node
	// Outs[w] is the value member w writes (Node.Which; a product's gradients: 0 dx, 1 dw),
	// -1 where the step does not compute it. A single node has one member.
	Outs []int
	// Ins[w] are member w's inputs; nil for a member the program does not have. A gradient sum
	// step's Ins[0] are all its terms; a product with a fused bias reads (x, w, b).
	Ins [][]int
	// Summand is a value the kernel adds to member 0's result (a gradient sum the op took
	// over), -1: none. ColSum is a vector a product gradient's pass fills with the column sums
	// of its g (the bias gradient), -1: none.
	Summand, ColSum int
	// Replay: a forward step run again for the backward pass (recomputation).
	Replay bool
	// vers are the planned values (Runner.vals) the step writes, for Outs then ColSum (-1:
	// none): a replay writes a new one.
	vers []int
}

// Runner runs a program on the CPU: its steps in order, each through the dispatch table of
// the program's element type into the CPU's kernels (kernels.go).
type Runner struct {
	P     *prog.Program
	steps []Step
	host  Host
	// data[v] is value v's contents ([]float32 or []float64): a parameter's or an input's as
	// the host gives them, a constant's, or a computed value's view of its slot.
	data    []any
	groups  []any // what each group (prog.Node.Group) keeps between its steps
	scratch *kern.Scratch
	dtype   prog.Dtype
	// The activation plan (runplan.go): the values steps write (vals; planned[v] is value v's
	// index there, -1 for values no step writes), their lifetimes, and the slots they share.
	vals    []int
	planned []int
	lives   []prog.Life
	layout  prog.Layout
	slots   []any
	views   []any     // by planned value: its slot, cut to its size
	unshare bool      // every planned value its own slot (SetShared)
	dies    [][]int   // by step: the planned values it reads last (lay)
	poison  bool      // NaN into a value's slot after its last reader (SetPoison)
	arena   *Arena    // where the slots and the scratch come from (nil: the runner's own)
	gen     int       // the arena's generation the slots were cut at
	acc     []float64 // float64 scratch a kernel uses only while it runs (call.acc)
	// bounds[i] is the bound index input i's entries must stay below (prog.IndexBounds; -1:
	// no step reads it, nil: none checked); index[i] its entries and weights for this run.
	bounds []int
	index  []index
	tmp    any // []T scratch a kernel uses only while it runs (call.tmp)
}

// run runs the steps through the dispatch table of T, with the CPU's kernels (kernels.go).
func run[T kern.Float](r *Runner, t *dispatch.Table[[]T, index, []bool]) error {
	if err := r.loadIndexes(); err != nil {
		return err
	}
	c := &call[T]{r: r}
	for i := range r.steps {
		st := &r.steps[i]
		for _, pv := range st.vers { // the buffers of the values it writes (a replay's are new)
			if pv >= 0 {
				r.data[r.vals[pv]] = r.views[pv]
			}
		}
		c.st = st
		if err := t.Run(c, st.Kind, &st.Node); err != nil {
			return fmt.Errorf("cpu: %s: %w", r.P.Describe(st.Outs[firstOut(st)]), err)
		}
		if r.poison {
			r.poisonAfter(i)
		}
	}
	return nil
}

// loadIndexes reads the batch's index inputs from the host once per run and checks each
// against its bound (prog.IndexInput.Check: every entry in [-1, bound), weights matching the
// entries), as the GPU checks them when it stages a batch; the kernels then use them unchecked.
func (r *Runner) loadIndexes() error {
	if len(r.index) != len(r.P.Indexes) {
		r.index = make([]index, len(r.P.Indexes))
	}
	for i, ix := range r.P.Indexes {
		idx, w := r.host.Index(i)
		if i < len(r.bounds) && r.bounds[i] >= 0 {
			if err := ix.Check(idx, w, r.bounds[i]); err != nil {
				return fmt.Errorf("cpu: %w", err)
			}
		}
		r.index[i] = index{idx, w}
	}
	return nil
}

// firstOut is the index of the first result the step computes.
func firstOut(st *Step) int {
	for w, o := range st.Outs {
		if o >= 0 {
			return w
		}
	}
	return 0
}
