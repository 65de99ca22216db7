package gpuexec

import (
	"slices"
	"testing"

	"github.com/rewiregnn/rewiregnn/prog"
)

// handPlan is a plan of hand-made steps over values of the given sources, every one 4 × 4.
func handPlan(srcs []Source, steps []Step) *Plan {
	pl := &Plan{Steps: steps}
	for _, s := range srcs {
		pl.Vals = append(pl.Vals, Value{Src: s, Rows: 4, Cols: 4, Elems: 16})
	}
	pl.redefine()
	return pl
}

func one(kind prog.Op, out int, ins ...int) Step {
	return Step{Kind: kind, Outs: []int{out}, Ins: [][]int{ins}}
}

// members lists each batched step's kind and outputs, and the outputs of the others.
func members(pl *Plan) (batched map[prog.Op][][]int, single []int) {
	batched = map[prog.Op][][]int{}
	for _, st := range pl.Steps {
		if st.Batch {
			batched[st.Kind] = append(batched[st.Kind], st.Outs)
		} else {
			single = append(single, st.Outs...)
		}
	}
	return batched, single
}

// TestBatchStepsMoves: products of one input by parameters batch at the first one's place,
// weight gradients and their column sums at the last one's; a member whose input another step
// rewrites (adds into) in between stays where it is, and so does a member of a group of one.
func TestBatchStepsMoves(t *testing.T) {
	// Values: 0 x, 1-3 W, 4-6 y (products), 7-9 g, 10-12 dW, 13-15 db, 16 a gradient sum.
	srcs := []Source{FromStep, FromParam, FromParam, FromParam, FromStep, FromStep, FromStep,
		FromStep, FromStep, FromStep, FromGrads, FromGrads, FromGrads, FromGrads, FromGrads, FromGrads, FromStep}
	t.Run("free", func(t *testing.T) {
		pl := handPlan(srcs, []Step{
			one(prog.Relu, 0, 16),
			one(prog.MatMul, 4, 0, 1),
			one(prog.Relu, 7, 4),
			one(prog.MatMul, 5, 0, 2),
			one(prog.MatMul, 6, 0, 3),
			one(prog.Relu, 8, 5),
			one(prog.Relu, 9, 6),
			one(prog.MatMulGradW, 10, 0, 7),
			one(prog.ColSum, 13, 7),
			one(prog.MatMulGradW, 11, 0, 8),
			one(prog.ColSum, 14, 8),
			one(prog.MatMulGradW, 12, 0, 9),
			one(prog.ColSum, 15, 9),
		})
		pl.batchSteps()
		pl.layoutTable()
		b, single := members(pl)
		want := map[prog.Op][][]int{prog.MatMul: {{4, 5, 6}}, prog.MatMulGradW: {{10, 11, 12}}, prog.ColSum: {{13, 14, 15}}}
		for k, w := range want {
			if !slices.EqualFunc(b[k], w, slices.Equal) {
				t.Errorf("batched %s: %v, want %v", k, b[k], w)
			}
		}
		if !slices.Equal(single, []int{0, 7, 8, 9}) {
			t.Errorf("unbatched steps write %v, want [0 7 8 9]", single)
		}
		if !pl.Steps[1].Batch || pl.Steps[1].Kind != prog.MatMul {
			t.Errorf("the products' batch is not at the first product's place")
		}
		if pl.TableLen != 3*3+3*3+2*3 {
			t.Errorf("pointer table of %d entries, want 24", pl.TableLen)
		}
	})
	t.Run("rewritten inputs", func(t *testing.T) {
		acc := one(prog.MatMulGradX, 7, 8, 1) // adds into g₀ (value 7)
		acc.Acc = true
		accX := one(prog.MatMulGradX, 0, 8, 1) // adds into x (value 0)
		accX.Acc = true
		pl := handPlan(srcs, []Step{
			one(prog.Relu, 0, 16),
			one(prog.MatMul, 4, 0, 1),
			accX,
			one(prog.MatMul, 5, 0, 2),
			one(prog.MatMul, 6, 0, 3),
			one(prog.Relu, 7, 4),
			one(prog.Relu, 8, 5),
			one(prog.Relu, 9, 6),
			one(prog.MatMulGradW, 10, 0, 7),
			acc,
			one(prog.MatMulGradW, 11, 0, 8),
			one(prog.MatMulGradW, 12, 0, 9),
		})
		pl.batchSteps()
		b, _ := members(pl)
		if len(b[prog.MatMul]) != 0 {
			t.Errorf("products batched across a step adding into their input: %v", b[prog.MatMul])
		}
		if w := [][]int{{11, 12}}; !slices.EqualFunc(b[prog.MatMulGradW], w, slices.Equal) {
			t.Errorf("weight gradients batched %v, want %v (the first one's g is added into after it)", b[prog.MatMulGradW], w)
		}
	})
}

// TestPrefill: the accumulating steps' fills become two fill steps, one at the start for the
// forward pass's and one before the first backward step for the backward's, each filling the
// buffers of its pass with their bits, and the steps add into them (Prefilled); a step whose
// buffer another step wrote first keeps its own fill.
func TestPrefill(t *testing.T) {
	srcs := []Source{FromStep, FromStep, FromStep, FromStep, FromStep, FromGrads}
	grad := func(st Step) Step { st.Node.Grad = true; return st }
	pair := Step{Kind: prog.EdgeSumGrad, Outs: []int{3, 4}, Ins: [][]int{{2}, {3}}, Node: prog.Node{Grad: true}}
	pl := handPlan(srcs, []Step{
		one(prog.Relu, 0, 0),
		one(prog.ScatterAdd, 1, 0), // forward: filled at the start
		one(prog.Relu, 2, 1),
		grad(one(prog.Relu, 5, 2)),
		pair,                             // backward: filled before the first backward step
		grad(one(prog.ScatterAdd, 5, 4)), // its buffer was written first by another step
	})
	pl.Vals[0].Src = FromInput
	pl.redefine()
	pl.prefill()
	var fills [][]int
	for _, st := range pl.Steps {
		if st.Fills != nil {
			fills = append(fills, st.Outs)
		}
	}
	if len(pl.Steps) != 8 || pl.Steps[0].Fills == nil || pl.Steps[4].Fills == nil {
		t.Fatalf("fill steps at %v, want at 0 and 4 of 8", fills)
	}
	if !slices.EqualFunc(fills, [][]int{{1}, {3, 4}}, slices.Equal) {
		t.Errorf("fill steps fill %v, want [[1] [3 4]]", fills)
	}
	for si, want := range []bool{false, false, true, false, false, false, true, false} {
		if got := pl.Steps[si].Prefilled; got != want {
			t.Errorf("step %d (%s): Prefilled %v, want %v", si, pl.Steps[si].Kind, got, want)
		}
	}
	if pl.Vals[3].Def != 4 || pl.Vals[1].Def != 0 {
		t.Errorf("filled values defined at steps %d and %d, want 4 and 0 (their fill steps)", pl.Vals[3].Def, pl.Vals[1].Def)
	}
}
