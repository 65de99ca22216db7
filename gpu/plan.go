package gpu

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/rewiregnn/rewiregnn/nn"
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
	Indexes   []*nn.Index
	IndexRows []int
	Masks     []*nn.Mask
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
	Param string        // FromParam: the parameter's name
	Host  *tensor.Dense // FromInput: the holder refilled per batch; FromStatic: the value
	Const float32       // FromStatic scalars
	Slot  int           // FromStep: activation slot; -1 otherwise
	Def   int           // FromStep: the step writing it
	Last  int           // the last step reading it (len(Steps) when the host reads it after the run)
}

// Step is one launch group: a project op, a Gorgonia operator, or a group of gradient ops of
// one op that a single fused launcher computes together (batch and layer norm, the gated
// aggregation, the Gaussian weights, the kernel mix).
type Step struct {
	Kind string      // nn.Op* kind, or "+", "-", "⊙", "÷", "tanh", "sigmoid", "exp", "abs"
	Op   nn.DeviceOp // attributes (zero for Gorgonia's operators)
	// Outs[w] is the value gradient w of a fused group writes (Which), or the single output;
	// a member the graph does not need is a temporary.
	Outs []int
	// Ins[w] are the input value ids of member w (for single ops Ins[0]).
	Ins [][]int
	// Aux are temporaries a forward op keeps for its gradient ops (batch and layer norm: x̂,
	// mean and 1/σ; gated aggregation: η and the denominators), or that a gradient step shares
	// with its forward step; Fwd is the forward output value a gradient step reads (-1 if none).
	Aux []int
	Fwd int
}

// Kinds a plan can contain and the executor runs; a model that gains another op fails Compile
// with an error naming it (and TestEveryModelOpHasAKernel).
var kinds = map[string]bool{
	nn.OpGather: true, nn.OpScatterAdd: true, nn.OpSegmentSoftmax: true, nn.OpSegmentSoftmaxGrad: true,
	nn.OpBatchNorm: true, nn.OpBatchNormGrad: true, nn.OpLayerNorm: true, nn.OpLayerNormGrad: true,
	nn.OpGated: true, nn.OpGatedGrad: true, nn.OpGaussian: true, nn.OpGaussianGrad: true,
	nn.OpKernelMix: true, nn.OpKernelMixGradX: true, nn.OpKernelMixGradW: true, kernelMixGrad: true,
	nn.OpHeadDot: true, nn.OpHeadScale: true, nn.OpMatMul: true, nn.OpMatMulGradX: true, nn.OpMatMulGradW: true,
	nn.OpAddBias: true, nn.OpColSum: true, nn.OpAdd: true, nn.OpRelu: true, nn.OpReluGrad: true,
	nn.OpDropout: true, nn.OpDropoutGrad: true, nn.OpMaskedL1: true, nn.OpMaskedL1Grad: true,
	nn.OpWeightedCE: true, nn.OpWeightedCEGrad: true,
	"+": true, "-": true, "⊙": true, "÷": true, "tanh": true, "sigmoid": true, "exp": true, "abs": true,
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
	nn.OpBatchNormGrad: 3, nn.OpLayerNormGrad: 3, nn.OpGatedGrad: 2, nn.OpGaussianGrad: 3,
	nn.OpKernelMixGradX: 2, nn.OpKernelMixGradW: 2,
}

// opOf classifies a node's op: a project op (described by nn.Describe), a Gorgonia
// element-wise operator, or a constant; ok is false for anything else.
func opOf(n *gorgonia.Node) (kind string, d nn.DeviceOp, constant bool, ok bool) {
	op := n.Op()
	if d, ok := nn.Describe(op); ok {
		return d.Kind, d, false, true
	}
	t := reflect.TypeOf(op)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Name() {
	case "constantScalar", "constantTensor":
		return "const", d, true, true
	case "elemBinOp", "elemUnaryOp":
		k, _, _ := strings.Cut(op.String(), " ")
		return k, d, false, kinds[k]
	}
	return fmt.Sprintf("%v (%T)", op, op), d, false, false
}

// children returns n's inputs in argument order (a node used twice appears twice).
func children(g *gorgonia.ExprGraph, n *gorgonia.Node) []*gorgonia.Node {
	var out []*gorgonia.Node
	it := g.From(n.ID())
	for it.Next() {
		out = append(out, it.Node().(*gorgonia.Node))
	}
	return out
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
	// the CPU). This drops Gorgonia's gradients of constants (e.g. of the attention scale).
	roots := gorgonia.Nodes{net.Loss, net.Pred}
	roots = append(roots, net.Grads...)
	for _, n := range order {
		if n.Op() != nil {
			if d, ok := nn.Describe(n.Op()); ok && d.Kind == nn.OpBatchNorm {
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
	pl := &Plan{Net: net, byNode: map[int64]int{}}
	params := map[int64]string{}
	for _, n := range net.B.Learn {
		params[n.ID()] = n.Name()
	}
	inputs := inputTensors(net.In)
	rows := map[*nn.Index]int{}
	masks := map[*nn.Mask]bool{}
	bound := func(ix *nn.Index, n int) {
		if ix == nil {
			return
		}
		if r, ok := rows[ix]; !ok || n < r {
			rows[ix] = n
		}
	}
	type groupKey struct {
		family string
		state  any
		a, b   int64
	}
	groups := map[groupKey]int{} // → step index
	fwdStep := map[any]int{}     // forward state → step index
	fwdOut := map[any]int{}      // forward state → output value id
	addVal := func(v Value) int {
		v.Slot = -1
		v.Last = -1
		pl.Vals = append(pl.Vals, v)
		return len(pl.Vals) - 1
	}
	for _, n := range order {
		if !need[n.ID()] {
			continue
		}
		if n.Op() == nil {
			v := Value{Node: n, Name: n.Name(), Elems: elems(n)}
			switch {
			case params[n.ID()] != "":
				name := params[n.ID()]
				t, ok := p.T[name]
				if !ok || n.Value() != gorgonia.Value(t) {
					return nil, fmt.Errorf("gpu: %s: parameter %q is not the tensor of the parameter set", describeNode(n), name)
				}
				v.Src, v.Param = FromParam, name
			case inputs[n.Value()] != nil:
				v.Src, v.Host = FromInput, inputs[n.Value()]
			default:
				d, ok := n.Value().(*tensor.Dense)
				if !ok || !allZero(d) {
					return nil, fmt.Errorf("gpu: %s is neither a parameter, an input of nn.Inputs nor a zero matrix: the executor does not know how to fill it", describeNode(n))
				}
				v.Src, v.Host = FromStatic, d
			}
			if d, ok := v.Host, v.Host != nil; ok && d.Dtype() != tensor.Float32 {
				return nil, fmt.Errorf("gpu: %s is %v, want float32", describeNode(n), d.Dtype())
			}
			pl.byNode[n.ID()] = addVal(v)
			continue
		}
		kind, d, constant, ok := opOf(n)
		if !ok {
			return nil, fmt.Errorf("gpu: %s: op %s has no device kernel", describeNode(n), kind)
		}
		if constant {
			v := Value{Node: n, Name: fmt.Sprint(n.Op()), Src: FromStatic, Elems: elems(n)}
			switch c := n.Value().(type) {
			case *tensor.Dense:
				if c.Dtype() != tensor.Float32 {
					return nil, fmt.Errorf("gpu: %s is %v, want float32", describeNode(n), c.Dtype())
				}
				v.Host = c
			default:
				f, ok := c.Data().(float32)
				if !ok {
					return nil, fmt.Errorf("gpu: %s: constant of type %T, want float32", describeNode(n), c.Data())
				}
				v.Const = f
			}
			pl.byNode[n.ID()] = addVal(v)
			continue
		}
		var ins []int
		for _, c := range children(net.B.G, n) {
			id, ok := pl.byNode[c.ID()]
			if !ok {
				return nil, fmt.Errorf("gpu: %s: input %s is not computed before it", describeNode(n), describeNode(c))
			}
			ins = append(ins, id)
		}
		out := addVal(Value{Node: n, Name: describeNode(n), Src: FromStep, Elems: elems(n)})
		pl.byNode[n.ID()] = out
		if err := checkArity(kind, n, ins, pl.Vals); err != nil {
			return nil, err
		}
		// index and mask bounds
		shape := func(i int) tensor.Shape { return pl.Vals[ins[i]].Node.Shape() }
		switch kind {
		case nn.OpGather:
			bound(d.Index, shape(0)[0])
		case nn.OpScatterAdd, nn.OpSegmentSoftmax, nn.OpSegmentSoftmaxGrad:
			bound(d.Index, d.Rows)
		case nn.OpGated, nn.OpGatedGrad:
			bound(d.Dst, d.Rows)
			i := 1 // bh
			if kind == nn.OpGatedGrad {
				i = 0
			}
			bound(d.Src, shape(i)[0])
		case nn.OpWeightedCE, nn.OpWeightedCEGrad:
			bound(d.Index, shape(0)[1])
			if d.Index.W == nil {
				return nil, fmt.Errorf("gpu: %s: labels %q carry no weights", describeNode(n), d.Index.Name)
			}
		}
		if d.Mask != nil {
			masks[d.Mask] = true
		}
		// gradient groups
		if size, ok := groupSize[kind]; ok {
			family, which := kind, d.Which
			key := groupKey{family: family, state: d.State}
			switch kind {
			case nn.OpKernelMixGradX: // (g, w)
				family, which = kernelMixGrad, 0
				key = groupKey{family: family, a: pl.Vals[ins[0]].Node.ID(), b: pl.Vals[ins[1]].Node.ID()}
			case nn.OpKernelMixGradW: // (x, g, w)
				family, which = kernelMixGrad, 1
				key = groupKey{family: family, a: pl.Vals[ins[1]].Node.ID(), b: pl.Vals[ins[2]].Node.ID()}
			case nn.OpGaussianGrad: // (u, μ, 1/σ, w, g): one group per forward output and gradient
				key.a, key.b = pl.Vals[ins[3]].Node.ID(), pl.Vals[ins[4]].Node.ID()
			default: // (γ or bh, upstream gradient)
				key.a = pl.Vals[ins[1]].Node.ID()
			}
			if which < 0 || which >= size {
				return nil, fmt.Errorf("gpu: %s: gradient %d of a group of %d", describeNode(n), which, size)
			}
			if si, ok := groups[key]; ok {
				st := &pl.Steps[si]
				if st.Outs[which] >= 0 {
					return nil, fmt.Errorf("gpu: %s: gradient %d of %s computed twice", describeNode(n), which, family)
				}
				st.Outs[which], st.Ins[which] = out, ins
				pl.Vals[out].Def = si
				continue
			}
			st := Step{Kind: kind, Op: d, Outs: make([]int, size), Ins: make([][]int, size), Fwd: -1}
			if family == kernelMixGrad {
				st.Kind = family
			}
			for i := range st.Outs {
				st.Outs[i] = -1
			}
			st.Outs[which], st.Ins[which] = out, ins
			if d.State != nil {
				fs, ok := fwdStep[d.State]
				if !ok {
					return nil, fmt.Errorf("gpu: %s: its forward op is not computed before it", describeNode(n))
				}
				st.Aux = pl.Steps[fs].Aux
				if kind == nn.OpGatedGrad {
					st.Fwd = fwdOut[d.State]
				}
			}
			groups[key] = len(pl.Steps)
			pl.Vals[out].Def = len(pl.Steps)
			pl.Steps = append(pl.Steps, st)
			continue
		}
		st := Step{Kind: kind, Op: d, Outs: []int{out}, Ins: [][]int{ins}, Fwd: -1}
		switch kind { // forward results kept for the gradient ops
		case nn.OpBatchNorm:
			rows, cols := shape(0)[0], shape(0)[1]
			st.Aux = []int{addVal(Value{Name: "x̂ of " + n.Name(), Elems: rows * cols}), addVal(Value{Name: "mean", Elems: cols}), addVal(Value{Name: "1/σ", Elems: cols})}
		case nn.OpLayerNorm:
			rows, cols := shape(0)[0], shape(0)[1]
			st.Aux = []int{addVal(Value{Name: "x̂", Elems: rows * cols}), addVal(Value{Name: "1/σ", Elems: rows})}
		case nn.OpGated:
			m, dd := shape(0)[0], shape(0)[1]
			st.Aux = []int{addVal(Value{Name: "η", Elems: m * dd}), addVal(Value{Name: "Σ η + ε", Elems: d.Rows * dd})}
		}
		for _, a := range st.Aux {
			pl.Vals[a].Def = len(pl.Steps)
		}
		if d.State != nil {
			fwdStep[d.State] = len(pl.Steps)
			fwdOut[d.State] = out
		}
		pl.Vals[out].Def = len(pl.Steps)
		pl.Steps = append(pl.Steps, st)
	}
	// Members a group needs but the graph does not: temporaries of the right size.
	for si := range pl.Steps {
		st := &pl.Steps[si]
		if len(st.Outs) < 2 {
			continue
		}
		sizes, err := groupShapes(st, pl.Vals)
		if err != nil {
			return nil, err
		}
		for w, o := range st.Outs {
			if o < 0 {
				st.Outs[w] = addVal(Value{Name: fmt.Sprintf("unused gradient %d of %s", w, st.Kind), Elems: sizes[w]})
				pl.Vals[st.Outs[w]].Def = si
			}
		}
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
	for _, n := range order { // deterministic order of indexes and masks
		if !need[n.ID()] || n.Op() == nil {
			continue
		}
		if d, ok := nn.Describe(n.Op()); ok {
			for _, ix := range []*nn.Index{d.Index, d.Src, d.Dst} {
				if r, ok := rows[ix]; ok && ix != nil {
					pl.Indexes, pl.IndexRows = append(pl.Indexes, ix), append(pl.IndexRows, r)
					delete(rows, ix)
				}
			}
			if d.Mask != nil && masks[d.Mask] {
				pl.Masks = append(pl.Masks, d.Mask)
				delete(masks, d.Mask)
			}
		}
	}
	return pl, nil
}

// checkArity checks what the executor assumes about a step's inputs.
func checkArity(kind string, n *gorgonia.Node, ins []int, vals []Value) error {
	want := map[string]int{
		nn.OpGather: 1, nn.OpScatterAdd: 1, nn.OpSegmentSoftmax: 1, nn.OpSegmentSoftmaxGrad: 2,
		nn.OpBatchNorm: 3, nn.OpBatchNormGrad: 2, nn.OpLayerNorm: 3, nn.OpLayerNormGrad: 2,
		nn.OpGated: 2, nn.OpGatedGrad: 2, nn.OpGaussian: 3, nn.OpGaussianGrad: 5,
		nn.OpKernelMix: 2, nn.OpKernelMixGradX: 2, nn.OpKernelMixGradW: 3,
		nn.OpHeadDot: 2, nn.OpHeadScale: 2, nn.OpMatMul: 2, nn.OpMatMulGradX: 2, nn.OpMatMulGradW: 2,
		nn.OpAddBias: 2, nn.OpColSum: 1, nn.OpAdd: 2, nn.OpRelu: 1, nn.OpReluGrad: 2,
		nn.OpDropout: 1, nn.OpDropoutGrad: 1, nn.OpMaskedL1: 3, nn.OpMaskedL1Grad: 4,
		nn.OpWeightedCE: 1, nn.OpWeightedCEGrad: 2,
		"+": 2, "-": 2, "⊙": 2, "÷": 2, "tanh": 1, "sigmoid": 1, "exp": 1, "abs": 1,
	}[kind]
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

// groupShapes returns the element count of every member output of a fused gradient group,
// from the inputs of a member the graph has.
func groupShapes(st *Step, vals []Value) ([]int, error) {
	var ins []int
	for _, in := range st.Ins {
		if in != nil {
			ins = in
			break
		}
	}
	sh := func(i int) tensor.Shape { return vals[ins[i]].Node.Shape() }
	switch st.Kind {
	case nn.OpBatchNormGrad, nn.OpLayerNormGrad: // (γ, dy)
		d := sh(0)[0]
		return []int{vals[ins[1]].Elems, d, d}, nil
	case nn.OpGatedGrad: // (bh, g): dê [M, d], dbh [N, d]
		return []int{st.Op.Src.Len() * sh(0)[1], vals[ins[0]].Elems}, nil
	case nn.OpGaussianGrad: // (u, μ, 1/σ, w, g)
		return []int{vals[ins[0]].Elems, vals[ins[1]].Elems, vals[ins[2]].Elems}, nil
	case kernelMixGrad:
		if st.Ins[0] != nil { // GradX (g [M, d], w [M, K]) → dx [M, K·d], dw [M, K]
			return []int{vals[st.Ins[0][0]].Elems * sh(1)[1], vals[st.Ins[0][1]].Elems}, nil
		}
		// GradW (x, g, w)
		return []int{vals[ins[0]].Elems, vals[ins[2]].Elems}, nil
	}
	return nil, fmt.Errorf("gpu: no shapes for group %s", st.Kind)
}

// lifetimes sets every value's last reader and assigns activation slots: at each step the
// values (and temporaries) it writes take free slots of their exact size, then the values whose
// last reader it is give theirs back, so no step reads and writes one buffer.
func (pl *Plan) lifetimes() error {
	end := len(pl.Steps)
	use := func(v, s int) {
		if s > pl.Vals[v].Last {
			pl.Vals[v].Last = s
		}
	}
	for si, st := range pl.Steps {
		for w, ins := range st.Ins {
			if ins == nil {
				continue
			}
			for _, v := range ins {
				if pl.Vals[v].Src == FromStep && pl.Vals[v].Def >= si {
					return fmt.Errorf("gpu: %s reads %s, which is computed after it", pl.Vals[st.Outs[w]].Name, pl.Vals[v].Name)
				}
				use(v, si)
			}
		}
		for _, a := range st.Aux {
			use(a, si)
		}
		if st.Fwd >= 0 {
			use(st.Fwd, si)
		}
		for _, o := range st.Outs {
			use(o, si)
		}
	}
	for _, n := range append(gorgonia.Nodes{pl.Net.Loss, pl.Net.Pred}, pl.Net.Grads...) {
		use(pl.byNode[n.ID()], end)
	}
	// Slots.
	free := map[int][]int{} // elements → free slots
	starts := make([][]int, end+1)
	ends := make([][]int, end+1)
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
		starts[v.Def] = append(starts[v.Def], i)
		ends[v.Last] = append(ends[v.Last], i)
	}
	for s := 0; s <= end; s++ {
		for _, i := range starts[s] {
			v := &pl.Vals[i]
			n := max(v.Elems, 1)
			if l := free[n]; len(l) > 0 {
				v.Slot = l[len(l)-1]
				free[n] = l[:len(l)-1]
			} else {
				v.Slot = len(pl.Slots)
				pl.Slots = append(pl.Slots, n)
			}
		}
		for _, i := range ends[s] {
			n := max(pl.Vals[i].Elems, 1)
			free[n] = append(free[n], pl.Vals[i].Slot)
		}
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
