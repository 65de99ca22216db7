package lower_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/prog"
	"gorgonia.org/tensor"
)

// buildNet is a small training net: h = tanh(x·W + b) gathered along the edges' sources and
// scattered to their destinations, added to h (h has two consumers, so its gradient is a sum),
// a batch norm, and an L1 loss on the graphs' mean.
func buildNet(t *testing.T, dt tensor.Dtype) (*nn.Net, *nn.Params) {
	t.Helper()
	p, err := nn.NewParams(dt, 1)
	if err != nil {
		t.Fatal(err)
	}
	bd := nn.NewBuilder(p)
	in := nn.NewInputs(nn.Bucket{Nodes: 6, Edges: 8, Graphs: 2}, dt, nn.InputSpec{NodeFloat: 3, Loss: nn.LossL1})
	h := bd.Tanh(bd.Linear(bd.Input("x", in.NodeFloat), "lin", 3, 4))
	agg := bd.ScatterAdd(bd.Gather(h, in.Src), in.Dst, 6)
	h = bd.BatchNorm(bd.Add(h, agg), "bn", in.NodeMask)
	pred := bd.Linear(bd.ScatterAdd(h, in.NodeGraph, 2), "out", 4, 1)
	net, err := nn.Finish(bd, in, pred, bd.L1(pred, in), true)
	if err != nil {
		t.Fatal(err)
	}
	return net, p
}

// TestLower checks the program of a hand-built net: its ops (the gradient sum of h explicit),
// its inputs by name, its index and mask inputs bound to the net's holders, its parameters and
// gradients, and a structure Check accepts.
func TestLower(t *testing.T) {
	net, p := buildNet(t, tensor.Float32)
	pg, bind, err := net.Program(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := pg.Check(); err != nil {
		t.Fatal(err)
	}
	count := map[prog.Op]int{}
	for _, n := range pg.Nodes {
		count[n.Op]++
	}
	for op, want := range map[prog.Op]int{prog.MatMul: 2, prog.MatMulGradW: 2, prog.AddBias: 2, prog.Tanh: 1, prog.Gather: 2, prog.ScatterAdd: 3,
		prog.BatchNorm: 1, prog.BatchNormGrad: 3, prog.MaskedL1: 1, prog.GradSum: 1} {
		if count[op] < want {
			t.Errorf("%d %s nodes, want at least %d\n%s", count[op], op, want, pg)
		}
	}
	var inputs, params []string
	for _, v := range pg.Vals {
		switch v.Kind {
		case prog.Input:
			inputs = append(inputs, v.Name)
		case prog.Param:
			params = append(params, v.Name)
		}
		if v.Dtype != prog.Float32 {
			t.Errorf("value %s is %v", v.Name, v.Dtype)
		}
	}
	slices.Sort(inputs)
	if want := []string{"graph weights", "node features", "targets"}; !slices.Equal(inputs, want) {
		t.Errorf("inputs %q, want %q", inputs, want)
	}
	if len(params) != len(p.Names) {
		t.Errorf("parameters %q, the set has %q", params, p.Names)
	}
	if !slices.Equal(pg.GradNames, p.Names) || len(pg.Grads) != len(p.Names) || !pg.Train {
		t.Errorf("gradients of %q (%d), want %q", pg.GradNames, len(pg.Grads), p.Names)
	}
	// The binding feeds the net's own holders.
	var names []string
	for i, ix := range pg.Indexes {
		names = append(names, ix.Name)
		idx, _ := bind.Index(i)
		if &idx[0] != &bind.Indexes[i].Idx[0] || ix.Len != len(idx) {
			t.Errorf("index %q is not fed from its holder", ix.Name)
		}
	}
	if len(pg.Masks) != 1 || len(bind.Mask(0)) != 6 || &bind.Mask(0)[0] != &net.In.NodeMask.Keep[0] {
		t.Errorf("masks %+v not fed from the node mask", pg.Masks)
	}
	if len(pg.States) != 1 || pg.States[0].Kind != prog.BNState || pg.States[0].Size != 4 || !bind.Training(0) {
		t.Errorf("states %+v", pg.States)
	}
	for i, v := range pg.Vals {
		if v.Kind == prog.Input && v.Name == "node features" {
			if xs := bind.Input(i).([]float32); &xs[0] != &net.In.NodeFloat.Float32s()[0] {
				t.Error("node features are not fed from their holder")
			}
		}
	}
	t.Logf("indexes %q", names)
}

// TestLowerEval: an evaluation net has no gradients, and a float64 net lowers to float64 values.
func TestLowerEval(t *testing.T) {
	p, err := nn.NewParams(tensor.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	bd := nn.NewBuilder(p)
	in := nn.NewInputs(nn.Bucket{Nodes: 2, Edges: 1, Graphs: 2}, tensor.Float64, nn.InputSpec{NodeFloat: 2, Loss: nn.LossL1})
	pred := bd.Linear(bd.Input("x", in.NodeFloat), "lin", 2, 1)
	net, err := nn.Finish(bd, in, pred, bd.L1(pred, in), false)
	if err != nil {
		t.Fatal(err)
	}
	pg, _, err := net.Program(p)
	if err != nil {
		t.Fatal(err)
	}
	if pg.Train || pg.Grads != nil || pg.Vals[pg.Loss].Dtype != prog.Float64 {
		t.Errorf("evaluation program: train %v, gradients %v, loss %v", pg.Train, pg.Grads, pg.Vals[pg.Loss].Dtype)
	}
	// A net built on other parameters is refused by name.
	other, _ := nn.NewParams(tensor.Float64, 1)
	other.T = map[string]*tensor.Dense{}
	if _, _, err := net.Program(other); err == nil || !strings.Contains(err.Error(), "not the tensor of the parameter set") {
		t.Errorf("Program on another parameter set: %v", err)
	}
}

// TestLowerSqrt checks that a square root and Gorgonia's gradient of it, gradY ÷ (2 ⊙ y), lower
// to the program's ops: a Sqrt node, a ⊙ of the scalar constant 2 (on the left) and the Sqrt's
// result, and a ÷ by that product, in float32 and float64.
func TestLowerSqrt(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		p, err := nn.NewParams(dt, 1)
		if err != nil {
			t.Fatal(err)
		}
		bd := nn.NewBuilder(p)
		in := nn.NewInputs(nn.Bucket{Nodes: 4, Edges: 1, Graphs: 2}, dt, nn.InputSpec{NodeFloat: 2, Loss: nn.LossL1})
		z := bd.Linear(bd.Input("x", in.NodeFloat), "lin", 2, 3)
		h := bd.Sqrt(bd.AddConst(bd.Mul(z, z), 1e-5))
		pred := bd.Linear(bd.ScatterAdd(h, in.NodeGraph, 2), "out", 3, 1)
		net, err := nn.Finish(bd, in, pred, bd.L1(pred, in), true)
		if err != nil {
			t.Fatal(err)
		}
		pg, _, err := net.Program(p)
		if err != nil {
			t.Fatal(err)
		}
		sqrt, twice, div := -1, -1, -1
		for _, n := range pg.Nodes {
			switch {
			case n.Op == prog.Sqrt:
				sqrt = n.Out
			case n.Op == prog.Mul && sqrt >= 0 && n.In[1] == sqrt && isConst(pg, n.In[0], 2):
				twice = n.Out
			case n.Op == prog.Div && twice >= 0 && n.In[1] == twice:
				div = n.Out
			}
		}
		if sqrt < 0 || twice < 0 || div < 0 {
			t.Errorf("%v: sqrt %d, 2 ⊙ sqrt %d, ÷ (2 ⊙ sqrt) %d (want all lowered)\n%s", dt, sqrt, twice, div, pg)
		}
	}
}

// isConst reports whether value v is the scalar constant c.
func isConst(pg *prog.Program, v int, c float64) bool {
	val := pg.Vals[v]
	if val.Kind != prog.Const || !val.Scalar() {
		return false
	}
	return (len(val.F32) == 1 && float64(val.F32[0]) == c) || (len(val.F64) == 1 && val.F64[0] == c)
}
