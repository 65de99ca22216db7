package cpuexec

import (
	"github.com/rewiregnn/rewiregnn/kern"
	"github.com/rewiregnn/rewiregnn/prog"
)

// Host is what a Runner reads besides the program's per-step inputs (prog.Feed): the
// parameters' values and the batch norms' running statistics, which training updates in place.
type Host interface {
	prog.Feed
	// Param returns the contents of the named parameter, of its dtype ([]float32 or []float64).
	Param(name string) any
	// BN returns the running statistics of batch-norm state s and, for a training pass that
	// averages the batch statistics into them (a calibration), the number of passes averaged
	// including this one (0: the momentum update). A replay (replay set) counts no pass.
	BN(s int, replay bool) (mean, variance []float64, average int)
}

// call is one step being run in element type T: the CPU backend of the dispatcher
// (dispatch.Backend over []T; its kernels are in kernels.go).
type call[T kern.Float] struct {
	r  *Runner
	st *Step
}

// index is an index input as the CPU kernels read it: entries and, where weighted, weights.
type index struct {
	idx []int32
	w   []float64
}

// data returns value v's contents.
func (c *call[T]) data(v int) []T {
	if v < 0 {
		return nil
	}
	return c.r.data[v].([]T)
}

func (c *call[T]) Program() *prog.Program { return c.r.P }
func (c *call[T]) Feed() prog.Feed        { return c.r.host }
func (c *call[T]) Members() int           { return len(c.st.Ins) }

// Has reports whether member w's inputs are present (nil Ins[w]: the program has no such node).
func (c *call[T]) Has(w int) bool { return w < len(c.st.Ins) && c.st.Ins[w] != nil }

func (c *call[T]) Computes(w int) bool { return w < len(c.st.Outs) && c.st.Outs[w] >= 0 }
func (c *call[T]) NumIn(w int) int     { return len(c.st.Ins[w]) }

// In returns member w's input i cut to its value's elements, Out member w's result (nil where
// the step does not compute it): a kernel that takes a slice's length for a size reads these
// (a value's view may be longer than the value).
func (c *call[T]) In(w, i int) []T { return c.cut(c.st.Ins[w][i]) }
func (c *call[T]) Out(w int) []T {
	if w >= len(c.st.Outs) {
		return nil
	}
	return c.cut(c.st.Outs[w])
}

func (c *call[T]) Shape(w, i int) (int, int) { return c.r.P.Vals[c.st.Ins[w][i]].RowsCols() }
func (c *call[T]) Elems(w, i int) int        { return c.r.P.Vals[c.st.Ins[w][i]].Elems() }
func (c *call[T]) IsScalar(w, i int) bool    { return c.r.P.Vals[c.st.Ins[w][i]].Scalar() }
func (c *call[T]) OutElems(w int) int        { return c.r.P.Vals[c.st.Outs[w]].Elems() }

// Index returns index input ix's entries and weights, as the run loaded and checked them
// (Runner.loadIndexes).
func (c *call[T]) Index(ix int) index { return c.r.index[ix] }

func (c *call[T]) Mask(m int) []bool { return c.r.host.Mask(m) }

func (c *call[T]) cut(v int) []T {
	d := c.data(v)
	if d == nil {
		return nil
	}
	return d[:c.r.P.Vals[v].Elems()]
}

// summand returns the value the step adds to member 0's result (a gradient sum folded into
// the op), or nil.
func (c *call[T]) summand() []T { return c.data(c.st.Summand) }

// colSum returns the vector a product gradient's pass fills with the column sums of g (the
// bias gradient), or nil.
func (c *call[T]) colSum() []T { return c.data(c.st.ColSum) }

// scratch is the scratch the product gradients' passes share.
func (c *call[T]) scratch() *kern.Scratch { return c.r.scratch }

// replay reports whether the step recomputes a forward value for the backward pass (its side
// effects must not happen twice).
func (c *call[T]) replay() bool { return c.st.Replay }

// bn returns the node's batch-norm running statistics (Host.BN).
func (c *call[T]) bn() (mean, variance []float64, average int) {
	return c.r.host.BN(c.st.Node.State, c.st.Replay)
}

// kept returns the state the node's group (Node.Group: a forward op and its gradient ops)
// keeps between its steps, of type S, created on first use.
func kept[S any, T kern.Float](c *call[T]) *S {
	p := &c.r.groups[c.st.Node.Group]
	if s, ok := (*p).(*S); ok {
		return s
	}
	s := new(S)
	*p = s
	return s
}

// acc returns n float64 values of scratch that the kernel uses only while it runs (a segment
// softmax's per-destination accumulators), shared by the runner's steps.
func (c *call[T]) acc(n int) []float64 {
	if cap(c.r.acc) < n {
		c.r.acc = make([]float64, n)
	}
	return c.r.acc[:n]
}

// tmp returns n values of scratch in T that the kernel uses only while it runs (an evaluation
// net's gated-aggregation denominators, which no gradient reads), shared by the runner's steps.
func (c *call[T]) tmp(n int) []T {
	b := kern.Grow[T](c.r.tmp, n)
	c.r.tmp = b
	return b
}

// stateName is the name of the node's state (for messages).
func (c *call[T]) stateName() string { return c.r.P.States[c.st.Node.State].Name }
