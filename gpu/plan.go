package gpu

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/exec"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// A Plan is a compiled net (one shape bucket, training or evaluation) laid out for a device:
// the nodes it must compute in order, grouped into steps (one launcher call each), where every
// value lives, and which activation buffers (slots) can be shared. Building a plan needs no
// GPU; the executor runs it.
type Plan struct {
	Net   *nn.Net
	Vals  []Value
	Steps []Step
	// Slots are the activation buffers, in float32 elements. A slot is shared by values whose
	// lifetimes do not overlap (a value is live from the step that writes it to the last step
	// that reads it; outputs, losses and gradients until the end).
	Slots []int
	// Indexes and Masks are the per-batch index and mask holders the steps read; IndexRows[i]
	// is the bound every entry of Indexes[i] must stay below (checked before upload).
	Indexes   []*ops.Index
	IndexRows []int
	Masks     []*ops.Mask
	Loss      int      // value id of the loss
	Pred      int      // value id of the prediction
	Grads     []int    // value ids of the parameter gradients, for GradNames
	GradNames []string // parameter names, in Net.Grads order
	byNode    map[int64]int
}

// Source says where a value comes from.
type Source int

const (
	FromStep   Source = iota // computed by a step, in an activation slot
	FromParam                // a trainable tensor, resident on the device
	FromInput                // a dense input tensor of nn.Inputs, uploaded per batch
	FromStatic               // fixed for the net: a constant or a zero matrix, uploaded once
)

func (s Source) String() string {
	return [...]string{"step", "parameter", "input", "static"}[s]
}

// Value is one graph node's tensor (or a temporary a step needs).
type Value struct {
	Node  *gorgonia.Node // nil for temporaries
	Name  string         // for errors
	Src   Source
	Elems int           // float32 elements
	Rows  int           // as a matrix: rows (1 for a vector or scalar) …
	Cols  int           // … and columns
	Param string        // FromParam: the parameter's name
	Host  *tensor.Dense // FromInput: the holder refilled per batch; FromStatic: the value
	Const float32       // FromStatic scalars
	Slot  int           // FromStep: activation slot; -1 otherwise
	Def   int           // FromStep: the step writing it
	Last  int           // the last step reading it (len(Steps) when the host reads it after the run)
}

// Step is one launch group: a project op, a Gorgonia operator, or the gradient ops of one op
// that one pass computes together (batch and layer norm, the gated aggregation, the edge sum,
// the Gaussian weights, the kernel mix).
type Step struct {
	Kind string       // nn.Op* kind, or "+", "-", "⊙", "÷", "tanh", "sigmoid", "exp", "abs"
	Op   ops.DeviceOp // attributes (zero for Gorgonia's operators)
	// Outs[w] is the value gradient w of a fused group writes (Which), or the single output;
	// a member the graph does not need is a temporary.
	Outs []int
	// Ins[w] are the input value ids of member w (for single ops Ins[0]); a member may read
	// another member's output (the ops that copy out what the first one computed).
	Ins [][]int
	// Aux are buffers a forward op keeps for its gradient ops (batch and layer norm: x̂, mean
	// and 1/σ; gated aggregation: the denominators), shared with its gradient step.
	Aux []int
	// Tmp are scratch buffers that live for the step only.
	Tmp []int
}

// Kinds a plan can contain and the executor runs; a model that gains another op fails Compile
// with an error naming it (and TestEveryModelOpHasAKernel).
var kinds = map[string]bool{
	ops.OpGather: true, ops.OpScatterAdd: true, ops.OpSegmentSoftmax: true, ops.OpSegmentSoftmaxGrad: true,
	ops.OpBatchNorm: true, ops.OpBatchNormGrad: true, ops.OpBatchNormRelu: true, ops.OpBatchNormReluGrad: true,
	ops.OpLayerNorm: true, ops.OpLayerNormGrad: true, ops.OpEdgeSum: true, ops.OpEdgeSumGrad: true,
	ops.OpGated: true, ops.OpGatedGrad: true, ops.OpGaussian: true, ops.OpGaussianGrad: true,
	ops.OpKernelMix: true, ops.OpKernelMixGradX: true, ops.OpKernelMixGradW: true, kernelMixGrad: true,
	ops.OpHeadDot: true, ops.OpHeadScale: true, ops.OpMatMul: true, ops.OpMatMulGradX: true, ops.OpMatMulGradW: true,
	ops.OpAddBias: true, ops.OpColSum: true, ops.OpAdd: true, ops.OpRelu: true, ops.OpReluGrad: true,
	ops.OpDropout: true, ops.OpDropoutGrad: true, ops.OpMaskedL1: true, ops.OpMaskedL1Grad: true,
	ops.OpWeightedCE: true, ops.OpWeightedCEGrad: true,
	exec.KindAdd: true, exec.KindSub: true, exec.KindMul: true, exec.KindDiv: true, exec.KindTanh: true, exec.KindSigmoid: true, exec.KindExp: true, exec.KindAbs: true,
}

// Kinds lists every step kind the executor runs.
func Kinds() []string {
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	return out
}

// kernelMixGrad is the step kind of KernelMix's two gradient ops, computed together.
const kernelMixGrad = "KernelMixGrad"

// fused gradient groups: the kinds whose members one launcher computes together, and the
// number of members.
var groupSize = map[string]int{
	ops.OpBatchNormGrad: 3, ops.OpBatchNormReluGrad: 3, ops.OpLayerNormGrad: 3, ops.OpGatedGrad: 2,
	ops.OpEdgeSumGrad: 2, ops.OpGaussianGrad: 3, ops.OpKernelMixGradX: 2, ops.OpKernelMixGradW: 2,
}

// opOf classifies a node's op: a project op (described by ops.Describe), one of Gorgonia's
// element-wise operators or a constant (recognised by exec.Kinds); ok is false for anything else.
func (c *compiler) opOf(n *gorgonia.Node) (kind string, d ops.DeviceOp, constant bool, ok bool) {
	op := n.Op()
	if d, ok := ops.Describe(op); ok {
		return d.Kind, d, false, true
	}
	switch k := c.kinds.Of(c.pl.Net.B.G, n); k {
	case exec.KindConst:
		return k, d, true, true
	case "":
	default:
		return k, d, false, kinds[k]
	}
	return fmt.Sprintf("%v (%T)", op, op), d, false, false
}

func elems(n *gorgonia.Node) int {
	if n.IsScalar() {
		return 1
	}
	return n.Shape().TotalSize()
}

func describeNode(n *gorgonia.Node) string {
	if n.Op() == nil {
		return fmt.Sprintf("node %q %v", n.Name(), n.Shape())
	}
	return fmt.Sprintf("node %d (%v, shape %v)", n.ID(), n.Op(), n.Shape())
}

// Compile lays out a net built on parameters p: float32 only.
func Compile(net *nn.Net, p *nn.Params) (*Plan, error) {
	if p.Dtype != tensor.Float32 {
		return nil, fmt.Errorf("gpu: parameters are %v; the device executor runs float32 only", p.Dtype)
	}
	if net.Loss == nil || net.Pred == nil {
		return nil, fmt.Errorf("gpu: net has no loss or prediction node")
	}
	sorted, err := gorgonia.Sort(net.B.G)
	if err != nil {
		return nil, fmt.Errorf("gpu: ordering the graph: %w", err)
	}
	// Gorgonia's sort lists outputs first; run inputs first.
	order := make([]*gorgonia.Node, len(sorted))
	for i, n := range sorted {
		order[len(sorted)-1-i] = n
	}
	// Only what the loss, the prediction and the gradients need, and every batch norm's
	// forward pass (its running statistics change even where its output is not used, as on
	// the CPU). This drops Gorgonia's gradients of constants (e.g. of the attention scale) and
	// of inputs.
	roots := gorgonia.Nodes{net.Loss, net.Pred}
	roots = append(roots, net.Grads...)
	for _, n := range order {
		if n.Op() != nil {
			if d, ok := ops.Describe(n.Op()); ok && (d.Kind == ops.OpBatchNorm || d.Kind == ops.OpBatchNormRelu) {
				roots = append(roots, n)
			}
		}
	}
	need := map[int64]bool{}
	for _, r := range roots {
		for id := range nn.Reaches(net.B.G, r) {
			need[id] = true
		}
	}
	c := &compiler{pl: &Plan{Net: net, byNode: map[int64]int{}}, p: p, rows: map[*ops.Index]int{},
		masks: map[*ops.Mask]bool{}, groups: map[groupKey]int{}, fwdStep: map[any]int{}, params: map[int64]string{},
		inputs: inputTensors(net.In), kinds: exec.NewKinds()}
	for _, n := range net.B.Learn {
		c.params[n.ID()] = n.Name()
	}
	for _, n := range order {
		if !need[n.ID()] {
			continue
		}
		if err := c.node(n); err != nil {
			return nil, err
		}
	}
	pl := c.pl
	if err := c.fillGroups(); err != nil {
		return nil, err
	}
	if err := pl.lifetimes(); err != nil {
		return nil, err
	}
	pl.Loss, pl.Pred = pl.byNode[net.Loss.ID()], pl.byNode[net.Pred.ID()]
	names, _ := net.Gradients()
	pl.GradNames = names
	for _, g := range net.Grads {
		id, ok := pl.byNode[g.ID()]
		if !ok {
			return nil, fmt.Errorf("gpu: gradient %s is not computed", describeNode(g))
		}
		pl.Grads = append(pl.Grads, id)
	}
	for _, n := range order { // indexes and masks in a deterministic order
		if !need[n.ID()] || n.Op() == nil {
			continue
		}
		if d, ok := ops.Describe(n.Op()); ok {
			for _, ix := range []*ops.Index{d.Index, d.Src, d.Dst} {
				if r, ok := c.rows[ix]; ok && ix != nil {
					pl.Indexes, pl.IndexRows = append(pl.Indexes, ix), append(pl.IndexRows, r)
					delete(c.rows, ix)
				}
			}
			if d.Mask != nil && c.masks[d.Mask] {
				pl.Masks = append(pl.Masks, d.Mask)
				delete(c.masks, d.Mask)
			}
		}
	}
	return pl, nil
}

// groupKey identifies the gradient ops one pass computes together: those of one forward
// state, or (Gaussian weights, kernel mix) those reading the same two nodes.
type groupKey struct {
	family string
	state  any
	a, b   int64
}

// compiler holds Compile's bookkeeping.
type compiler struct {
	pl      *Plan
	p       *nn.Params
	params  map[int64]string
	inputs  map[gorgonia.Value]*tensor.Dense
	rows    map[*ops.Index]int // the bound each index's entries must stay below
	masks   map[*ops.Mask]bool
	groups  map[groupKey]int // → step
	fwdStep map[any]int      // forward state → its step
	kinds   *exec.Kinds      // recognises Gorgonia's element-wise ops and constants
}

func (c *compiler) addVal(v Value) int {
	v.Slot, v.Last = -1, -1
	v.Rows, v.Cols = 1, max(v.Elems, 1)
	if v.Node != nil && !v.Node.IsScalar() {
		switch s := v.Node.Shape(); len(s) {
		case 1:
			v.Cols = s[0]
		case 2:
			v.Rows, v.Cols = s[0], s[1]
		}
	}
	c.pl.Vals = append(c.pl.Vals, v)
	return len(c.pl.Vals) - 1
}

// bound records that the entries of ix index rows rows.
func (c *compiler) bound(ix *ops.Index, rows int) {
	if ix == nil {
		return
	}
	if r, ok := c.rows[ix]; !ok || rows < r {
		c.rows[ix] = rows
	}
}

// node adds graph node n: an input value, a constant, or a step (or a member of a group).
func (c *compiler) node(n *gorgonia.Node) error {
	pl := c.pl
	if n.Op() == nil {
		v := Value{Node: n, Name: n.Name(), Elems: elems(n)}
		switch {
		case c.params[n.ID()] != "":
			name := c.params[n.ID()]
			t, ok := c.p.T[name]
			if !ok || n.Value() != gorgonia.Value(t) {
				return fmt.Errorf("gpu: %s: parameter %q is not the tensor of the parameter set", describeNode(n), name)
			}
			v.Src, v.Param = FromParam, name
		case c.inputs[n.Value()] != nil:
			v.Src, v.Host = FromInput, c.inputs[n.Value()]
		default:
			d, ok := n.Value().(*tensor.Dense)
			if !ok || !allZero(d) {
				return fmt.Errorf("gpu: %s is neither a parameter, an input of nn.Inputs nor a zero matrix: the executor does not know how to fill it", describeNode(n))
			}
			v.Src, v.Host = FromStatic, d
		}
		if v.Host != nil && v.Host.Dtype() != tensor.Float32 {
			return fmt.Errorf("gpu: %s is %v, want float32", describeNode(n), v.Host.Dtype())
		}
		pl.byNode[n.ID()] = c.addVal(v)
		return nil
	}
	kind, d, constant, ok := c.opOf(n)
	if !ok {
		return fmt.Errorf("gpu: %s: op %s has no device kernel", describeNode(n), kind)
	}
	if constant {
		v := Value{Node: n, Name: fmt.Sprint(n.Op()), Src: FromStatic, Elems: elems(n)}
		switch cv := n.Value().(type) {
		case *tensor.Dense:
			if cv.Dtype() != tensor.Float32 {
				return fmt.Errorf("gpu: %s is %v, want float32", describeNode(n), cv.Dtype())
			}
			v.Host = cv
		default:
			f, ok := cv.Data().(float32)
			if !ok {
				return fmt.Errorf("gpu: %s: constant of type %T, want float32", describeNode(n), cv.Data())
			}
			v.Const = f
		}
		pl.byNode[n.ID()] = c.addVal(v)
		return nil
	}
	var ins []int
	for _, ch := range exec.Children(pl.Net.B.G, n) {
		id, ok := pl.byNode[ch.ID()]
		if !ok {
			return fmt.Errorf("gpu: %s: input %s is not computed before it", describeNode(n), describeNode(ch))
		}
		ins = append(ins, id)
	}
	out := c.addVal(Value{Node: n, Name: describeNode(n), Src: FromStep, Elems: elems(n)})
	pl.byNode[n.ID()] = out
	which := d.Which
	switch kind {
	case ops.OpKernelMixGradX:
		which = 0
	case ops.OpKernelMixGradW:
		which = 1
	}
	if err := checkArity(kind, which, n, ins, pl.Vals); err != nil {
		return err
	}
	shape := func(i int) tensor.Shape { return pl.Vals[ins[i]].Node.Shape() }
	switch kind { // index bounds (checked per batch) and masks (uploaded per batch)
	case ops.OpGather:
		c.bound(d.Index, shape(0)[0])
	case ops.OpScatterAdd, ops.OpSegmentSoftmax, ops.OpSegmentSoftmaxGrad:
		c.bound(d.Index, d.Rows)
	case ops.OpGated: // (ê, bh)
		c.bound(d.Src, shape(1)[0])
		c.bound(d.Dst, d.Rows)
	case ops.OpGatedGrad:
		if which == 0 { // (ê, bh, out, g)
			c.bound(d.Src, shape(1)[0])
			c.bound(d.Dst, d.Rows)
		}
	case ops.OpEdgeSum: // (e, hs, ht)
		if d.Src.W != nil || d.Dst.W != nil {
			return fmt.Errorf("gpu: %s: edge sum over a weighted index", describeNode(n))
		}
		c.bound(d.Src, shape(1)[0])
		c.bound(d.Dst, shape(2)[0])
	case ops.OpEdgeSumGrad:
		c.bound(d.Src, d.Rows)
		c.bound(d.Dst, d.Rows)
	case ops.OpWeightedCE, ops.OpWeightedCEGrad:
		c.bound(d.Index, shape(0)[1])
		if d.Index.W == nil {
			return fmt.Errorf("gpu: %s: labels %q carry no weights", describeNode(n), d.Index.Name)
		}
	}
	if d.Mask != nil {
		c.masks[d.Mask] = true
	}
	if size, ok := groupSize[kind]; ok {
		return c.member(kind, which, size, d, n, out, ins)
	}
	st := Step{Kind: kind, Op: d, Outs: []int{out}, Ins: [][]int{ins}}
	switch kind { // what forward ops keep for their gradients
	case ops.OpBatchNorm, ops.OpBatchNormRelu:
		rows, cols := shape(0)[0], shape(0)[1]
		st.Aux = []int{c.addVal(Value{Name: "x̂ of " + describeNode(n), Elems: rows * cols}),
			c.addVal(Value{Name: "mean of " + describeNode(n), Elems: cols}), c.addVal(Value{Name: "1/σ of " + describeNode(n), Elems: cols})}
	case ops.OpLayerNorm:
		rows, cols := shape(0)[0], shape(0)[1]
		st.Aux = []int{c.addVal(Value{Name: "x̂ of " + describeNode(n), Elems: rows * cols}), c.addVal(Value{Name: "1/σ of " + describeNode(n), Elems: rows})}
	case ops.OpGated: // η is recomputed from ê by the backward kernel
		dd := shape(0)[1]
		st.Aux = []int{c.addVal(Value{Name: "Σ η + ε of " + describeNode(n), Elems: d.Rows * dd})}
	}
	for _, a := range st.Aux {
		pl.Vals[a].Def = len(pl.Steps)
	}
	if d.State != nil {
		c.fwdStep[d.State] = len(pl.Steps)
	}
	pl.Vals[out].Def = len(pl.Steps)
	pl.Steps = append(pl.Steps, st)
	return nil
}

// member adds a gradient op to its group's step, creating the step at the first member.
func (c *compiler) member(kind string, which, size int, d ops.DeviceOp, n *gorgonia.Node, out int, ins []int) error {
	pl := c.pl
	id := func(i int) int64 { return pl.Vals[ins[i]].Node.ID() }
	key := groupKey{family: kind, state: d.State}
	switch kind {
	case ops.OpKernelMixGradX: // (g, w)
		key = groupKey{family: kernelMixGrad, a: id(0), b: id(1)}
	case ops.OpKernelMixGradW: // (x, g, w)
		key = groupKey{family: kernelMixGrad, a: id(1), b: id(2)}
	case ops.OpGaussianGrad: // (u, μ, 1/σ, w, g)
		key.a, key.b = id(3), id(4)
	}
	if which < 0 || which >= size {
		return fmt.Errorf("gpu: %s: gradient %d of a group of %d", describeNode(n), which, size)
	}
	if si, ok := c.groups[key]; ok {
		st := &pl.Steps[si]
		if st.Outs[which] >= 0 {
			return fmt.Errorf("gpu: %s: gradient %d of %s computed twice", describeNode(n), which, key.family)
		}
		st.Outs[which], st.Ins[which] = out, ins
		pl.Vals[out].Def = si
		return nil
	}
	st := Step{Kind: key.family, Op: d, Outs: make([]int, size), Ins: make([][]int, size)}
	for i := range st.Outs {
		st.Outs[i] = -1
	}
	st.Outs[which], st.Ins[which] = out, ins
	if d.State != nil && kind != ops.OpEdgeSumGrad {
		fs, ok := c.fwdStep[d.State]
		if !ok {
			return fmt.Errorf("gpu: %s: its forward op is not computed before it", describeNode(n))
		}
		st.Aux = pl.Steps[fs].Aux
	}
	c.groups[key] = len(pl.Steps)
	pl.Vals[out].Def = len(pl.Steps)
	pl.Steps = append(pl.Steps, st)
	return nil
}

// fillGroups gives the members of gradient groups that the graph does not need a temporary
// of the right size, checks that every member reads only what is computed before the group's
// step or by the group itself, and adds the scratch buffers steps need.
func (c *compiler) fillGroups() error {
	pl := c.pl
	for si := range pl.Steps {
		st := &pl.Steps[si]
		if st.Kind == ops.OpBatchNormReluGrad { // the gradient through the ReLU, [rows, d]
			tmp := c.addVal(Value{Name: "ReLU gradient in " + pl.Vals[st.Outs[0]].Name, Elems: pl.Vals[st.Ins[0][3]].Elems})
			pl.Vals[tmp].Def = si
			st.Tmp = append(st.Tmp, tmp)
		}
		if len(st.Outs) < 2 {
			continue
		}
		if _, ok := groupSize[st.Kind]; ok || st.Kind == kernelMixGrad {
			needFirst := st.Kind == ops.OpBatchNormGrad || st.Kind == ops.OpBatchNormReluGrad || st.Kind == ops.OpGatedGrad ||
				st.Kind == ops.OpEdgeSumGrad || st.Kind == kernelMixGrad
			if needFirst && st.Ins[0] == nil {
				return fmt.Errorf("gpu: a %s group without its first member (%s)", st.Kind, pl.Vals[firstOut(st)].Name)
			}
			if st.Kind == kernelMixGrad && st.Ins[1] == nil {
				return fmt.Errorf("gpu: a kernel mix gradient without the weights' gradient (%s)", pl.Vals[firstOut(st)].Name)
			}
		}
		sizes, err := groupShapes(st, pl.Vals)
		if err != nil {
			return err
		}
		for w, o := range st.Outs {
			if o < 0 {
				st.Outs[w] = c.addVal(Value{Name: fmt.Sprintf("unused gradient %d of %s", w, st.Kind), Elems: sizes[w]})
				pl.Vals[st.Outs[w]].Def = si
			}
		}
	}
	return nil
}

func firstOut(st *Step) int {
	for _, o := range st.Outs {
		if o >= 0 {
			return o
		}
	}
	return 0
}

// checkArity checks what the executor assumes about a step's inputs.
func checkArity(kind string, which int, n *gorgonia.Node, ins []int, vals []Value) error {
	want := map[string]int{
		ops.OpGather: 1, ops.OpScatterAdd: 1, ops.OpSegmentSoftmax: 1, ops.OpSegmentSoftmaxGrad: 2,
		ops.OpBatchNorm: 3, ops.OpLayerNorm: 3, ops.OpLayerNormGrad: 2,
		ops.OpGated: 2, ops.OpEdgeSum: 3, ops.OpEdgeSumGrad: 1, ops.OpGaussian: 3, ops.OpGaussianGrad: 5,
		ops.OpKernelMix: 2, ops.OpKernelMixGradX: 2, ops.OpKernelMixGradW: 3,
		ops.OpHeadDot: 2, ops.OpHeadScale: 2, ops.OpMatMul: 2, ops.OpMatMulGradX: 2, ops.OpMatMulGradW: 2,
		ops.OpAddBias: 2, ops.OpColSum: 1, ops.OpAdd: 2, ops.OpRelu: 1, ops.OpReluGrad: 2,
		ops.OpDropout: 1, ops.OpDropoutGrad: 1, ops.OpMaskedL1: 3, ops.OpMaskedL1Grad: 4,
		ops.OpWeightedCE: 1, ops.OpWeightedCEGrad: 2,
		"+": 2, "-": 2, "⊙": 2, "÷": 2, "tanh": 1, "sigmoid": 1, "exp": 1, "abs": 1,
	}[kind]
	switch kind {
	case ops.OpBatchNormRelu: // (x, γ, β) or (x, γ, β, res)
		want = 3
		if len(ins) == 4 {
			want = 4
		}
	case ops.OpBatchNormGrad, ops.OpBatchNormReluGrad: // (x, γ, β, dy); (dx, γ); (dx, β)
		want = 4
		if which > 0 {
			want = 2
		}
	case ops.OpGatedGrad: // (ê, bh, out, g); (dê, bh)
		want = 4
		if which > 0 {
			want = 2
		}
	}
	if len(ins) != want {
		return fmt.Errorf("gpu: %s: %d inputs, the executor expects %d for %s", describeNode(n), len(ins), want, kind)
	}
	for _, i := range ins {
		if s := vals[i].Node.Shape(); len(s) > 2 {
			return fmt.Errorf("gpu: %s: input %s has rank %d", describeNode(n), describeNode(vals[i].Node), len(s))
		}
	}
	switch kind {
	case "+", "-", "⊙", "÷":
		a, b := vals[ins[0]], vals[ins[1]]
		if a.Elems != b.Elems && !a.Node.IsScalar() && !b.Node.IsScalar() {
			return fmt.Errorf("gpu: %s: operands of %d and %d elements; only equal shapes or a scalar operand run on the device", describeNode(n), a.Elems, b.Elems)
		}
	}
	return nil
}

// groupShapes returns the element count of every member output of a gradient group, from the
// inputs of a member the graph has.
func groupShapes(st *Step, vals []Value) ([]int, error) {
	ins := primary(st)
	sh := func(i int) tensor.Shape { return vals[ins[i]].Node.Shape() }
	switch st.Kind {
	case ops.OpBatchNormGrad, ops.OpBatchNormReluGrad: // (x, γ, β, dy)
		return []int{vals[ins[0]].Elems, vals[ins[1]].Elems, vals[ins[2]].Elems}, nil
	case ops.OpLayerNormGrad: // (γ, dy)
		return []int{vals[ins[1]].Elems, vals[ins[0]].Elems, vals[ins[0]].Elems}, nil
	case ops.OpGatedGrad: // (ê, bh, out, g): dê [M, d], dbh [N, d]
		return []int{st.Op.Src.Len() * sh(1)[1], vals[ins[1]].Elems}, nil
	case ops.OpEdgeSumGrad: // (g): both [rows, d]
		return []int{st.Op.Rows * sh(0)[1], st.Op.Rows * sh(0)[1]}, nil
	case ops.OpGaussianGrad: // (u, μ, 1/σ, w, g)
		return []int{vals[ins[0]].Elems, vals[ins[1]].Elems, vals[ins[2]].Elems}, nil
	case kernelMixGrad: // X (g [M, d], w [M, K]), W (x, g, w)
		x, w := st.Ins[1][0], st.Ins[1][2]
		return []int{vals[x].Elems, vals[w].Elems}, nil
	}
	return nil, fmt.Errorf("gpu: no shapes for group %s", st.Kind)
}

// primary returns the inputs the step's launcher reads: those of member 0 (which computes the
// others' results too), or of the first member the graph has.
func primary(st *Step) []int {
	for _, in := range st.Ins {
		if in != nil {
			return in
		}
	}
	return nil
}

// lifetimes sets every value's last reader and assigns activation slots with the planner the
// CPU executor uses too (exec.AssignSlots): at each step the values (and temporaries) it writes
// take free slots of their exact size, then the values whose last reader it is give theirs back,
// so no step reads and writes one buffer.
func (pl *Plan) lifetimes() error {
	end := len(pl.Steps)
	use := func(v, s int) {
		if s > pl.Vals[v].Last {
			pl.Vals[v].Last = s
		}
	}
	for si, st := range pl.Steps {
		own := map[int]bool{}
		for _, o := range st.Outs {
			own[o] = true
		}
		for w, ins := range st.Ins {
			for _, v := range ins {
				if own[v] {
					continue // a member copying out what the group computed
				}
				if pl.Vals[v].Src == FromStep && pl.Vals[v].Def >= si {
					return fmt.Errorf("gpu: %s reads %s, which is computed after it", pl.Vals[st.Outs[w]].Name, pl.Vals[v].Name)
				}
				use(v, si)
			}
		}
		for _, a := range append(append([]int(nil), st.Aux...), st.Tmp...) {
			use(a, si)
		}
		for _, o := range st.Outs {
			use(o, si)
		}
	}
	for _, n := range append(gorgonia.Nodes{pl.Net.Loss, pl.Net.Pred}, pl.Net.Grads...) {
		use(pl.byNode[n.ID()], end)
	}
	var lives []exec.Life
	var ids []int
	for i := range pl.Vals {
		v := &pl.Vals[i]
		if v.Src != FromStep {
			continue
		}
		if v.Def < 0 || v.Def >= end {
			return fmt.Errorf("gpu: %s is never computed", v.Name)
		}
		if v.Last < v.Def {
			v.Last = v.Def
		}
		lives = append(lives, exec.Life{Size: int64(max(v.Elems, 1)), Def: v.Def, Last: v.Last})
		ids = append(ids, i)
	}
	l, err := exec.AssignSlots(lives, end)
	if err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	for k, i := range ids {
		pl.Vals[i].Slot = l.Of[k]
	}
	pl.Slots = pl.Slots[:0]
	for _, s := range l.Slots {
		pl.Slots = append(pl.Slots, int(s.Size))
	}
	return nil
}

// Bytes is the device memory of the plan's activation slots.
func (pl *Plan) Bytes() int64 {
	var n int64
	for _, s := range pl.Slots {
		n += 4 * int64(s)
	}
	return n
}

// inputTensors maps the dense holders of in to themselves (keyed as graph values).
func inputTensors(in *nn.Inputs) map[gorgonia.Value]*tensor.Dense {
	m := map[gorgonia.Value]*tensor.Dense{}
	for _, t := range []*tensor.Dense{in.NodeFloat, in.EdgeFloat, in.SPValue, in.Adj, in.Lap, in.Y, in.GraphW, in.DegSrc} {
		if t != nil {
			m[t] = t
		}
	}
	return m
}

func allZero(d *tensor.Dense) bool {
	switch d.Dtype() {
	case tensor.Float32:
		for _, v := range d.Float32s() {
			if v != 0 {
				return false
			}
		}
		return true
	case tensor.Float64:
		for _, v := range d.Float64s() {
			if v != 0 {
				return false
			}
		}
		return true
	}
	return false
}
