package gpuexec

import (
	"fmt"
	"slices"

	"github.com/rewiregnn/rewiregnn/gpuopt"
	"github.com/rewiregnn/rewiregnn/prog"
)

// A Plan is a program (one shape bucket, training or evaluation) laid out for a device: the
// nodes it must compute in order, grouped into steps (one launcher call each), where every
// value lives, and which activation buffers (slots) can be shared. Building a plan needs no
// GPU; the executor runs it.
type Plan struct {
	Prog  *prog.Program
	Vals  []Value
	Steps []Step
	// Slots are the activation buffers, in float32 elements (two values stored in bf16 that are
	// live at once may share one: Value.SlotByte). A slot is shared by values whose
	// lifetimes do not overlap (a value is live from the step that writes it to the last step
	// that reads it; outputs, losses and gradients until the end).
	Slots []int
	// IndexRows[i] is the bound every entry of the program's index input i must stay below
	// (checked before upload; -1: no step reads it). Masks lists the mask inputs steps read.
	IndexRows []int
	Masks     []bool
	Loss      int      // value id of the loss
	Pred      int      // value id of the prediction
	Grads     []int    // value ids of the parameter gradients, for GradNames
	GradNames []string // parameter names
	// TableLen is the size of the pointer table the batched steps read their operands'
	// addresses from (Step.Table; 0 without batched steps).
	TableLen int
	// GradElems is the size of the gradient buffer: the parameter gradients the steps compute,
	// one after another in the order of GradNames (FromGrads), so that the parameters' Adam
	// update is one launch over one arena (Exec.AddParams).
	GradElems int
}

// Source says where a value comes from.
type Source int

const (
	FromStep   Source = iota // computed by a step, in an activation slot
	FromParam                // a trainable tensor, resident on the device
	FromInput                // a dense input of the program, uploaded per batch
	FromStatic               // fixed for the program: a constant, uploaded once
	NotRun                   // computed by a node no output needs: left out
	FromGrads                // a parameter's gradient computed by a step, at Off in the gradient buffer
	FromResult               // the loss (Off 0) or the prediction (Off 1) computed by a step, in the result buffer
)

func (s Source) String() string {
	return [...]string{"step", "parameter", "input", "static", "not run", "gradients", "result"}[s]
}

// Value is one program value's tensor (or a temporary a step needs). Plan values 0 to
// len(Prog.Vals)-1 are the program's values, in order; temporaries follow.
type Value struct {
	Name  string
	Src   Source
	Elems int       // float32 elements
	Rows  int       // as a matrix: rows (1 for a vector or scalar) …
	Cols  int       // … and columns
	Shape []int     // the program value's shape (nil for a scalar or a temporary)
	Param string    // FromParam: the parameter's name
	Host  []float32 // FromStatic: the contents
	Slot  int       // FromStep: activation slot; -1 otherwise
	Off   int       // FromGrads, FromResult: the offset in its buffer, in elements
	// BF16: the value is stored in bf16, 2 bytes an element (Options.BF16, storeBF16); every
	// step reading or writing it knows (its kernels' bf16 flags). SlotByte is where it lies in
	// its slot, in bytes: 0, or 2·Elems for the second of two bf16 values sharing a slot of
	// their Elems float32s (slotGroups).
	BF16     bool
	SlotByte int
	Def      int // FromStep, FromGrads, FromResult: the step writing it
	Last     int // the last step reading it (len(Steps) when the host reads it after the run)
}

// Step is one launch group: a program node, or the gradient nodes of one op that one pass
// computes together (batch and layer norm, the gated aggregation, the edge sum, the Gaussian
// weights, the kernel mix).
type Step struct {
	Kind prog.Op   // the op (for the kernel mix's gradients, KernelMixGradX runs both)
	Node prog.Node // attributes (of the group's first member)
	// Outs[w] is the value gradient w of a fused group writes (Which), or the single output;
	// a member the program does not need is a temporary.
	Outs []int
	// Ins[w] are the input value ids of member w (for single ops Ins[0]); a member may read
	// another member's output (the ops that copy out what the first one computed).
	Ins [][]int
	// Aux are buffers a forward op keeps for its gradient ops (batch norm: the mean and 1/σ;
	// layer norm: x̂ and 1/σ; gated aggregation: the denominators), shared with its gradient
	// step.
	Aux []int
	// Acc: the step adds its result into its output, which holds the gradient sum the step's
	// result is the last term of (foldSums); the output is written by an earlier step first.
	Acc bool
	// Bias[k], where set (≥ 0), is a bias [d] the step adds to its input k before using it, in
	// place of the AddBias step that computed that input (foldBiases): an edge sum's three
	// operands, an addition's two. Nil for none.
	Bias []int
	// Batch: the step's members (Ins[w] → Outs[w], one kind and shape) run as one batched
	// launch (batchSteps), their operands' addresses at entry Table of the pointer table.
	Batch bool
	Table int
	// Fills, where not nil, makes the step a fill step (prefill): Outs[i] are filled with the
	// bits Fills[i], all in one launch, for the accumulating steps after it (Prefilled), whose
	// launchers then add into them without filling them first.
	Fills     []uint32
	Prefilled bool
	// Raw: a gated aggregation leaving its sums undivided, or its gradient step reading them so
	// (foldDivs); Div[k], where set (≥ 0), is the buffer of denominators an addition divides its
	// operand k by first (only k = 1).
	Raw bool
	Div []int
	// Stats, where set, makes the step take a batch norm's training statistics of its output in
	// its own pass (foldStats; its Aux then holds that batch norm's mean and 1/σ), and
	// StatsDone marks that batch norm, which then only normalises in training.
	Stats     *FoldedStats
	StatsDone bool
	// WithGrad: an element-wise loss step (L1, BCE) computing its gradient too (member 1:
	// foldLossGrad).
	WithGrad bool
	// Scatter: a gated aggregation's gradient step that also scatters its final dê along its
	// src and dst into the gradients of the edge sum that computed ê, Outs[2] and Outs[3]
	// ([rows, d] each; members 2 and 3, the edge sum gradient's: foldEdgeScatter).
	Scatter bool
	// BN, where set, makes a gated aggregation's gradient step compute dê's first term as the
	// dx of the batch norm reading ê (foldBNDx; its values are in Aux too, for their
	// lifetimes), and SumsOnly marks that batch norm's gradient step, which then writes its
	// column sums (BN.Tot) as its member 0, in dx's place.
	BN       *FoldedBN
	SumsOnly bool
	// Gate, where set, makes an edge sum step also compute the gated aggregation that reads its
	// output, in place of that aggregation's step (foldGate; its values are in Aux too, for
	// their lifetimes).
	Gate *FoldedGate
}

// fused gradient groups: the ops whose members one launcher computes together, and the number
// of members (the kernel mix's two gradient ops are one group of two, keyed by their inputs).
func groupSize(o prog.Op) int {
	switch o {
	case prog.KernelMixGradX, prog.KernelMixGradW:
		return 2
	}
	return o.Spec().Members
}

// Compile lays out a program with the default options (gpuopt.Default: float32, every edge
// fold).
func Compile(p *prog.Program) (*Plan, error) { return CompileWith(p, gpuopt.Default()) }

// CompileWith lays out a program with the options o: GatedGCN's edge folds o.EdgeFolds
// (gpu.edge_folds: scatter, the edge sum's gradient in the gated gradient's pass, foldEdgeScatter;
// bndx, the edges' batch norm's dx there, foldBNDx; gate, the gated aggregation in the edge sum's
// pass, foldGate), and under train.precision bf16 GatedGCN's edge sums ê stored in bf16
// (storeBF16); every other value, and all arithmetic, stays float32.
func CompileWith(p *prog.Program, o gpuopt.Options) (*Plan, error) {
	if p.Loss < 0 || p.Pred < 0 {
		return nil, fmt.Errorf("gpu: program has no loss or prediction")
	}
	need := p.Needed()
	c := &compiler{pl: &Plan{Prog: p, Masks: make([]bool, len(p.Masks))}, groups: map[groupKey]int{}, fwdStep: map[int]int{}}
	for v := range p.Vals { // plan values 0 … len(p.Vals)-1 are the program's
		if err := c.value(v, need); err != nil {
			return nil, err
		}
	}
	for i := range p.Nodes {
		if !need[i] {
			continue
		}
		if err := c.node(i); err != nil {
			return nil, err
		}
	}
	pl := c.pl
	pl.IndexRows = p.IndexBounds(need)
	if err := c.fillGroups(); err != nil {
		return nil, err
	}
	pl.foldSums()
	pl.foldBiases()
	pl.foldDivs()
	pl.foldStats()
	pl.foldLossGrad()
	edges := o.EdgeFolds
	if edges.Scatter {
		pl.foldEdgeScatter()
	}
	pl.gradBuffer()
	pl.resultBuffer(p.Loss, p.Pred)
	pl.batchSteps()
	if edges.BNDx {
		pl.foldBNDx()
	}
	pl.prefill()
	if edges.Gate {
		pl.foldGate()
	}
	pl.layoutTable()
	if o.Precision.Info().BF16EdgeSums {
		pl.storeBF16()
	}
	if err := pl.lifetimes(); err != nil {
		return nil, err
	}
	pl.Loss, pl.Pred, pl.Grads, pl.GradNames = p.Loss, p.Pred, p.Grads, p.GradNames
	return pl, nil
}

// foldSums folds gradient sums into the steps that compute a term of them, which saves the
// sum's launch and its buffer: a step s = Σ(a, b) whose b is the dx of a product's step P (or
// the dê of a gated aggregation's gradient step: Step.canAdd), read by that sum alone, and whose a is computed before P and read after P by the sum
// alone, becomes P adding its dx into a's buffer (Step.Acc: one product with β = 1), and every
// step reading s reads a. A chain Σ(Σ(Σ(a, b₁), b₂), b₃) folds into three products adding
// into a. Sums the host reads (program outputs) are left as they are.
func (pl *Plan) foldSums() { pl.foldAll(pl.foldSum) }

// foldAll applies fold, which folds one step away and reports whether it found one, until it
// finds none, setting every value's defining step again after each. fold is given the values
// the host reads, which no fold may remove.
func (pl *Plan) foldAll(fold func(outs map[int]bool) bool) {
	outs := map[int]bool{}
	for _, v := range pl.Prog.Outputs() {
		outs[v] = true
	}
	for fold(outs) {
		pl.redefine()
	}
}

// foldSum folds the first sum it can and reports whether it found one.
func (pl *Plan) foldSum(outs map[int]bool) bool {
	readers := pl.readers()
	for si := range pl.Steps {
		st := &pl.Steps[si]
		if st.Kind != prog.GradSum || len(st.Ins[0]) != 2 || outs[st.Outs[0]] {
			continue
		}
		for k := range 2 { // the sum is commutative: either operand may be the product's
			a, b := st.Ins[0][1-k], st.Ins[0][k]
			if p, ok := pl.foldable(si, a, b, readers); ok {
				pl.addInto(si, p, a)
				return true
			}
		}
	}
	return false
}

// foldable reports whether sum step si's operand b is a product's dx that can be added into
// its operand a, and returns the product's step.
func (pl *Plan) foldable(si, a, b int, readers map[int][]int) (int, bool) {
	va, vb := &pl.Vals[a], &pl.Vals[b]
	if va.Src != FromStep || vb.Src != FromStep || va.Elems != vb.Elems || a == b {
		return 0, false
	}
	p := vb.Def
	if !pl.Steps[p].canAdd(b) {
		return 0, false
	}
	// b's readers besides P itself (whose other members may name what member 0 computes)
	if r := slices.DeleteFunc(slices.Clone(readers[b]), func(r int) bool { return r == p }); len(r) != 1 || r[0] != si || va.Def >= p {
		return 0, false
	}
	for _, r := range readers[a] {
		if r != si && r >= p { // a step at or after P (other than the sum) reads a
			return 0, false
		}
	}
	return p, true
}

// canAdd reports whether the step can add its output b into a buffer that holds a sum's other
// term, instead of writing it (Step.Acc): a product's dx (one cuBLAS product with β = 1), the
// gated aggregation's dê (its backward kernel adds it).
func (st *Step) canAdd(b int) bool {
	if st.Acc || st.Batch || st.Outs[0] != b {
		return false
	}
	switch st.Kind {
	case prog.MatMulGradX:
		return len(st.Outs) == 1
	case prog.GatedAggregateGrad:
		return true
	}
	return false
}

// addInto makes step p add into a and removes sum step si, whose readers read a instead.
func (pl *Plan) addInto(si, p, a int) {
	s, b := pl.Steps[si].Outs[0], pl.Steps[p].Outs[0]
	pl.Steps[p].Outs[0], pl.Steps[p].Acc = a, true
	for _, ins := range pl.Steps[p].Ins { // P's members naming b now name the buffer it adds into
		for j, v := range ins {
			if v == b {
				ins[j] = a
			}
		}
	}
	pl.Vals[b].Src, pl.Vals[s].Src = NotRun, NotRun
	pl.Steps = slices.Delete(pl.Steps, si, si+1)
	for i := range pl.Steps {
		for _, ins := range pl.Steps[i].Ins {
			for j, v := range ins {
				if v == s {
					ins[j] = a
				}
			}
		}
	}
}

// foldBiases folds a bias add into the steps that read its result: an AddBias step whose
// output is read (not by the host) only by steps that can add a bias to that input themselves
// goes, and each of those steps adds the bias to the AddBias's input (Step.Bias; the kernels add
// it first, so the bits are the same). GatedGCN's C, D and E products feed the edge sum, A's
// the residual sum of its layer, B's the gated aggregation and its gradient; an MLP's hidden
// layers feed a ReLU.
func (pl *Plan) foldBiases() { pl.foldAll(pl.foldBias) }

// foldBias folds the first bias add it can and reports whether it found one.
func (pl *Plan) foldBias(outs map[int]bool) bool {
	readers := pl.readers()
	for si := range pl.Steps {
		st := &pl.Steps[si]
		o := st.Outs[0]
		if st.Kind != prog.AddBias || len(st.Ins[0]) != 2 || outs[o] || pl.Vals[o].Src != FromStep || len(readers[o]) == 0 {
			continue
		}
		if slices.ContainsFunc(readers[o], func(r int) bool { return pl.biasSlot(&pl.Steps[r], o) < 0 }) {
			continue
		}
		x, bias := st.Ins[0][0], st.Ins[0][1]
		for _, r := range readers[o] {
			c := &pl.Steps[r]
			k := pl.biasSlot(c, o)
			if c.Bias == nil {
				c.Bias = slices.Repeat([]int{-1}, len(c.Ins[0]))
			}
			for _, ins := range c.Ins {
				for j, v := range ins {
					if v == o {
						ins[j] = x
					}
				}
			}
			c.Bias[k] = bias
		}
		pl.Vals[o].Src = NotRun
		pl.Steps = slices.Delete(pl.Steps, si, si+1)
		return true
	}
	return false
}

// biasSlot returns the input of step c (in its launcher's inputs, Ins[0]) at which it could add
// a bias to value o itself, or -1: an edge sum's operands, an element-wise addition's two
// operands of the output's shape (not the scalar forms), a ReLU's input, the gated
// aggregation's Bh, forward and backward (whose launcher reads member 0's inputs). o must be read there once, and
// nowhere else by a single-member step.
func (pl *Plan) biasSlot(c *Step, o int) int {
	k := slices.Index(c.Ins[0], o)
	if k < 0 || slices.Index(c.Ins[0][k+1:], o) >= 0 || (c.Bias != nil && c.Bias[k] >= 0) || c.Batch {
		return -1
	}
	ok := false
	switch c.Kind {
	case prog.EdgeSum:
		ok = len(c.Ins) == 1
	case prog.Add:
		out := pl.Vals[c.Outs[0]]
		a, b := pl.Vals[c.Ins[0][0]], pl.Vals[c.Ins[0][1]]
		ok = len(c.Ins) == 1 && out.Elems > 1 && a.Elems == out.Elems && b.Elems == out.Elems
	case prog.GatedAggregate:
		ok = len(c.Ins) == 1 && k == 1
	case prog.Relu:
		ok = len(c.Ins) == 1 && pl.Vals[c.Outs[0]].Elems == pl.Vals[o].Elems
	case prog.GatedAggregateGrad: // every member reads (ê, Bh, out, g)
		ok = k == 1 && !slices.ContainsFunc(c.Ins[1:], func(in []int) bool { return in != nil && slices.Index(in, o) != 1 })
	}
	if !ok {
		return -1
	}
	return k
}

// readers returns, by value, the steps reading it, in order.
func (pl *Plan) readers() map[int][]int {
	readers := map[int][]int{}
	for si, st := range pl.Steps {
		read := slices.Concat(st.Ins...)
		for _, b := range slices.Concat(st.Bias, st.Div) {
			if b >= 0 {
				read = append(read, b)
			}
		}
		for _, v := range read {
			if r := readers[v]; len(r) == 0 || r[len(r)-1] != si {
				readers[v] = append(r, si)
			}
		}
	}
	return readers
}

// redefine sets every computed value's Def to the first step writing it (after steps moved).
func (pl *Plan) redefine() {
	computed := func(s Source) bool { return s == FromStep || s == FromGrads || s == FromResult }
	for i := range pl.Vals {
		if computed(pl.Vals[i].Src) {
			pl.Vals[i].Def = -1
		}
	}
	for si, st := range pl.Steps {
		for _, vs := range [][]int{st.Outs, st.Aux} {
			for _, v := range vs {
				if v >= 0 && computed(pl.Vals[v].Src) && pl.Vals[v].Def < 0 {
					pl.Vals[v].Def = si
				}
			}
		}
	}
}

// resultBuffer places the loss and the prediction one after the other in the result buffer,
// which the host reads back in one transfer, so no copies are needed.
func (pl *Plan) resultBuffer(loss, pred int) {
	if loss == pred || pl.Vals[loss].Src != FromStep || pl.Vals[pred].Src != FromStep || pl.Vals[loss].Elems != 1 {
		return
	}
	pl.Vals[loss].Src, pl.Vals[loss].Off = FromResult, 0
	pl.Vals[pred].Src, pl.Vals[pred].Off = FromResult, 1
}

// gradBuffer places the parameter gradients that steps compute in the gradient buffer, in the
// order of the program's gradients. A value that is the gradient of two parameters keeps its
// first place (its second parameter's Adam update is then a launch of its own).
func (pl *Plan) gradBuffer() {
	for _, g := range pl.Prog.Grads {
		v := &pl.Vals[g]
		if v.Src != FromStep {
			continue
		}
		v.Src, v.Off = FromGrads, pl.GradElems
		pl.GradElems += v.Elems
	}
}

// groupKey identifies the gradient ops one pass computes together: those of one group, or
// (Gaussian weights, kernel mix) those reading the same two values.
type groupKey struct {
	family prog.Op
	group  int
	a, b   int
}

// compiler holds Compile's bookkeeping.
type compiler struct {
	pl      *Plan
	groups  map[groupKey]int // → step
	fwdStep map[int]int      // forward group → its step
}

func (c *compiler) addVal(v Value) int { return c.pl.addVal(v) }

// addVal adds a value (a program value or a temporary) and returns its id.
func (pl *Plan) addVal(v Value) int {
	v.Slot, v.Last = -1, -1
	v.Rows, v.Cols = 1, max(v.Elems, 1)
	switch len(v.Shape) {
	case 1:
		v.Cols = v.Shape[0]
	case 2:
		v.Rows, v.Cols = v.Shape[0], v.Shape[1]
	}
	pl.Vals = append(pl.Vals, v)
	return len(pl.Vals) - 1
}

// value adds program value v (not run where the node computing it is not needed).
func (c *compiler) value(v int, need []bool) error {
	p := c.pl.Prog
	val := &p.Vals[v]
	if val.Kind == prog.Computed && !need[val.Node] {
		c.addVal(Value{Name: val.Name, Src: NotRun, Def: -1})
		return nil
	}
	if val.Dtype != prog.Float32 {
		return fmt.Errorf("gpu: %s is %v; the device executor runs float32 only", p.Describe(v), val.Dtype)
	}
	pv := Value{Name: val.Name, Elems: val.Elems(), Shape: val.Shape}
	switch val.Kind {
	case prog.Computed:
		pv.Name, pv.Src = p.Describe(v), FromStep
	case prog.Param:
		pv.Src, pv.Param = FromParam, val.Name
	case prog.Input:
		pv.Src = FromInput
	case prog.Const:
		pv.Src, pv.Host = FromStatic, val.F32
	}
	c.addVal(pv)
	return nil
}

// node adds program node i: a step, or a member of a group.
func (c *compiler) node(i int) error {
	pl := c.pl
	n := pl.Prog.Nodes[i]
	ins, out := n.In, n.Out
	for _, v := range ins {
		if pl.Vals[v].Src == NotRun {
			return fmt.Errorf("gpu: %s reads %s, which is not computed", pl.Prog.Describe(out), pl.Prog.Describe(v))
		}
	}
	if err := checkShapes(pl.Prog, &n); err != nil {
		return err
	}
	if n.Mask >= 0 {
		pl.Masks[n.Mask] = true
	}
	if size := groupSize(n.Op); size > 1 {
		return c.member(n, size)
	}
	st := Step{Kind: n.Op, Node: n, Outs: []int{out}, Ins: [][]int{ins}}
	rows, cols := pl.Vals[ins[0]].Rows, pl.Vals[ins[0]].Cols
	what := pl.Prog.Describe(out)
	switch n.Op { // what forward ops keep for their gradients
	case prog.BatchNorm, prog.BatchNormRelu:
		// x̂ is not kept: the backward recomputes it from x (which it reads) and these two.
		st.Aux = []int{c.addVal(Value{Name: "mean of " + what, Elems: cols}), c.addVal(Value{Name: "1/σ of " + what, Elems: cols})}
	case prog.LayerNorm:
		st.Aux = []int{c.addVal(Value{Name: "x̂ of " + what, Elems: rows * cols}), c.addVal(Value{Name: "1/σ of " + what, Elems: rows})}
	case prog.GatedAggregate: // η is recomputed from ê by the backward kernel
		st.Aux = []int{c.addVal(Value{Name: "Σ η + ε of " + what, Elems: n.Rows * cols})}
	case prog.SegmentMax: // the arg-max per node and column, int32
		st.Aux = []int{c.addVal(Value{Name: "arg-max of " + what, Elems: n.Rows * cols})}
	}
	if n.Op.Spec().ReadsForward {
		var err error
		if st.Aux, err = c.forwardAux(n); err != nil {
			return err
		}
	} else {
		for _, a := range st.Aux {
			pl.Vals[a].Def = len(pl.Steps)
		}
		if n.Group >= 0 {
			c.fwdStep[n.Group] = len(pl.Steps)
		}
	}
	pl.Vals[out].Def = len(pl.Steps)
	pl.Steps = append(pl.Steps, st)
	return nil
}

// member adds a gradient node to its group's step, creating the step at the first member.
func (c *compiler) member(n prog.Node, size int) error {
	pl := c.pl
	family, which := n.Op, n.Which
	key := groupKey{family: family, group: n.Group}
	switch n.Op {
	case prog.KernelMixGradX: // (g, w)
		family, which = prog.KernelMixGradX, 0
		key = groupKey{family: family, group: -1, a: n.In[0], b: n.In[1]}
	case prog.KernelMixGradW: // (x, g, w)
		family, which = prog.KernelMixGradX, 1
		key = groupKey{family: family, group: -1, a: n.In[1], b: n.In[2]}
	case prog.GaussianWeightsGrad: // (u, μ, 1/σ, w, g)
		key.a, key.b = n.In[3], n.In[4]
	}
	what := pl.Prog.Describe(n.Out)
	if which < 0 || which >= size {
		return fmt.Errorf("gpu: %s: gradient %d of a group of %d", what, which, size)
	}
	if si, ok := c.groups[key]; ok {
		st := &pl.Steps[si]
		if st.Outs[which] >= 0 {
			return fmt.Errorf("gpu: %s: gradient %d of %s computed twice", what, which, family)
		}
		st.Outs[which], st.Ins[which] = n.Out, n.In
		pl.Vals[n.Out].Def = si
		return nil
	}
	st := Step{Kind: family, Node: n, Outs: make([]int, size), Ins: make([][]int, size)}
	for i := range st.Outs {
		st.Outs[i] = -1
	}
	st.Outs[which], st.Ins[which] = n.Out, n.In
	if n.Op.Spec().ReadsForward {
		var err error
		if st.Aux, err = c.forwardAux(n); err != nil {
			return err
		}
	}
	c.groups[key] = len(pl.Steps)
	pl.Vals[n.Out].Def = len(pl.Steps)
	pl.Steps = append(pl.Steps, st)
	return nil
}

// forwardAux returns the aux buffers the forward op of gradient node n's group keeps for it.
func (c *compiler) forwardAux(n prog.Node) ([]int, error) {
	fs, ok := c.fwdStep[n.Group]
	if !ok || n.Group < 0 {
		return nil, fmt.Errorf("gpu: %s: its forward op is not computed before it", c.pl.Prog.Describe(n.Out))
	}
	return c.pl.Steps[fs].Aux, nil
}

// fillGroups gives the members of gradient groups that the program does not need a temporary
// of the right size and checks that every member reads only what is computed before the
// group's step or by the group itself.
func (c *compiler) fillGroups() error {
	pl := c.pl
	for si := range pl.Steps {
		st := &pl.Steps[si]
		if len(st.Outs) < 2 {
			continue
		}
		switch st.Kind {
		case prog.BatchNormGrad, prog.BatchNormReluGrad, prog.GatedAggregateGrad, prog.EdgeSumGrad, prog.KernelMixGradX:
			if st.Ins[0] == nil {
				return fmt.Errorf("gpu: a %s group without its first member (%s)", st.Kind, pl.Vals[firstOut(st)].Name)
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

// checkShapes checks what the executor assumes about a node's inputs beyond the program's own
// checks: operands of one size or a scalar, unweighted edge-sum indices, weighted labels.
func checkShapes(p *prog.Program, n *prog.Node) error {
	switch n.Op {
	case prog.Add, prog.Sub, prog.Mul, prog.Div, prog.GradSum:
		a, b := &p.Vals[n.In[0]], &p.Vals[n.In[1]]
		if a.Elems() != b.Elems() && !a.Scalar() && !b.Scalar() {
			return fmt.Errorf("gpu: %s: operands of %d and %d elements; only equal shapes or a scalar operand run on the device", p.Describe(n.Out), a.Elems(), b.Elems())
		}
	case prog.EdgeSum:
		if p.Indexes[n.Src].Weighted || p.Indexes[n.Dst].Weighted {
			return fmt.Errorf("gpu: %s: edge sum over a weighted index", p.Describe(n.Out))
		}
	case prog.WeightedCE, prog.WeightedCEGrad:
		if !p.Indexes[n.Index].Weighted {
			return fmt.Errorf("gpu: %s: labels %q carry no weights", p.Describe(n.Out), p.Indexes[n.Index].Name)
		}
	}
	return nil
}

// groupShapes returns the element count of every member output of a gradient group, from the
// inputs of a member the program has.
func groupShapes(st *Step, vals []Value) ([]int, error) {
	ins := primary(st)
	switch st.Kind {
	case prog.BatchNormGrad, prog.BatchNormReluGrad: // (x, γ, β, dy)
		return []int{vals[ins[0]].Elems, vals[ins[1]].Elems, vals[ins[2]].Elems}, nil
	case prog.LayerNormGrad: // (γ, dy)
		return []int{vals[ins[1]].Elems, vals[ins[0]].Elems, vals[ins[0]].Elems}, nil
	case prog.GatedAggregateGrad: // (ê, bh, out, g): dê [M, d] like ê, dbh [N, d]
		return []int{vals[ins[0]].Elems, vals[ins[1]].Elems}, nil
	case prog.EdgeSumGrad: // (g): both [rows, d]
		return []int{st.Node.Rows * vals[ins[0]].Cols, st.Node.Rows * vals[ins[0]].Cols}, nil
	case prog.GaussianWeightsGrad: // (u, μ, 1/σ, w, g)
		return []int{vals[ins[0]].Elems, vals[ins[1]].Elems, vals[ins[2]].Elems}, nil
	case prog.KernelMixGradX: // X (g [M, d], w [M, K]), W (x, g, w); without W (the weights an input): dx only
		if st.Ins[1] == nil {
			return []int{vals[st.Outs[0]].Elems, vals[st.Ins[0][1]].Elems}, nil
		}
		x, w := st.Ins[1][0], st.Ins[1][2]
		return []int{vals[x].Elems, vals[w].Elems}, nil
	}
	return nil, fmt.Errorf("gpu: no shapes for group %s", st.Kind)
}

// primary returns the inputs the step's launcher reads: those of member 0 (which computes the
// others' results too), or of the first member the program has.
func primary(st *Step) []int {
	for _, in := range st.Ins {
		if in != nil {
			return in
		}
	}
	return nil
}

// lifetimes sets every value's last reader and assigns activation slots with the planner the
// CPU executor uses too (prog.AssignSlots): at each step the values (and temporaries) it writes
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
				if src := pl.Vals[v].Src; (src == FromStep || src == FromGrads || src == FromResult) && pl.Vals[v].Def >= si {
					return fmt.Errorf("gpu: %s reads %s, which is computed after it", pl.Vals[st.Outs[w]].Name, pl.Vals[v].Name)
				}
				use(v, si)
			}
		}
		for _, a := range st.Aux {
			use(a, si)
		}
		for _, b := range slices.Concat(st.Bias, st.Div) {
			if b >= 0 {
				use(b, si)
			}
		}
		for _, o := range st.Outs {
			use(o, si)
		}
	}
	for _, v := range pl.Prog.Outputs() {
		use(v, end)
	}
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
	}
	groups := pl.slotGroups()
	lives := make([]prog.Life, len(groups))
	for k, g := range groups {
		v := &pl.Vals[g[0]]
		lives[k] = prog.Life{Size: int64(max(v.Elems, 1)), Def: v.Def, Last: v.Last}
		for _, i := range g[1:] {
			lives[k].Def, lives[k].Last = min(lives[k].Def, pl.Vals[i].Def), max(lives[k].Last, pl.Vals[i].Last)
		}
	}
	l, err := prog.AssignSlots(lives, end)
	if err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	for k, g := range groups {
		for j, i := range g {
			pl.Vals[i].Slot, pl.Vals[i].SlotByte = l.Of[k], 2*pl.Vals[i].Elems*j
		}
	}
	pl.Slots = pl.Slots[:0]
	for _, s := range l.Slots {
		pl.Slots = append(pl.Slots, int(s.Size))
	}
	return nil
}

// slotGroups groups the computed values by the slot they share: each value alone, but for pairs
// of values stored in bf16 of one size that are live at once (in the order of the plan's
// values, each waiting value with the next one live at the same step), which take one slot of
// their size in float32s, one in each half (Value.SlotByte): GatedGCN's ê of two layers, kept
// until their backward passes, in the room of one. A pair lives while either of its values does.
// A bf16 value without a partner takes a float32 slot of its size on its own, which values of
// that size share as before. So at no step do more groups of a size live than values did
// without the pairs, and AssignSlots, which needs as many slots of a size as the most that live
// at once, never lays out more memory than for float32.
func (pl *Plan) slotGroups() [][]int {
	var groups [][]int
	open := map[int]int{} // by size, a bf16 value waiting for a partner
	for i := range pl.Vals {
		v := &pl.Vals[i]
		if v.Src != FromStep {
			continue
		}
		if !v.BF16 {
			groups = append(groups, []int{i})
			continue
		}
		if k, ok := open[v.Elems]; ok {
			a := &pl.Vals[groups[k][0]]
			if a.Def <= v.Last && v.Def <= a.Last {
				groups[k] = append(groups[k], i)
				delete(open, v.Elems)
				continue
			}
		}
		open[v.Elems] = len(groups)
		groups = append(groups, []int{i})
	}
	return groups
}

// Bytes is the device memory of the plan's activation slots and gradient buffer.
func (pl *Plan) Bytes() int64 {
	n := 4 * int64(pl.GradElems)
	for _, s := range pl.Slots {
		n += 4 * int64(s)
	}
	return n
}
