package dispatch

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/prog"
)

// fake is a backend whose buffers are value ids (0: none) and whose kernels record their
// arguments; the kernels a test does not override panic (the nil embedded interface).
type fake struct {
	Kernels[int, int, int]
	p      *prog.Program
	ins    [][]int
	outs   []int
	shapes map[int][2]int
	scalar map[int]bool
	calls  []string
}

func (f *fake) Program() *prog.Program { return f.p }
func (f *fake) Feed() prog.Feed        { return nil }
func (f *fake) Members() int           { return len(f.ins) }
func (f *fake) Has(w int) bool         { return w < len(f.ins) && f.ins[w] != nil }
func (f *fake) Computes(w int) bool    { return w < len(f.outs) && f.outs[w] >= 0 }
func (f *fake) NumIn(w int) int        { return len(f.ins[w]) }
func (f *fake) In(w, i int) int        { return f.ins[w][i] }
func (f *fake) Shape(w, i int) (int, int) {
	s := f.shapes[f.ins[w][i]]
	return s[0], s[1]
}
func (f *fake) Elems(w, i int) int     { r, c := f.Shape(w, i); return r * c }
func (f *fake) IsScalar(w, i int) bool { return f.scalar[f.ins[w][i]] }
func (f *fake) Out(w int) int {
	if !f.Computes(w) {
		return 0
	}
	return f.outs[w]
}
func (f *fake) OutElems(w int) int { s := f.shapes[f.outs[w]]; return s[0] * s[1] }
func (f *fake) Index(ix int) int   { return 100 + ix }
func (f *fake) Mask(m int) int     { return m }

func (f *fake) record(name string, args ...any) error {
	f.calls = append(f.calls, fmt.Sprintf("%s%v", name, args))
	return nil
}
func (f *fake) MatMulGrad(dx, dw, x, w, g, m, a, b int) error {
	return f.record("MatMulGrad", dx, dw, x, w, g, m, a, b)
}
func (f *fake) KernelMixGrad(dx, dw, x, w, g, m, k, d int) error {
	return f.record("KernelMixGrad", dx, dw, x, w, g, m, k, d)
}
func (f *fake) Sub(out, a, b, n int) error { return f.record("Sub", out, a, b, n) }
func (f *fake) Scalar(op prog.Op, out, x, s, n int, left bool) error {
	return f.record("Scalar", op, out, x, s, n, left)
}
func (f *fake) Scalars(op prog.Op, out, a, b int) error { return f.record("Scalars", op, out, a, b) }
func (f *fake) Tanh(o, x, n int, s bool) error          { return f.record("Tanh", o, x, n, s) }
func (f *fake) Sigmoid(o, x, n int, s bool) error       { return f.record("Sigmoid", o, x, n, s) }
func (f *fake) Exp(o, x, n int, s bool) error           { return f.record("Exp", o, x, n, s) }
func (f *fake) Abs(o, x, n int, s bool) error           { return f.record("Abs", o, x, n, s) }
func (f *fake) Sqrt(o, x, n int, s bool) error          { return f.record("Sqrt", o, x, n, s) }
func (f *fake) ScatterAdd(out, x, idx, m, rows, cols int) error {
	return f.record("ScatterAdd", out, x, idx, m, rows, cols)
}

var table = New[int, int, int]()

// run runs one step of op kind on the fake and returns its one call or the error.
func (f *fake) run(t *testing.T, kind prog.Op, nd prog.Node) string {
	t.Helper()
	f.calls = nil
	if err := table.Run(f, kind, &nd); err != nil {
		return "error: " + err.Error()
	}
	if len(f.calls) != 1 {
		t.Fatalf("%s: calls %v, want one", kind, f.calls)
	}
	return f.calls[0]
}

func TestEveryOpHasAnEntry(t *testing.T) {
	for _, o := range prog.Ops() {
		if !Runs(o) {
			t.Errorf("no entry for %s", o)
		}
	}
	if len(Kinds()) != len(prog.Ops()) {
		t.Errorf("Kinds lists %d ops of %d", len(Kinds()), len(prog.Ops()))
	}
	if err := table.Run(&fake{}, prog.Invalid, &prog.Node{}); err == nil || !strings.Contains(err.Error(), "no kernel") {
		t.Errorf("an invalid op: %v", err)
	}
}

// TestGradientPairLayouts checks that a product's gradients reach the kernel with the same
// operands whether the executor pairs them in one step of two members (dx member 0, dw member
// 1, as the CPU does) or runs each as a step of its own kind (as the GPU does), and that a
// member left out is the zero buffer.
func TestGradientPairLayouts(t *testing.T) {
	// g [4, 3] = 1, w [5, 3] = 2, x [4, 5] = 3; dx = 10, dw = 11
	shapes := map[int][2]int{1: {4, 3}, 2: {5, 3}, 3: {4, 5}, 10: {4, 5}, 11: {5, 3}}
	both := "MatMulGrad[10 11 3 2 1 4 5 3]"
	for _, c := range []struct {
		name string
		kind prog.Op
		ins  [][]int
		outs []int
		want string
	}{
		{"paired", prog.MatMulGradX, [][]int{{1, 2}, {3, 1}}, []int{10, 11}, both},
		{"paired, named by dw", prog.MatMulGradW, [][]int{{1, 2}, {3, 1}}, []int{10, 11}, both},
		{"paired, dx only", prog.MatMulGradX, [][]int{{1, 2}, nil}, []int{10, -1}, "MatMulGrad[10 0 0 2 1 4 5 3]"},
		{"paired, dw only", prog.MatMulGradX, [][]int{nil, {3, 1}}, []int{-1, 11}, "MatMulGrad[0 11 3 0 1 4 5 3]"},
		{"single dx", prog.MatMulGradX, [][]int{{1, 2}}, []int{10}, "MatMulGrad[10 0 0 2 1 4 5 3]"},
		{"single dw", prog.MatMulGradW, [][]int{{3, 1}}, []int{11}, "MatMulGrad[0 11 3 0 1 4 5 3]"},
		{"no members", prog.MatMulGradX, [][]int{nil, nil}, []int{-1, -1}, "error: product gradient without members"},
	} {
		f := &fake{p: &prog.Program{}, ins: c.ins, outs: c.outs, shapes: shapes}
		if got := f.run(t, c.kind, prog.Node{}); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	// the kernel mix: g [6, 2] = 1, w [6, 3] = 2, x [6, 6] = 3; dx = 10 [6, 6], dw = 11 [6, 3]
	shapes = map[int][2]int{1: {6, 2}, 2: {6, 3}, 3: {6, 6}, 10: {6, 6}, 11: {6, 3}}
	for _, c := range []struct {
		kind prog.Op
		ins  [][]int
		outs []int
		want string
	}{
		{prog.KernelMixGradX, [][]int{{1, 2}, {3, 1, 2}}, []int{10, 11}, "KernelMixGrad[10 11 3 2 1 6 3 2]"},
		{prog.KernelMixGradX, [][]int{{1, 2}}, []int{10}, "KernelMixGrad[10 0 0 2 1 6 3 2]"},
		{prog.KernelMixGradW, [][]int{{3, 1, 2}}, []int{11}, "KernelMixGrad[0 11 3 2 1 6 3 2]"},
	} {
		f := &fake{p: &prog.Program{}, ins: c.ins, outs: c.outs, shapes: shapes}
		if got := f.run(t, c.kind, prog.Node{}); got != c.want {
			t.Errorf("%s %v: %s, want %s", c.kind, c.ins, got, c.want)
		}
	}
}

// TestBinaryOperands checks how an element-wise op reaches the kernels: equal shapes, a scalar
// on either side, two scalars, and operands that do not fit.
func TestBinaryOperands(t *testing.T) {
	shapes := map[int][2]int{1: {4, 3}, 2: {4, 3}, 3: {1, 1}, 4: {1, 1}, 5: {2, 3}, 10: {4, 3}, 11: {1, 1}}
	scalar := map[int]bool{3: true, 4: true}
	for _, c := range []struct {
		a, b, out int
		want      string
	}{
		{1, 2, 10, "Sub[10 1 2 12]"},
		{1, 3, 10, "Scalar[- 10 1 3 12 false]"},
		{3, 1, 10, "Scalar[- 10 1 3 12 true]"},
		{3, 4, 11, "Scalars[- 11 3 4]"},
		{1, 5, 10, "error: - of 12 and 6 values into 12"},
	} {
		f := &fake{p: &prog.Program{}, ins: [][]int{{c.a, c.b}}, outs: []int{c.out}, shapes: shapes, scalar: scalar}
		if got := f.run(t, prog.Sub, prog.Node{}); got != c.want {
			t.Errorf("%d − %d: %s, want %s", c.a, c.b, got, c.want)
		}
	}
}

// TestUnaryOperands checks that each of Gorgonia's unary operators reaches its own kernel with
// its operand, the result's size and whether the operand is a scalar value (whose function may
// round differently).
func TestUnaryOperands(t *testing.T) {
	shapes := map[int][2]int{1: {4, 3}, 3: {1, 1}, 10: {4, 3}, 11: {1, 1}}
	scalar := map[int]bool{3: true}
	for _, c := range []struct {
		op   prog.Op
		name string
	}{{prog.Tanh, "Tanh"}, {prog.Sigmoid, "Sigmoid"}, {prog.Exp, "Exp"}, {prog.Abs, "Abs"}, {prog.Sqrt, "Sqrt"}} {
		for _, x := range []struct {
			in, out int
			want    string
		}{{1, 10, "[10 1 12 false]"}, {3, 11, "[11 3 1 true]"}} {
			f := &fake{p: &prog.Program{}, ins: [][]int{{x.in}}, outs: []int{x.out}, shapes: shapes, scalar: scalar}
			if got := f.run(t, c.op, prog.Node{}); got != c.name+x.want {
				t.Errorf("%s of %d: %s, want %s", c.op, x.in, got, c.name+x.want)
			}
		}
	}
}

// TestSegmentsChecked checks that a scatter's index must have an entry per input row.
func TestSegmentsChecked(t *testing.T) {
	p := &prog.Program{Indexes: []prog.IndexInput{{Name: "dst", Len: 4}}}
	shapes := map[int][2]int{1: {4, 3}, 2: {5, 3}, 10: {7, 3}}
	f := &fake{p: p, ins: [][]int{{1}}, outs: []int{10}, shapes: shapes}
	if got := f.run(t, prog.ScatterAdd, prog.Node{Index: 0, Rows: 7}); got != "ScatterAdd[10 1 100 4 7 3]" {
		t.Errorf("scatter-add: %s", got)
	}
	f.ins = [][]int{{2}}
	if got := f.run(t, prog.ScatterAdd, prog.Node{Index: 0, Rows: 7}); got != "error: scatter-add: input has 5 rows, index 4 entries" {
		t.Errorf("scatter-add of 5 rows with an index of 4: %s", got)
	}
}
