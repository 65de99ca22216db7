package gpu

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/rewiregnn/rewiregnn/cpuexec"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/ops"
	"github.com/rewiregnn/rewiregnn/prog"
	"gorgonia.org/tensor"
)

// The CPU runner (cpuexec.Runner) checked against itself under its own stress: every registered
// model trained for a few steps (Adam in between) and evaluated on the net's runner, and again
// on a runner of the same program with every slot filled with NaN after its last reader, with
// and without activation recomputation: the same losses, predictions, gradients and running
// statistics bit for bit. (Until the graph executor went, this test compared the runner with
// it: docs/results/executor/README.md. In package gpu for its model cases.)

// bitsOf returns the contents of a []float32 or []float64 as float64s.
func bitsOf(x any) []float64 {
	switch v := x.(type) {
	case []float32:
		out := make([]float64, len(v))
		for i, f := range v {
			out[i] = float64(f)
		}
		return out
	case []float64:
		return slices.Clone(v)
	case float32:
		return []float64{float64(v)}
	case float64:
		return []float64{v}
	}
	return nil
}

// same fails unless got and want are equal bit for bit.
func same(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Fatalf("%s[%d] = %.9g, want %.9g (of %d)", what, i, got[i], want[i], len(want))
		}
	}
}

// bnStats copies every batch norm's running statistics.
func bnStats(p *nn.Params) map[string][2][]float64 {
	out := map[string][2][]float64{}
	for name, s := range p.BN {
		out[name] = [2][]float64{slices.Clone(s.RunMean), slices.Clone(s.RunVar)}
	}
	return out
}

func setStats(p *nn.Params, st map[string][2][]float64) {
	for name, s := range p.BN {
		copy(s.RunMean, st[name][0])
		copy(s.RunVar, st[name][1])
	}
}

// runnerOf lowers net and compiles it for the CPU runner.
func runnerOf(t *testing.T, net *nn.Net, p *nn.Params, recompute bool) (*cpuexec.Runner, *prog.Program) {
	t.Helper()
	pr, bind, err := net.Program(p)
	if err != nil {
		t.Fatal(err)
	}
	r, err := cpuexec.CompileProgram(pr, bind, recompute)
	if err != nil {
		t.Fatal(err)
	}
	r.SetPoison(true) // a kernel reading a value after its planned lifetime gets NaN
	return r, pr
}

// compareRun runs bt through net (its own runner) and through r from the same running
// statistics, and compares everything a step delivers.
func compareRun(t *testing.T, what string, net *nn.Net, p *nn.Params, r *cpuexec.Runner, pr *prog.Program, bt *data.Batch) {
	t.Helper()
	before := bnStats(p)
	loss, err := net.Run(bt)
	if err != nil {
		t.Fatal(err)
	}
	pred := bitsOf(net.Pred.Value().Data())
	names, grads := net.Gradients()
	after := bnStats(p)
	setStats(p, before)
	if err := r.Run(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	same(t, what+": loss", bitsOf(r.Value(pr.Loss)), []float64{loss})
	same(t, what+": prediction", bitsOf(r.Value(pr.Pred)), pred)
	if !slices.Equal(names, pr.GradNames) {
		t.Fatalf("%s: gradients %v, want %v", what, pr.GradNames, names)
	}
	for i, name := range names {
		same(t, what+": gradient of "+name, bitsOf(r.Value(pr.Grads[i])), ops.Values(grads[i]))
	}
	for name, s := range p.BN {
		same(t, what+": running mean of "+name, s.RunMean, after[name][0])
		same(t, what+": running variance of "+name, s.RunVar, after[name][1])
	}
}

// trainingNet builds case c's trainer on one bucket, with parameters of dtype dt (seed 7), and
// its training net.
func trainingNet(t *testing.T, c modelCase, bucket nn.Bucket, dt tensor.Dtype) (*nn.Trainer, *nn.Net) {
	t.Helper()
	p, err := nn.NewParams(dt, 7)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := nn.NewTrainer(p, c.build, []nn.Bucket{bucket}, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	net, err := tr.Net(0)
	if err != nil {
		t.Fatal(err)
	}
	return tr, net
}

// checkRunner trains a case for a few steps, comparing every step, then evaluates.
func checkRunner(t *testing.T, c modelCase, dt tensor.Dtype, recompute bool) {
	bs, bucket := stepBatches(t, c)
	tr, net := trainingNet(t, c, bucket, dt)
	p := tr.P
	r, pr := runnerOf(t, net, p, recompute)
	arena := &cpuexec.Arena{} // shared by the training and the evaluation runner, as in a trainer
	r.SetArena(arena)
	for s, bt := range append(bs, bs[0]) {
		p.SetTraining(true)
		p.Step = uint64(s + 1)
		compareRun(t, fmt.Sprintf("step %d", s+1), net, p, r, pr, bt)
		names, grads := net.Gradients()
		if err := tr.Opt.Step(p, names, grads); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := tr.EvalNet(0)
	if err != nil {
		t.Fatal(err)
	}
	re, pe := runnerOf(t, ev, p, false)
	re.SetArena(arena)
	p.SetTraining(false)
	for i, bt := range bs {
		compareRun(t, fmt.Sprintf("evaluation of batch %d", i), ev, p, re, pe, bt)
	}
}

func TestRunnerPoisonedAndRecomputed(t *testing.T) {
	for _, c := range stepCases(t) {
		t.Run(c.name, func(t *testing.T) { checkRunner(t, c, tensor.Float32, false) })
		t.Run("recompute/"+c.name, func(t *testing.T) { checkRunner(t, c, tensor.Float32, true) })
	}
	c := stepCases(t)[0]
	t.Run("float64/"+c.name, func(t *testing.T) { checkRunner(t, c, tensor.Float64, false) })
}
