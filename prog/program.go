// Package prog is the project's own form of a model: a typed program of nodes, each an op kind
// (Op) with typed attributes, shapes and inputs, lowered once from the front end's graph (package
// lower) and run by the backends. A batch's indices and masks are named inputs of the program,
// fed per step (Feed), never state inside an op; gradient sums are nodes of their own (GradSum).
// It also holds the planner both executors lay their activations out with (AssignSlots).
//
// Nothing here knows Gorgonia, the CPU kernels or the device.
package prog

import (
	"fmt"
	"strings"
)

// Kind says where a value comes from.
type Kind uint8

const (
	Computed Kind = iota // the result of a node
	Param                // a trainable parameter, by name
	Input                // a dense input of the batch (node features, targets, weights, encodings), fed per step
	Const                // fixed for the program: a scalar or a tensor
)

func (k Kind) String() string {
	return [...]string{"computed", "parameter", "input", "constant"}[k]
}

// Dtype is a value's element type.
type Dtype uint8

const (
	Float32 Dtype = iota
	Float64
)

func (d Dtype) String() string { return [...]string{"float32", "float64"}[d] }

// Value is one tensor of the program.
type Value struct {
	Name  string
	Kind  Kind
	Dtype Dtype
	// Shape is nil for a scalar; a vector has one dimension, a matrix two.
	Shape []int
	// Node is the node computing a Computed value.
	Node int
	// F32 or F64 (by Dtype) hold a Const value's contents, row-major.
	F32 []float32
	F64 []float64
}

// Scalar reports whether the value is a scalar.
func (v *Value) Scalar() bool { return v.Shape == nil }

// Elems is the number of elements (1 for a scalar).
func (v *Value) Elems() int {
	n := 1
	for _, d := range v.Shape {
		n *= d
	}
	return n
}

// RowsCols is the value as a matrix: a vector is one row, a scalar 1×1.
func (v *Value) RowsCols() (int, int) {
	switch len(v.Shape) {
	case 0:
		return 1, 1
	case 1:
		return 1, v.Shape[0]
	case 2:
		return v.Shape[0], v.Shape[1]
	}
	return v.Shape[0], v.Elems() / max(v.Shape[0], 1)
}

// Node is one operation: Op applied to the values In, writing value Out.
type Node struct {
	Op    Op
	In    []int
	Out   int
	Which int // the member of a gradient group this node computes (Spec.Members)
	Rows  int // ScatterAdd, EdgeSumGrad: output rows; SegmentSoftmax(Grad), SegmentMax(Grad), GatedAggregate(Grad): nodes
	Heads int // HeadDot
	// Index, Src and Dst are the index inputs the op reads (-1: none): Gather, ScatterAdd,
	// SegmentSoftmax(Grad) and SegmentMax(Grad) Index; WeightedCE(Grad) its labels and weights in Index; the gated
	// aggregation and the edge sum Src and Dst.
	Index, Src, Dst int
	Mask            int // the mask input of a normalisation (-1: none)
	// State is the host state the node reads (-1: none): a batch norm's running statistics and
	// training switch, or a dropout site's switch and mask seed (Program.States).
	State int
	// Group ties a forward op to its gradient ops and the gradient ops one pass computes
	// together (a normalisation, the gated aggregation, the edge sum: the forward results they
	// keep and share); -1: none. Groups are numbered from 0 to Program.Groups.
	Group int
	Rate  float64 // Dropout(Grad)
	// Grad: the node belongs to the backward pass (added by differentiation).
	Grad bool
}

// IndexInput is an index input: Len entries per step, each a row of another tensor or -1, and
// per-entry weights when Weighted.
type IndexInput struct {
	Name     string
	Len      int
	Weighted bool
}

// MaskInput is a mask input: Len rows, true where the row holds data (not shape padding).
type MaskInput struct {
	Name string
	Len  int
}

// CheckBatchRows checks that a batch norm's mask keeps at least the 2 rows its training-mode
// batch statistics need.
func CheckBatchRows(keep []bool) error {
	k := 0
	for _, v := range keep {
		if v {
			k++
		}
	}
	if k < 2 {
		return fmt.Errorf("%d real rows; training statistics need at least 2", k)
	}
	return nil
}

// StateKind is what a State holds.
type StateKind uint8

const (
	BNState   StateKind = iota // a batch norm's running statistics (Size values each) and its training switch
	DropState                  // a dropout site: a training switch and a mask seed per step
)

// State is host state nodes read: what the host mirror switches or draws per step, and (batch
// norm) statistics a backend keeps and the host mirror holds.
type State struct {
	Kind StateKind
	Name string
	Size int // BatchNorm: the number of features
}

// Program is a model for one shape bucket and mode: its values, its nodes in an order where
// every value is computed before it is read, its index and mask inputs, and what it delivers.
type Program struct {
	Vals    []Value
	Nodes   []Node
	Indexes []IndexInput
	Masks   []MaskInput
	States  []State
	Groups  int // the number of Node.Group ids
	Loss    int // value ids
	Pred    int
	// Grads are the gradients of the parameters GradNames (training programs; nil otherwise).
	Grads     []int
	GradNames []string
	// Train says the program trains (it has gradients).
	Train bool
	// Checkpoints are the values the model declares as its layers' outputs: with activation
	// recomputation the forward pass keeps these, and the backward pass recomputes the rest.
	Checkpoints []int
}

// Feed gives a program's per-step inputs: what the batch loaded and what the host mirror
// switches. Slices are read before the next step's Load and must not be kept.
type Feed interface {
	// Index returns index input i's entries and, for a weighted index, its weights.
	Index(i int) (idx []int32, w []float64)
	// Mask returns mask input i.
	Mask(i int) []bool
	// Input returns the contents of Input value v, of v's dtype (a []float32 or []float64).
	Input(v int) any
	// Training reports whether state s (a batch norm or a dropout site) is in training mode.
	Training(s int) bool
	// DropSeed is dropout site s's mask seed for the current step.
	DropSeed(s int) uint64
}

// Outputs returns the values the host reads after a run: loss, prediction and gradients.
func (p *Program) Outputs() []int {
	return append([]int{p.Loss, p.Pred}, p.Grads...)
}

// Needed returns, by node, whether a run must compute it: the nodes the outputs are computed
// from, and every node whose op has an effect (Spec.Effect) with what it reads.
func (p *Program) Needed() []bool {
	need := make([]bool, len(p.Nodes))
	var stack []int
	mark := func(v int) {
		if p.Vals[v].Kind == Computed && !need[p.Vals[v].Node] {
			need[p.Vals[v].Node] = true
			stack = append(stack, p.Vals[v].Node)
		}
	}
	for _, v := range p.Outputs() {
		mark(v)
	}
	for i, n := range p.Nodes {
		if n.Op.Spec().Effect && !need[i] {
			need[i] = true
			stack = append(stack, i)
		}
	}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, v := range p.Nodes[i].In {
			mark(v)
		}
	}
	return need
}

// Describe names value v for messages: its name, or the node computing it.
func (p *Program) Describe(v int) string {
	val := &p.Vals[v]
	if val.Kind != Computed {
		return fmt.Sprintf("%s %q %v", val.Kind, val.Name, val.Shape)
	}
	return fmt.Sprintf("node %d (%s, shape %v)", val.Node, val.Name, val.Shape)
}

// Check verifies the program's structure: value and input references in range, every node's
// inputs computed before it (or not computed at all), arity by the op's spec, outputs
// computed by their node.
func (p *Program) Check() error {
	ref := func(what string, i, n int) error {
		if i < -1 || i >= n {
			return fmt.Errorf("%s %d out of range [-1, %d)", what, i, n)
		}
		return nil
	}
	for i, n := range p.Nodes {
		if n.Op == Invalid || n.Op >= numOps {
			return fmt.Errorf("prog: node %d: invalid op %d", i, n.Op)
		}
		if n.Out < 0 || n.Out >= len(p.Vals) || p.Vals[n.Out].Kind != Computed || p.Vals[n.Out].Node != i {
			return fmt.Errorf("prog: node %d (%s): output %d is not its value", i, n.Op, n.Out)
		}
		for _, v := range n.In {
			if v < 0 || v >= len(p.Vals) {
				return fmt.Errorf("prog: node %d (%s): input %d out of range", i, n.Op, v)
			}
			if val := &p.Vals[v]; val.Kind == Computed && val.Node >= i {
				return fmt.Errorf("prog: node %d (%s) reads %s, computed after it", i, n.Op, p.Describe(v))
			}
		}
		if err := ArityOf(n.Op, n.Which, len(n.In)); err != nil {
			return fmt.Errorf("prog: node %d: %w", i, err)
		}
		for _, e := range []error{ref("index", n.Index, len(p.Indexes)), ref("src index", n.Src, len(p.Indexes)),
			ref("dst index", n.Dst, len(p.Indexes)), ref("mask", n.Mask, len(p.Masks)), ref("state", n.State, len(p.States)), ref("group", n.Group, p.Groups)} {
			if e != nil {
				return fmt.Errorf("prog: node %d (%s): %w", i, n.Op, e)
			}
		}
	}
	for _, v := range p.Outputs() {
		if v < 0 || v >= len(p.Vals) {
			return fmt.Errorf("prog: output value %d out of range", v)
		}
	}
	if len(p.Grads) != len(p.GradNames) {
		return fmt.Errorf("prog: %d gradients, %d names", len(p.Grads), len(p.GradNames))
	}
	return nil
}

// String lists the program, one node per line (for tests and diagnostics).
func (p *Program) String() string {
	var b strings.Builder
	for i, n := range p.Nodes {
		fmt.Fprintf(&b, "%3d %-18s %v → %d %v", i, n.Op, n.In, n.Out, p.Vals[n.Out].Shape)
		if n.Which != 0 {
			fmt.Fprintf(&b, " which=%d", n.Which)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// IndexBounds returns, for every index input, the bound its entries must stay below (the rows
// of what it indexes, the smallest over the needed nodes reading it; -1 where no needed node
// reads it), for a backend that checks a batch's indices before the run rather than in its
// kernels.
func (p *Program) IndexBounds(need []bool) []int {
	b := make([]int, len(p.Indexes))
	for i := range b {
		b[i] = -1
	}
	bound := func(ix, rows int) {
		if ix >= 0 && (b[ix] < 0 || rows < b[ix]) {
			b[ix] = rows
		}
	}
	rows := func(n *Node, i int) int { r, _ := p.Vals[n.In[i]].RowsCols(); return r }
	for i := range p.Nodes {
		n := &p.Nodes[i]
		if need != nil && !need[i] {
			continue
		}
		switch n.Op {
		case Gather:
			bound(n.Index, rows(n, 0))
		case ScatterAdd, SegmentSoftmax, SegmentSoftmaxGrad, SegmentMax, SegmentMaxGrad:
			bound(n.Index, n.Rows)
		case GatedAggregate: // (ê, Bh)
			bound(n.Src, rows(n, 1))
			bound(n.Dst, n.Rows)
		case GatedAggregateGrad:
			if n.Which == 0 { // (ê, Bh, out, g)
				bound(n.Src, rows(n, 1))
				bound(n.Dst, n.Rows)
			}
		case EdgeSum: // (e, hs, ht)
			bound(n.Src, rows(n, 1))
			bound(n.Dst, rows(n, 2))
		case EdgeSumGrad:
			bound(n.Src, n.Rows)
			bound(n.Dst, n.Rows)
		case WeightedCE, WeightedCEGrad:
			_, cl := p.Vals[n.In[0]].RowsCols()
			bound(n.Index, cl)
		}
	}
	return b
}

// Check reports the first entry of idx outside [-1, rows), or weights that do not match the
// entries, as the CPU ops do before using an index.
func (ix IndexInput) Check(idx []int32, w []float64, rows int) error {
	if len(idx) != ix.Len {
		return fmt.Errorf("index %q: %d entries, want %d", ix.Name, len(idx), ix.Len)
	}
	if err := ix.CheckEntries(idx, 0, rows); err != nil {
		return err
	}
	return ix.checkWeights(idx, w)
}

// CheckSizes is Check without the test of the entries' values (CheckEntries), for a caller
// that tests them in parts.
func (ix IndexInput) CheckSizes(idx []int32, w []float64) error {
	if len(idx) != ix.Len {
		return fmt.Errorf("index %q: %d entries, want %d", ix.Name, len(idx), ix.Len)
	}
	return ix.checkWeights(idx, w)
}

func (ix IndexInput) checkWeights(idx []int32, w []float64) error {
	if ix.Weighted && len(w) != len(idx) {
		return fmt.Errorf("index %q: %d weights for %d entries", ix.Name, len(w), len(idx))
	}
	return nil
}

// CheckEntries reports the first of entries (the index's entries from number off on) outside
// [-1, rows): Check's test of the values, for a part of the index.
func (ix IndexInput) CheckEntries(entries []int32, off, rows int) error {
	for i, v := range entries {
		if v < -1 || int(v) >= rows {
			return fmt.Errorf("index %q: entry %d is %d, outside [-1, %d)", ix.Name, off+i, v, rows)
		}
	}
	return nil
}
