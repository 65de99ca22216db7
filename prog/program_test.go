package prog

import (
	"slices"
	"strings"
	"testing"
)

// tiny is a hand-written training program: h = x·W; loss = L1(h, y, w); its gradient
// dW = xᵀ·dh and a batch norm whose result nothing reads (it still runs: running statistics).
func tiny() *Program {
	m := func(r, c int) []int { return []int{r, c} }
	p := &Program{
		Vals: []Value{
			{Name: "x", Kind: Input, Shape: m(4, 3)},                // 0
			{Name: "W", Kind: Param, Shape: m(3, 1)},                // 1
			{Name: "h", Kind: Computed, Shape: m(4, 1), Node: 0},    // 2
			{Name: "y", Kind: Input, Shape: m(4, 1)},                // 3
			{Name: "w", Kind: Input, Shape: m(4, 1)},                // 4
			{Name: "loss", Kind: Computed, Node: 1},                 // 5
			{Name: "one", Kind: Const, F32: []float32{1}},           // 6
			{Name: "dh", Kind: Computed, Shape: m(4, 1), Node: 2},   // 7
			{Name: "dW", Kind: Computed, Shape: m(3, 1), Node: 3},   // 8
			{Name: "γ", Kind: Param, Shape: []int{3}},               // 9
			{Name: "β", Kind: Param, Shape: []int{3}},               // 10
			{Name: "bn", Kind: Computed, Shape: m(4, 3), Node: 4},   // 11
			{Name: "dead", Kind: Computed, Shape: m(4, 1), Node: 5}, // 12
		},
		Nodes: []Node{
			{Op: MatMul, In: []int{0, 1}, Out: 2},
			{Op: MaskedL1, In: []int{2, 3, 4}, Out: 5},
			{Op: MaskedL1Grad, In: []int{2, 3, 4, 6}, Out: 7},
			{Op: MatMulGradW, In: []int{0, 7}, Out: 8},
			{Op: BatchNorm, In: []int{0, 9, 10}, Out: 11, Mask: 0, State: 0},
			{Op: Tanh, In: []int{2}, Out: 12},
		},
		Masks:  []MaskInput{{Name: "nodes", Len: 4}},
		States: []State{{Kind: BNState, Name: "bn", Size: 3}},
		Loss:   5, Pred: 2, Grads: []int{8}, GradNames: []string{"W"}, Train: true,
	}
	for i := range p.Nodes {
		n := &p.Nodes[i]
		if n.Op != BatchNorm {
			n.Mask, n.State = -1, -1
		}
		n.Index, n.Src, n.Dst, n.Group = -1, -1, -1, -1
	}
	return p
}

func TestCheckAcceptsAndNeeded(t *testing.T) {
	p := tiny()
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	// tanh (node 5) feeds nothing; the batch norm feeds nothing but has an effect.
	if got, want := p.Needed(), []bool{true, true, true, true, true, false}; !slices.Equal(got, want) {
		t.Errorf("Needed = %v, want %v", got, want)
	}
	if s := p.String(); !strings.Contains(s, "MatMulGradW") || strings.Count(s, "\n") != len(p.Nodes) {
		t.Errorf("String:\n%s", s)
	}
}

// TestCheckRefuses: each defect of a program is reported with the node and what is wrong.
func TestCheckRefuses(t *testing.T) {
	for _, c := range []struct {
		name   string
		break_ func(p *Program)
		want   string
	}{
		{"read before computed", func(p *Program) { p.Nodes[0].In[0] = 7 }, "computed after it"},
		{"arity", func(p *Program) { p.Nodes[1].In = p.Nodes[1].In[:2] }, "2 inputs, MaskedL1 takes 3"},
		{"output not its value", func(p *Program) { p.Nodes[2].Out = 8 }, "is not its value"},
		{"mask out of range", func(p *Program) { p.Nodes[4].Mask = 1 }, "mask 1 out of range"},
		{"state out of range", func(p *Program) { p.Nodes[4].State = 3 }, "state 3 out of range"},
		{"invalid op", func(p *Program) { p.Nodes[5].Op = Invalid }, "invalid op"},
		{"names", func(p *Program) { p.GradNames = nil }, "1 gradients, 0 names"},
	} {
		p := tiny()
		c.break_(p)
		err := p.Check()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Check = %v, want %q", c.name, err, c.want)
		}
	}
}

// TestEveryOpHasASpec: every op has a name of its own and takes at least one input.
func TestEveryOpHasASpec(t *testing.T) {
	seen := map[string]Op{}
	for _, o := range Ops() {
		s := o.Spec()
		if s.Name == "" || s.Arity < 1 {
			t.Errorf("op %d: spec %+v", o, s)
		}
		if p, ok := seen[s.Name]; ok {
			t.Errorf("ops %d and %d share the name %q", p, o, s.Name)
		}
		seen[s.Name] = o
	}
	if Invalid.String() != "Op(0)" || Op(250).String() != "Op(250)" {
		t.Errorf("names of invalid ops: %s, %s", Invalid, Op(250))
	}
}

func TestArityOf(t *testing.T) {
	for _, c := range []struct {
		op       Op
		which, n int
		ok       bool
	}{
		{BatchNormRelu, 0, 3, true}, {BatchNormRelu, 0, 4, true}, {BatchNormRelu, 0, 2, false},
		{BatchNormGrad, 0, 4, true}, {BatchNormGrad, 1, 2, true}, {BatchNormGrad, 1, 4, false},
		{GatedAggregateGrad, 1, 2, true}, {LayerNormGrad, 2, 2, true}, {Gather, 0, 2, false},
	} {
		if err := ArityOf(c.op, c.which, c.n); (err == nil) != c.ok {
			t.Errorf("ArityOf(%s, %d, %d) = %v", c.op, c.which, c.n, err)
		}
	}
}

// TestIndexBounds: an index's bound is the smallest over its readers (a gather's source rows,
// a scatter's output rows, the columns of the classes for labels); one nobody reads has -1.
func TestIndexBounds(t *testing.T) {
	p := &Program{
		Vals: []Value{
			{Kind: Input, Shape: []int{5, 2}},             // 0: x
			{Kind: Computed, Shape: []int{8, 2}, Node: 0}, // 1: x[src]
			{Kind: Computed, Shape: []int{3, 2}, Node: 1}, // 2: scatter to 3 rows
			{Kind: Computed, Shape: []int{6, 2}, Node: 2}, // 3: x[src] again, of 6 rows? (gathers 6 entries)
			{Kind: Computed, Node: 3},                     // 4: CE over 2 classes
		},
		Nodes: []Node{
			{Op: Gather, In: []int{0}, Out: 1, Index: 0},
			{Op: ScatterAdd, In: []int{1}, Out: 2, Index: 1, Rows: 3},
			{Op: Gather, In: []int{2}, Out: 3, Index: 0},
			{Op: WeightedCE, In: []int{3}, Out: 4, Index: 2},
		},
		Indexes: []IndexInput{{Name: "src", Len: 8}, {Name: "dst", Len: 8}, {Name: "labels", Len: 6, Weighted: true}, {Name: "unused"}},
	}
	if got, want := p.IndexBounds(nil), []int{3, 3, 2, -1}; !slices.Equal(got, want) {
		t.Errorf("IndexBounds = %v, want %v", got, want)
	}
	if got, want := p.IndexBounds([]bool{true, true, false, false}), []int{5, 3, -1, -1}; !slices.Equal(got, want) {
		t.Errorf("IndexBounds of the first two nodes = %v, want %v", got, want)
	}
	ix := p.Indexes[2]
	for _, c := range []struct {
		idx  []int32
		w    []float64
		want string
	}{
		{[]int32{0, 1, -1, 1, 0, 0}, []float64{1, 1, 0, 1, 1, 1}, ""},
		{[]int32{0, 2, -1, 1, 0, 0}, []float64{1, 1, 0, 1, 1, 1}, `index "labels": entry 1 is 2, outside [-1, 2)`},
		{[]int32{0, 1, -2, 1, 0, 0}, []float64{1, 1, 0, 1, 1, 1}, "entry 2 is -2"},
		{[]int32{0, 1, -1, 1, 0, 0}, []float64{1}, "1 weights for 6 entries"},
		{[]int32{0, 1}, nil, "2 entries, want 6"},
	} {
		err := ix.Check(c.idx, c.w, 2)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Check(%v, %v) = %v, want %q", c.idx, c.w, err, c.want)
		}
	}
}

func TestValueShapes(t *testing.T) {
	for _, c := range []struct {
		v           Value
		elems, r, k int
	}{
		{Value{}, 1, 1, 1}, {Value{Shape: []int{7}}, 7, 1, 7}, {Value{Shape: []int{3, 4}}, 12, 3, 4},
	} {
		r, k := c.v.RowsCols()
		if c.v.Elems() != c.elems || r != c.r || k != c.k {
			t.Errorf("%v: %d elements, %d×%d", c.v.Shape, c.v.Elems(), r, k)
		}
	}
}
