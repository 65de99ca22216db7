package gpu

import (
	"github.com/rewiregnn/rewiregnn/gpuexec"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/gpuopt"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/prog"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// eachNet builds the training and evaluation nets of every model on every dataset kind and
// encoding, with and without dropout, and calls f on each.
func eachNet(t *testing.T, f func(t *testing.T, name string, net *nn.Net, p *nn.Params)) {
	b := nn.Bucket{Nodes: 40, Edges: 160, Graphs: 4}
	for _, e := range encodings {
		for _, ms := range modelSets {
			for _, drop := range []bool{false, true} {
				sets := ms
				if drop {
					sets = append(slices.Clone(ms), "model.dropout=0.1", "model.in_feat_dropout=0.2")
				}
				c := newCase(t, e, sets...)
				p, err := nn.NewParams(tensor.Float32, 1)
				if err != nil {
					t.Fatal(err)
				}
				for _, train := range []bool{true, false} {
					net, err := c.build(p, b, train)
					if err != nil {
						t.Fatalf("%s: %v", c.name, err)
					}
					name := c.name
					if drop {
						name += "/dropout"
					}
					if !train {
						name += "/eval"
					}
					f(t, name, net, p)
					net.Close()
				}
			}
		}
	}
}

// TestEveryModelOpHasAKernel walks the graph of every model, dataset kind, encoding and
// normalisation (training and evaluation, with and without dropout) and checks that every node
// the loss, prediction and gradients need maps to a device kernel: a model that gains an op
// the executor does not run fails here, on any machine.
func TestEveryModelOpHasAKernel(t *testing.T) {
	used := map[prog.Op]int{}
	nets := 0
	eachNet(t, func(t *testing.T, name string, net *nn.Net, p *nn.Params) {
		pl, err := Compile(net, p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		nets++
		for _, st := range pl.Steps {
			if st.Fills != nil {
				continue // a fill step of the executor's own
			}
			if !gpuexec.Runs(st.Kind) {
				t.Errorf("%s: step kind %s is not in the executor's table", name, st.Kind)
			}
			used[st.Kind]++
			if gk, ok := gpuexec.LossGrad(st.Kind); ok && st.WithGrad { // the loss's gradient, computed by the loss step
				used[gk]++
			}
			if st.Scatter { // the edge sum's gradient, computed by the gated aggregation's gradient step
				used[prog.EdgeSumGrad]++
			}
			if st.Gate != nil { // the gated aggregation, computed by the edge sum step
				used[prog.GatedAggregate]++
			}
		}
	})
	var ks []string
	for k, n := range used {
		ks = append(ks, k.String())
		_ = n
	}
	sort.Strings(ks)
	t.Logf("%d nets; step kinds used: %s", nets, strings.Join(ks, " "))
	for _, k := range gpuexec.Kinds() {
		switch k {
		case prog.Sigmoid, prog.Exp, prog.Abs, prog.KernelMixGradW: // builder helpers no model uses; fused into the KernelMixGradX step
			continue
		}
		if used[k] == 0 {
			t.Errorf("kind %s is never used by a model (is the coverage list out of date?)", k)
		}
	}
}

// TestCompileRefusesUnknownOps checks the error for an op the program has no op for (and so
// neither executor a kernel): the lowering refuses it when the net is built, naming the op; and
// that the device plan refuses float64 parameters.
func TestCompileRefusesUnknownOps(t *testing.T) {
	p, err := nn.NewParams(tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	build := func(square bool) (*nn.Net, error) {
		bd := nn.NewBuilder(p)
		in := nn.NewInputs(nn.Bucket{Nodes: 2, Edges: 1, Graphs: 2}, tensor.Float32, nn.InputSpec{NodeFloat: 2, Loss: nn.LossL1})
		pred := bd.Linear(bd.Input("x", in.NodeFloat), "lin", 2, 1)
		if square {
			pred = bd.Apply("square", func() (*gorgonia.Node, error) { return gorgonia.Square(pred) })
		}
		return nn.Finish(bd, in, pred, bd.L1(pred, in), true)
	}
	_, err = build(true)
	if err == nil || !strings.Contains(err.Error(), "square") || !strings.Contains(err.Error(), "no device kernel") {
		t.Fatalf("a net with gorgonia.Square: %v, want an error naming the op", err)
	}
	t.Log(err)
	net, err := build(false)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	p64, err := nn.NewParams(tensor.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compile(net, p64); err == nil || !strings.Contains(err.Error(), "float32") {
		t.Fatalf("Compile with float64 parameters: %v", err)
	}
}

// TestPlanBuffers checks the buffer plan of every net: each value has a buffer of its size,
// values alive at the same time never share an activation slot (a step never writes the slot
// of a value it or a later step still reads), inputs are computed before they are read, and the
// loss, prediction and gradients survive to the end.
func TestPlanBuffers(t *testing.T) {
	var shared, naive int64
	eachNet(t, func(t *testing.T, name string, net *nn.Net, p *nn.Params) {
		pl, err := Compile(net, p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		end := len(pl.Steps)
		bySlot := map[int][]int{}
		for i, v := range pl.Vals {
			if i < len(pl.Prog.Vals) && v.Src != gpuexec.NotRun {
				want := pl.Prog.Vals[i].Elems()
				if v.Elems != want {
					t.Fatalf("%s: %s has %d elements, its node %d", name, v.Name, v.Elems, want)
				}
			}
			switch v.Src {
			case gpuexec.FromStep:
				if v.Slot < 0 || v.Slot >= len(pl.Slots) || pl.Slots[v.Slot] != max(v.Elems, 1) {
					t.Fatalf("%s: %s (%d elements) has slot %d", name, v.Name, v.Elems, v.Slot)
				}
				if v.Def < 0 || v.Def >= end || v.Last < v.Def || v.Last > end {
					t.Fatalf("%s: %s lives over steps [%d, %d] of %d", name, v.Name, v.Def, v.Last, end)
				}
				bySlot[v.Slot] = append(bySlot[v.Slot], i)
				naive += 4 * int64(max(v.Elems, 1))
			case gpuexec.FromParam:
				if p.T[v.Param] == nil {
					t.Fatalf("%s: %s reads unknown parameter %q", name, v.Name, v.Param)
				}
			case gpuexec.FromInput, gpuexec.FromStatic:
				if v.Slot != -1 {
					t.Fatalf("%s: %s (%v) has an activation slot", name, v.Name, v.Src)
				}
			}
		}
		shared += pl.Bytes()
		for slot, vs := range bySlot {
			for a := 0; a < len(vs); a++ {
				for b := a + 1; b < len(vs); b++ {
					va, vb := pl.Vals[vs[a]], pl.Vals[vs[b]]
					if va.Def <= vb.Last && vb.Def <= va.Last {
						t.Fatalf("%s: slot %d holds %s (steps %d–%d) and %s (steps %d–%d) at once", name, slot, va.Name, va.Def, va.Last, vb.Name, vb.Def, vb.Last)
					}
				}
			}
		}
		for si, st := range pl.Steps {
			for _, ins := range st.Ins {
				for _, v := range ins {
					if slices.Contains(st.Outs, v) {
						continue // a member copying out what its group computed
					}
					if pl.Vals[v].Src == gpuexec.FromStep && pl.Vals[v].Def >= si {
						t.Fatalf("%s: step %d (%s) reads %s, defined at step %d", name, si, st.Kind, pl.Vals[v].Name, pl.Vals[v].Def)
					}
				}
			}
			for w, o := range st.Outs {
				if st.Acc && w == 0 { // adds into a gradient sum an earlier step wrote
					if v := pl.Vals[o]; (st.Kind != prog.MatMulGradX && st.Kind != prog.GatedAggregateGrad) || v.Def >= si || v.Last < si {
						t.Fatalf("%s: step %d (%s) adds into %s, which lives over steps [%d, %d]", name, si, st.Kind, v.Name, v.Def, v.Last)
					}
					continue
				}
				if def := pl.Vals[o].Def; def != si && !(st.Prefilled && def < si && slices.Contains(pl.Steps[def].Outs, o) && pl.Steps[def].Fills != nil) {
					t.Fatalf("%s: step %d (%s) writes %s, defined at step %d", name, si, st.Kind, pl.Vals[o].Name, pl.Vals[o].Def)
				}
			}
		}
		for _, v := range append([]int{pl.Loss, pl.Pred}, pl.Grads...) {
			if pl.Vals[v].Last != end {
				t.Fatalf("%s: %s is released at step %d of %d; the host reads it after the run", name, pl.Vals[v].Name, pl.Vals[v].Last, end)
			}
		}
		if len(pl.Grads) != len(net.Grads) || len(pl.GradNames) != len(net.Grads) {
			t.Fatalf("%s: %d gradients planned for %d", name, len(pl.Grads), len(net.Grads))
		}
	})
	t.Logf("activation memory with shared slots: %.1f%% of one buffer per value", 100*float64(shared)/float64(naive))
}

// gatedPlan is the training plan of a three-layer GatedGCN (ZINC, adjacency encoding, r = 1,
// width 8) on a batch of eight synthetic graphs.
func gatedPlan(t *testing.T) *gpuexec.Plan { t.Helper(); return gatedPlanWith(t, gpuopt.Default()) }

// gatedPlanWith is gatedPlan compiled with the options o.
func gatedPlanWith(t *testing.T, o gpuopt.Options) *gpuexec.Plan {
	t.Helper()
	c := newCase(t, encodingCase{"zinc", "adj", 1, false, false}, "model.name=gatedgcn", "model.layers=3", "model.hidden=8")
	gs := synthetic(t, c.spec, c.key, 8, 3)
	tr, net := trainingNet(t, c, bucketOf(batchesOf(t, gs, 8)[0]), tensor.Float32)
	pl, err := CompileWith(net, tr.P, o)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// TestPlanEdgeFoldsOff: with gpu.edge_folds none (a config's options, gpuopt.Options.EdgeFolds)
// the plan keeps the edge sum's gradient and the batch norm's dx as steps of their own (what
// gpu-speed.sh's nofold step measures).
func TestPlanEdgeFoldsOff(t *testing.T) {
	c := newCase(t, encodingCase{"zinc", "adj", 1, false, false}, "model.name=gatedgcn", "gpu.edge_folds=none")
	o, err := c.cfg.GPUOptions()
	if err != nil {
		t.Fatal(err)
	}
	if o.EdgeFolds != (gpuopt.Folds{}) {
		t.Fatalf("gpu.edge_folds none gives the folds %v", o.EdgeFolds)
	}
	pl := gatedPlanWith(t, o)
	edgeSumGrads, folded := 0, 0
	for _, st := range pl.Steps {
		if st.Kind == prog.EdgeSumGrad {
			edgeSumGrads++
		}
		if st.Scatter || st.BN != nil || st.SumsOnly || st.Gate != nil {
			folded++
		}
	}
	if edgeSumGrads != 3 || folded != 0 {
		t.Errorf("folds off: %d edge-sum gradient steps, %d folded steps; want 3 and 0", edgeSumGrads, folded)
	}
}

// TestPlanGateFold: in every GatedGCN plan (every dataset kind and encoding, training and
// evaluation) each gated aggregation's pass over ê runs in the edge sum step that computes ê
// (Step.Gate: foldGate), so no gated aggregation step is left; its sums and denominators come
// from a fill step before it and live on, and Bh is computed before it. With
// the gate fold off (gpu.edge_folds scatter,bndx) the plan keeps the gated steps (one more step
// for each fold).
func TestPlanGateFold(t *testing.T) {
	folds := 0
	eachNet(t, func(t *testing.T, name string, net *nn.Net, p *nn.Params) {
		pl, err := Compile(net, p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		gates := 0
		for si, st := range pl.Steps {
			if st.Kind == prog.GatedAggregate {
				t.Errorf("%s: step %d is a gated aggregation: not folded into its edge sum", name, si)
			}
			f := st.Gate
			if f == nil {
				continue
			}
			gates++
			if st.Kind != prog.EdgeSum {
				t.Fatalf("%s: step %d (%s) has a gate", name, si, st.Kind)
			}
			for _, v := range []int{f.Out, f.Den} {
				val := pl.Vals[v]
				if val.Def >= si || pl.Steps[val.Def].Fills == nil || !slices.Contains(pl.Steps[val.Def].Outs, v) || val.Last < si {
					t.Errorf("%s: step %d adds into %s, which lives over steps [%d, %d], not filled before it", name, si, val.Name, val.Def, val.Last)
				}
			}
			if bh := pl.Vals[f.Bh]; bh.Src == gpuexec.FromStep && (bh.Def >= si || bh.Last < si) {
				t.Errorf("%s: step %d reads %s, which lives over steps [%d, %d]", name, si, bh.Name, bh.Def, bh.Last)
			}
		}
		noGate := gpuopt.Default()
		noGate.EdgeFolds.Gate = false
		off, err := CompileWith(net, p, noGate)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		gated := 0
		for _, st := range off.Steps {
			if st.Gate != nil {
				t.Fatalf("%s: a gate folded with the fold off", name)
			}
			if st.Kind == prog.GatedAggregate {
				gated++
			}
		}
		if gated != gates || len(off.Steps) != len(pl.Steps)+gates {
			t.Errorf("%s: %d gated steps and %d steps with the fold off; %d folds in %d steps with it on", name, gated, len(off.Steps), gates, len(pl.Steps))
		}
		folds += gates
	})
	if folds == 0 {
		t.Fatal("no gate folded in any plan")
	}
}

// TestPlanFolds: in GatedGCN's training plan the gradient of a layer's input h sums the dx of
// its four node products (A, B, D, E); each of those products adds its dx into the sum's buffer
// (Step.Acc, β = 1) instead of a pairwise sum launch. The biases of the C, D and E products go
// into the edge sum and A's into the residual addition (Step.Bias) instead of bias launches.
// TestPlanBuffers checks that the buffers stay valid, TestStepMatchesCPU the numbers.
func TestPlanFolds(t *testing.T) {
	pl := gatedPlan(t)
	acc, sums, biases, adds := 0, 0, 0, 0
	batched := map[prog.Op][]int{} // by kind, the members of each batched step
	for _, st := range pl.Steps {
		if st.Batch {
			batched[st.Kind] = append(batched[st.Kind], len(st.Ins))
		}
		switch {
		case st.Acc:
			acc++
		case st.Kind == prog.GradSum:
			sums++
		case st.Kind == prog.AddBias:
			adds++
		}
		for _, b := range st.Bias {
			if b >= 0 {
				biases++
			}
		}
	}
	t.Logf("%d steps add into a gradient sum, %d sums launched; %d biases folded, %d bias launches", acc, sums, biases, adds)
	if acc < 4*3 {
		t.Errorf("%d products add into a gradient sum, want at least 4 per layer (12)", acc)
	}
	if biases < 4*3 {
		t.Errorf("%d biases folded into the steps reading them, want at least 4 per layer (12)", biases)
	}
	// Per layer: the edge and node batch norms' statistics taken by the edge sum and by the
	// residual sum, and the aggregation's division by that sum; the loss with its gradient;
	// two fill steps (forward, backward).
	stats, divs, withGrad, fills := 0, 0, 0, 0
	for _, st := range pl.Steps {
		if st.Stats != nil {
			stats++
		}
		if st.Div != nil {
			divs++
		}
		if st.WithGrad {
			withGrad++
		}
		if st.Fills != nil {
			fills++
		}
	}
	t.Logf("%d statistics folded into producers, %d divisions into additions, %d losses with their gradient, %d fill steps", stats, divs, withGrad, fills)
	if stats != 2*3 || divs != 3 || withGrad != 1 || fills != 2 {
		t.Errorf("%d statistics, %d divisions, %d losses with gradients, %d fill steps folded; want 6, 3, 1, 2", stats, divs, withGrad, fills)
	}
	// Per layer, the edge sum's gradient (the scatter of dê along src and dst) in the gated
	// aggregation gradient's pass.
	scatters, edgeSumGrads := 0, 0
	for _, st := range pl.Steps {
		if st.Scatter {
			scatters++
			if len(st.Outs) != 4 || pl.Vals[st.Outs[2]].Elems != pl.Vals[st.Outs[1]].Elems || pl.Vals[st.Outs[3]].Elems != pl.Vals[st.Outs[1]].Elems {
				t.Errorf("a gated gradient step scattering into %d outputs, not two of dBh's size", len(st.Outs))
			}
		}
		if st.Kind == prog.EdgeSumGrad {
			edgeSumGrads++
		}
	}
	if scatters != 3 || edgeSumGrads != 0 {
		t.Errorf("%d edge-sum gradients folded into the gated gradient, %d left as steps; want 3 and 0", scatters, edgeSumGrads)
	}
	// The edges' batch norm's dx in the gated gradient's pass, in every layer but the last (whose
	// ê no later layer reads, so its batch norm has no gradient): the batch norm's step leaves its
	// column sums in dx's place.
	bnFolds, sumsOnly := 0, 0
	for _, st := range pl.Steps {
		if st.BN != nil {
			bnFolds++
			if st.Acc || pl.Vals[st.BN.Tot].Def >= pl.Vals[st.Outs[0]].Def {
				t.Errorf("a gated gradient computing a batch norm's dx: Acc %v, its sums defined at step %d, dê at %d", st.Acc, pl.Vals[st.BN.Tot].Def, pl.Vals[st.Outs[0]].Def)
			}
		}
		if st.SumsOnly {
			sumsOnly++
		}
	}
	if bnFolds != 2 || sumsOnly != 2 {
		t.Errorf("%d batch-norm dx passes folded into the gated gradient, %d sums-only batch norms; want 2 and 2", bnFolds, sumsOnly)
	}
	// Per layer, the node products A, B, D, E, their weights' gradients and their biases'
	// gradients: three batched launches of four.
	t.Logf("batched steps (members by kind): %v", batched)
	for _, k := range []prog.Op{prog.MatMul, prog.MatMulGradW, prog.ColSum} {
		if !slices.Equal(batched[k], []int{4, 4, 4}) {
			t.Errorf("batched %s steps of %v members, want one of 4 per layer", k, batched[k])
		}
	}
}

// bf16Options are the default GPU options under train.precision bf16.
func bf16Options() gpuopt.Options {
	o := gpuopt.Default()
	o.Precision = gpuopt.BF16
	return o
}

// TestPlanBF16: with train.precision bf16 (gpuopt.BF16) every model's plan, training
// and evaluation, stores in bf16 exactly its edge sums' outputs (GatedGCN's ê, one a layer) that
// only kernels reading bf16 read, and nothing else: each such value is an edge sum's output the
// host does not read, each step reading it is a gated aggregation (or its gradient) reading it as
// ê or a batch norm (or its gradient) reading it as x. Two such values live at once share a slot
// of their size in float32s, one in each half, and nothing else shares a slot with a value while
// it lives; the plan is otherwise the float32 plan (the same steps), its activation bytes never
// more. In training GatedGCN's ê of every layer lives until its backward pass, so they pair up,
// and an eight-layer net's training plan needs three fewer edge-sized slots of the 17 its
// float32 plan has (the four pairs save four at the start of the backward pass, less one the
// backward's temporaries take while a pair's second ê waits for its layer); its evaluation plan,
// whose ê die within their layers, is as large as float32's.
func TestPlanBF16(t *testing.T) {
	seen := 0
	eachNet(t, func(t *testing.T, name string, net *nn.Net, p *nn.Params) {
		want, err := Compile(net, p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		pl, err := CompileWith(net, p, bf16Options())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(pl.Steps) != len(want.Steps) {
			t.Fatalf("%s: %d steps in bf16, %d in float32", name, len(pl.Steps), len(want.Steps))
		}
		outs := map[int]bool{}
		for _, v := range pl.Prog.Outputs() {
			outs[v] = true
		}
		edgeSums, marked := 0, 0
		for si, st := range pl.Steps {
			if st.Kind == prog.EdgeSum {
				edgeSums++
			}
			for _, o := range st.Outs {
				if o >= 0 && pl.Vals[o].BF16 && (st.Kind != prog.EdgeSum || outs[o]) {
					t.Errorf("%s: step %d (%s) writes %s, stored in bf16", name, si, st.Kind, pl.Vals[o].Name)
				}
			}
			for w, ins := range st.Ins {
				for i, v := range ins {
					if !pl.Vals[v].BF16 {
						continue
					}
					ok := i == 0 && (st.Kind == prog.BatchNorm || st.Kind == prog.BatchNormRelu || st.Kind == prog.BatchNormGrad ||
						st.Kind == prog.BatchNormReluGrad || st.Kind == prog.GatedAggregate || (st.Kind == prog.GatedAggregateGrad && w < 2))
					if !ok {
						t.Errorf("%s: step %d (%s) member %d reads %s, stored in bf16, as its input %d", name, si, st.Kind, w, pl.Vals[v].Name, i)
					}
				}
			}
			for _, b := range slices.Concat(st.Bias, st.Div) {
				if b >= 0 && pl.Vals[b].BF16 {
					t.Errorf("%s: step %d (%s) reads %s, stored in bf16, as a bias or divisor", name, si, st.Kind, pl.Vals[b].Name)
				}
			}
		}
		bySlot := map[int][]int{}
		for i := range pl.Vals {
			v := &pl.Vals[i]
			if v.Src == gpuexec.FromStep {
				bySlot[v.Slot] = append(bySlot[v.Slot], i)
			}
			if v.BF16 {
				marked++
			}
		}
		pairs := 0
		for slot, vs := range bySlot {
			for a := 0; a < len(vs); a++ {
				for b := a + 1; b < len(vs); b++ {
					va, vb := pl.Vals[vs[a]], pl.Vals[vs[b]]
					if va.Def > vb.Last || vb.Def > va.Last {
						continue
					}
					if !va.BF16 || !vb.BF16 || va.Elems != vb.Elems || pl.Slots[slot] != va.Elems || va.SlotByte+vb.SlotByte != 2*va.Elems {
						t.Fatalf("%s: slot %d of %d holds %s (bf16 %t, byte %d) and %s (bf16 %t, byte %d) at once", name, slot, pl.Slots[slot],
							va.Name, va.BF16, va.SlotByte, vb.Name, vb.BF16, vb.SlotByte)
					}
					pairs++
				}
			}
		}
		train := !strings.HasSuffix(name, "/eval")
		if strings.Contains(name, "gatedgcn") {
			if edgeSums == 0 || marked != edgeSums || (train && pairs == 0) {
				t.Errorf("%s: %d of %d edge sums stored in bf16, %d pairs sharing a slot; want every one, and in training pairs", name, marked, edgeSums, pairs)
			}
			seen++
		}
		if pl.Bytes() > want.Bytes() {
			t.Errorf("%s: %d bytes in bf16, more than float32's %d", name, pl.Bytes(), want.Bytes())
		}
	})
	if seen == 0 {
		t.Fatal("no GatedGCN net among the plans")
	}

	// An eight-layer GatedGCN: training needs three edge-sized slots fewer, evaluation none.
	c := newCase(t, encodingCase{"zinc", "adj", 4, false, false}, "model.name=gatedgcn", "model.layers=8", "model.hidden=8")
	gs := synthetic(t, c.spec, c.key, 8, 3)
	b := bucketOf(batchesOf(t, gs, 8)[0])
	for _, train := range []bool{true, false} {
		p, err := nn.NewParams(tensor.Float32, 1)
		if err != nil {
			t.Fatal(err)
		}
		net, err := c.build(p, b, train)
		if err != nil {
			t.Fatal(err)
		}
		edge := b.Edges * 8 // ê's elements: [edges, hidden]
		count := func(o gpuopt.Options) (int, int64) {
			pl, err := CompileWith(net, p, o)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, s := range pl.Slots {
				if s == edge {
					n++
				}
			}
			return n, pl.Bytes()
		}
		n32, b32 := count(gpuopt.Default())
		n16, b16 := count(bf16Options())
		t.Logf("eight layers, training %t: %d edge-sized slots (%d bytes) in float32, %d (%d bytes) with ê in bf16", train, n32, b32, n16, b16)
		want := n32
		if train {
			want = n32 - 3
		}
		if n16 != want || b32-b16 != int64(4*edge*(n32-n16)) {
			t.Errorf("training %t: %d edge-sized slots with ê in bf16, want %d (of %d in float32); %d bytes against %d", train, n16, want, n32, b16, b32)
		}
		net.Close()
	}
}
