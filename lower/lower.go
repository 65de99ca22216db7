// Package lower translates the front end's model graph (a Gorgonia graph built by nn and
// models/*, differentiated by Grad) into the project's program (package prog), once per net:
// it is the only place that recognises Gorgonia's own operators (Kinds) and the gradient sums
// Gorgonia's differentiation adds (Grad, Sums), and that reads the project ops' attributes
// (ops.Describe). The Binding it returns feeds the program from the front end's holders.
package lower

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/ops"
	"github.com/rewiregnn/rewiregnn/prog"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Graph is what Lower translates: a model graph and what a run of it delivers.
type Graph struct {
	G          *gorgonia.ExprGraph
	Loss, Pred *gorgonia.Node
	// Grads are the parameters' gradients (nil for an evaluation graph), named GradNames.
	Grads     gorgonia.Nodes
	GradNames []string
	// Params names the parameter nodes by id; Inputs names the dense input holders (the
	// tensors the batch is loaded into).
	Params map[int64]string
	Inputs map[*tensor.Dense]string
	// Sums are the gradient sums Grad added.
	Sums Sums
	// Named are the ids of the input nodes the front end made (their tensors are read at every
	// run, even where they hold zeros).
	Named map[int64]bool
	// Forward tells the forward pass's nodes (nil: every node); Checkpoints are the layers'
	// outputs the model declared (for activation recomputation).
	Forward     func(*gorgonia.Node) bool
	Checkpoints gorgonia.Nodes
}

// operators maps Gorgonia's element-wise operators (Kinds) to program ops.
var operators = map[string]prog.Op{
	KindAdd: prog.Add, KindSub: prog.Sub, KindMul: prog.Mul, KindDiv: prog.Div,
	KindTanh: prog.Tanh, KindSigmoid: prog.Sigmoid, KindExp: prog.Exp, KindAbs: prog.Abs, KindSqrt: prog.Sqrt,
}

// Binding connects a program to the front end's holders, by the program's input and state
// numbers. It is the program's prog.Feed.
type Binding struct {
	Indexes []*ops.Index
	Masks   []*ops.Mask
	Norms   []*ops.BNState   // by state; nil for a dropout site
	Drop    []*ops.DropState // by state; nil for a batch norm
	inputs  map[int]*tensor.Dense
	params  map[string]*tensor.Dense
}

func (b *Binding) Index(i int) ([]int32, []float64) { return b.Indexes[i].Idx, b.Indexes[i].W }
func (b *Binding) Mask(i int) []bool                { return b.Masks[i].Keep }
func (b *Binding) Input(v int) any                  { return b.inputs[v].Data() }
func (b *Binding) Training(s int) bool {
	if b.Norms[s] != nil {
		return b.Norms[s].Training
	}
	return b.Drop[s].Training
}
func (b *Binding) DropSeed(s int) uint64 { return b.Drop[s].StepSeed() }

// Param returns the contents of the named parameter's tensor (nil: not a parameter of the
// program).
func (b *Binding) Param(name string) any {
	if t := b.params[name]; t != nil {
		return t.Data()
	}
	return nil
}

// BN returns batch-norm state s's running statistics, counting a calibration pass
// (ops.BNState.Pass).
func (b *Binding) BN(s int, replay bool) ([]float64, []float64, int) {
	st := b.Norms[s]
	return st.RunMean, st.RunVar, st.Pass(replay)
}

var _ prog.Feed = (*Binding)(nil)

// lowering holds Lower's bookkeeping.
type lowering struct {
	gr      Graph
	p       *prog.Program
	b       *Binding
	kinds   *Kinds
	byNode  map[int64]int // graph node → value
	indexes map[*ops.Index]int
	masks   map[*ops.Mask]int
	states  map[any]int // *ops.BNState, *ops.DropState → state
	groups  map[any]int // forward state → group
}

// Lower translates a graph into a program: the nodes its loss, prediction and gradients are
// computed from, and every batch norm's forward pass (its running statistics move in training
// even where its result is unused), in an order where inputs come first. Gradients Gorgonia
// builds that nothing needs (of inputs and constants) are left out.
func Lower(gr Graph) (*prog.Program, *Binding, error) {
	if gr.Loss == nil || gr.Pred == nil {
		return nil, nil, fmt.Errorf("lower: the graph has no loss or prediction node")
	}
	if len(gr.Grads) != len(gr.GradNames) {
		return nil, nil, fmt.Errorf("lower: %d gradients, %d names", len(gr.Grads), len(gr.GradNames))
	}
	sorted, err := gorgonia.Sort(gr.G)
	if err != nil {
		return nil, nil, fmt.Errorf("lower: ordering the graph: %w", err)
	}
	order := make([]*gorgonia.Node, len(sorted)) // Sort lists outputs first
	for i, n := range sorted {
		order[len(sorted)-1-i] = n
	}
	roots := append(gorgonia.Nodes{gr.Loss, gr.Pred}, gr.Grads...)
	for _, n := range order {
		if d, ok := ops.Describe(n.Op()); n.Op() != nil && ok && d.Op.Spec().Effect {
			roots = append(roots, n)
		}
	}
	need := Reaches(gr.G, roots...)
	l := &lowering{gr: gr, p: &prog.Program{Train: gr.Grads != nil}, b: &Binding{inputs: map[int]*tensor.Dense{}, params: map[string]*tensor.Dense{}},
		kinds: NewKinds(), byNode: map[int64]int{}, indexes: map[*ops.Index]int{}, masks: map[*ops.Mask]int{},
		states: map[any]int{}, groups: map[any]int{}}
	for _, n := range order {
		if !need[n.ID()] {
			continue
		}
		if err := l.node(n); err != nil {
			return nil, nil, err
		}
	}
	p := l.p
	p.Loss, p.Pred = l.byNode[gr.Loss.ID()], l.byNode[gr.Pred.ID()]
	for _, g := range gr.Grads {
		p.Grads = append(p.Grads, l.byNode[g.ID()])
	}
	p.GradNames = append([]string(nil), gr.GradNames...)
	for _, n := range gr.Checkpoints {
		if v, ok := l.byNode[n.ID()]; ok {
			p.Checkpoints = append(p.Checkpoints, v)
		}
	}
	if err := p.Check(); err != nil {
		return nil, nil, err
	}
	return p, l.b, nil
}

// Reaches returns the ids of the nodes the roots are computed from (themselves included).
func Reaches(g *gorgonia.ExprGraph, roots ...*gorgonia.Node) map[int64]bool {
	seen := map[int64]bool{}
	var stack []int64
	for _, r := range roots {
		if !seen[r.ID()] {
			seen[r.ID()] = true
			stack = append(stack, r.ID())
		}
	}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		it := g.From(id)
		for it.Next() {
			if c := it.Node().ID(); !seen[c] {
				seen[c] = true
				stack = append(stack, c)
			}
		}
	}
	return seen
}

// Describe names a graph node for messages.
func Describe(n *gorgonia.Node) string {
	if n.Op() == nil {
		return fmt.Sprintf("node %q %v", n.Name(), n.Shape())
	}
	return fmt.Sprintf("node %d (%v, shape %v)", n.ID(), n.Op(), n.Shape())
}

// value adds a value of node n's type and shape.
func (l *lowering) value(n *gorgonia.Node, v prog.Value) (int, error) {
	switch n.Dtype() {
	case tensor.Float32:
		v.Dtype = prog.Float32
	case tensor.Float64:
		v.Dtype = prog.Float64
	default:
		return 0, fmt.Errorf("lower: %s has element type %v, want float32 or float64", Describe(n), n.Dtype())
	}
	if !n.IsScalar() {
		v.Shape = append([]int(nil), n.Shape()...)
		if len(v.Shape) > 2 {
			return 0, fmt.Errorf("lower: %s has rank %d; programs hold scalars, vectors and matrices", Describe(n), len(v.Shape))
		}
	}
	l.p.Vals = append(l.p.Vals, v)
	id := len(l.p.Vals) - 1
	l.byNode[n.ID()] = id
	return id, nil
}

// node adds graph node n: a parameter, an input, a constant, or an op.
func (l *lowering) node(n *gorgonia.Node) error {
	if n.Op() == nil {
		return l.leaf(n)
	}
	var in []int
	for _, c := range Children(l.gr.G, n) {
		id, ok := l.byNode[c.ID()]
		if !ok {
			return fmt.Errorf("lower: %s: input %s is not lowered before it", Describe(n), Describe(c))
		}
		in = append(in, id)
	}
	if len(in) == 0 {
		if l.kinds.Of(l.gr.G, n) != KindConst {
			return fmt.Errorf("lower: %s: op %v (%T) has no inputs and is not a constant", Describe(n), n.Op(), n.Op())
		}
		return l.constant(n, n.Value(), fmt.Sprint(n.Op()))
	}
	nd := prog.Node{In: in, Index: -1, Src: -1, Dst: -1, Mask: -1, State: -1, Group: -1,
		Grad: l.gr.Forward != nil && !l.gr.Forward(n)}
	if d, ok := ops.Describe(n.Op()); ok {
		if nd.Op = d.Op; nd.Op == prog.Invalid {
			return fmt.Errorf("lower: %s: op %v has no device kernel: the program has no op for it", Describe(n), n.Op())
		}
		l.attrs(&nd, d)
	} else {
		k := l.kinds.Of(l.gr.G, n)
		if nd.Op, ok = operators[k]; !ok {
			return fmt.Errorf("lower: %s: op %v (%T) has no device kernel: the program has no op for it", Describe(n), n.Op(), n.Op())
		}
		if k == KindAdd && l.gr.Sums[n.ID()] {
			nd.Op = prog.GradSum
		}
	}
	out, err := l.value(n, prog.Value{Name: fmt.Sprint(n.Op()), Kind: prog.Computed, Node: len(l.p.Nodes)})
	if err != nil {
		return err
	}
	nd.Out = out
	if err := prog.ArityOf(nd.Op, nd.Which, len(in)); err != nil {
		return fmt.Errorf("lower: %s: %w", Describe(n), err)
	}
	l.p.Nodes = append(l.p.Nodes, nd)
	return nil
}

// attrs fills a project op's attributes, numbering its index and mask inputs, states and group.
func (l *lowering) attrs(nd *prog.Node, d ops.DeviceOp) {
	nd.Which, nd.Rows, nd.Heads = d.Which, d.Rows, d.Heads
	nd.Index, nd.Src, nd.Dst = l.index(d.Index), l.index(d.Src), l.index(d.Dst)
	if d.Mask != nil {
		id, ok := l.masks[d.Mask]
		if !ok {
			id = len(l.p.Masks)
			l.masks[d.Mask] = id
			l.p.Masks = append(l.p.Masks, prog.MaskInput{Name: d.Mask.Name, Len: len(d.Mask.Keep)})
			l.b.Masks = append(l.b.Masks, d.Mask)
		}
		nd.Mask = id
	}
	switch {
	case d.BN != nil:
		nd.State = l.state(d.BN, prog.State{Kind: prog.BNState, Name: d.BN.Name, Size: len(d.BN.RunMean)}, d.BN, nil)
	case d.Drop != nil:
		nd.State = l.state(d.Drop, prog.State{Kind: prog.DropState, Name: d.Drop.Name}, nil, d.Drop)
		nd.Rate = d.Drop.Rate
	}
	if d.State != nil {
		id, ok := l.groups[d.State]
		if !ok {
			id = l.p.Groups
			l.groups[d.State] = id
			l.p.Groups++
		}
		nd.Group = id
	}
}

func (l *lowering) index(ix *ops.Index) int {
	if ix == nil {
		return -1
	}
	if id, ok := l.indexes[ix]; ok {
		return id
	}
	id := len(l.p.Indexes)
	l.indexes[ix] = id
	l.p.Indexes = append(l.p.Indexes, prog.IndexInput{Name: ix.Name, Len: ix.Len(), Weighted: ix.W != nil})
	l.b.Indexes = append(l.b.Indexes, ix)
	return id
}

func (l *lowering) state(key any, s prog.State, bn *ops.BNState, drop *ops.DropState) int {
	if id, ok := l.states[key]; ok {
		return id
	}
	id := len(l.p.States)
	l.states[key] = id
	l.p.States = append(l.p.States, s)
	l.b.Norms, l.b.Drop = append(l.b.Norms, bn), append(l.b.Drop, drop)
	return id
}

// leaf adds an input node: a parameter, a dense input holder, or a zero tensor (fixed).
func (l *lowering) leaf(n *gorgonia.Node) error {
	if name, ok := l.gr.Params[n.ID()]; ok {
		if t, ok := n.Value().(*tensor.Dense); ok {
			l.b.params[name] = t
		}
		_, err := l.value(n, prog.Value{Name: name, Kind: prog.Param})
		return err
	}
	d, _ := n.Value().(*tensor.Dense)
	if name, ok := l.gr.Inputs[d]; ok && d != nil {
		id, err := l.value(n, prog.Value{Name: name, Kind: prog.Input})
		l.b.inputs[id] = d
		return err
	}
	if d == nil {
		return fmt.Errorf("lower: %s is neither a parameter nor an input with a tensor: the executor does not know how to fill it", Describe(n))
	}
	if allZero(d) && !l.gr.named(n) {
		return l.constant(n, d, n.Name()) // a zero matrix Grad made (ColSum's gradient)
	}
	// Any other input (one a model or a test made with Builder.Input) is read from its tensor
	// at every run, like the batch's holders.
	id, err := l.value(n, prog.Value{Name: n.Name(), Kind: prog.Input})
	l.b.inputs[id] = d
	return err
}

// named reports whether n is an input the front end named (Builder.Input), not one the
// differentiation made.
func (gr *Graph) named(n *gorgonia.Node) bool { return gr.Named != nil && gr.Named[n.ID()] }

// constant adds a constant value (a copy of its contents).
func (l *lowering) constant(n *gorgonia.Node, v gorgonia.Value, name string) error {
	c := prog.Value{Name: name, Kind: prog.Const}
	switch x := v.Data().(type) {
	case []float32:
		c.F32 = append([]float32(nil), x...)
	case []float64:
		c.F64 = append([]float64(nil), x...)
	case float32:
		c.F32 = []float32{x}
	case float64:
		c.F64 = []float64{x}
	default:
		return fmt.Errorf("lower: %s: constant of type %T, want float32 or float64", Describe(n), v.Data())
	}
	_, err := l.value(n, c)
	return err
}

func allZero(d *tensor.Dense) bool {
	switch x := d.Data().(type) {
	case []float32:
		for _, v := range x {
			if v != 0 {
				return false
			}
		}
		return true
	case []float64:
		for _, v := range x {
			if v != 0 {
				return false
			}
		}
		return true
	}
	return false
}
