package gpu

// Equivalence of a device training step with the CPU step: loss, every gradient, the updated
// parameters, Adam's moments and the batch-norm running statistics after one step on the same
// batch and the same initial parameters (the same dropout masks), then a short run whose
// losses and evaluation metrics track the CPU run's.
//
// Each check runs on the emulated GPU (emuBackend: the real kernels and launchers, the
// kernels compiled for the CPU), on every machine with a C++ compiler, which tests the
// executor (plan, buffer sharing, argument wiring, gradient groups, Adam, results) and the
// kernels end to end; and on the GPU where one is found (TestGPU*). Without a GPU the TestGPU*
// tests skip with the probe report; REWIREGNN_REQUIRE_GPU=1 makes them fail instead.

import (
	"fmt"
	"github.com/rewiregnn/rewiregnn/gpuexec"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rewiregnn/rewiregnn/cuda"
	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
	"github.com/rewiregnn/rewiregnn/cuda/emu"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

var (
	gpuOnce sync.Once
	gpuDev  *gpuexec.CUDA
	gpuErr  error
)

// realGPU returns the GPU backend, or skips (no GPU) or fails (a GPU that does not work, or
// none under REWIREGNN_REQUIRE_GPU=1).
func realGPU(t *testing.T) gpuexec.Backend {
	t.Helper()
	gpuOnce.Do(func() { gpuDev, gpuErr = gpuexec.OpenCUDA(0) })
	if gpuErr != nil {
		if cudalib.ErrNoDevice(gpuErr) && !cuda.RequireGPU() {
			first, _, _ := strings.Cut(gpuErr.Error(), "\n")
			t.Skipf("no GPU found, the GPU part is skipped (the same checks ran on the emulated GPU): %s", first)
		}
		t.Fatalf("GPU set-up failed: %v", gpuErr)
	}
	return gpuDev
}

// emuBackend returns a new emulated GPU, closed when the test ends. Where no C++ compiler is
// found it skips the test, or fails it under REWIREGNN_REQUIRE_EMU=1.
func emuBackend(t testing.TB) *gpuexec.CUDA { return emuWith(t, emu.Options{}) }

// emuExact is emuBackend with the deterministic schedule: float atomics add in the same order
// on every run, so two runs can be compared bit for bit.
func emuExact(t testing.TB) *gpuexec.CUDA { return emuWith(t, emu.Options{Deterministic: true}) }

func emuWith(t testing.TB, o emu.Options) *gpuexec.CUDA {
	t.Helper()
	if err := emu.Skip(); err != nil {
		t.Skip(err)
	}
	b, err := gpuexec.OpenEmulated(o)
	if err != nil {
		t.Fatalf("emulated GPU: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("closing the emulated GPU: %v", err)
		}
	})
	return b
}

func TestMain(m *testing.M) {
	code := m.Run()
	if gpuDev != nil {
		if err := gpuDev.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "closing the test GPU:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// tol: |got − want| ≤ rel·|want| + abs·max(1, max|want|) over a tensor.
type tol struct{ rel, abs float64 }

var (
	lossTol = tol{2e-4, 1e-6}
	gradTol = tol{2e-3, 2e-4} // float32 sums in another order through several layers
	statTol = tol{1e-4, 1e-5}
)

// near compares got with want and reports the worst element.
func near(t *testing.T, what string, got []float32, want []float64, tl tol) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale := 1.0
	for _, w := range want {
		scale = math.Max(scale, math.Abs(w))
	}
	worst, wi := 0.0, -1
	for i := range got {
		g := float64(got[i])
		if math.IsNaN(g) || math.IsInf(g, 0) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, g, want[i])
		}
		if r := math.Abs(g-want[i]) / (tl.rel*math.Abs(want[i]) + tl.abs*scale); r > worst {
			worst, wi = r, i
		}
	}
	if worst > 1 {
		t.Fatalf("%s[%d] = %.8g, want %.8g (%.1f× the tolerance rel %g, abs %g·%g)", what, wi, got[wi], want[wi], worst, tl.rel, tl.abs, scale)
	}
}

func f32s(xs []float64) []float32 {
	out := make([]float32, len(xs))
	for i, x := range xs {
		out[i] = float32(x)
	}
	return out
}

// pair is the same model twice, on identical initial parameters: on the CPU, and on a device.
type pair struct {
	cpu, dev *nn.Trainer
	g        *Trainer
}

func newPair(t *testing.T, c modelCase, b gpuexec.Backend, bucket nn.Bucket) *pair {
	t.Helper()
	return newPairBuckets(t, c, b, []nn.Bucket{bucket})
}

// newPairBuckets is newPair on several buckets.
func newPairBuckets(t *testing.T, c modelCase, b gpuexec.Backend, buckets []nn.Bucket) *pair {
	t.Helper()
	mk := func() *nn.Trainer {
		p, err := nn.NewParams(tensor.Float32, 7)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := nn.NewTrainer(p, c.build, buckets, 1e-3)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Net(0); err != nil {
			t.Fatal(err)
		}
		return tr
	}
	pr := &pair{cpu: mk(), dev: mk()}
	var err error
	if pr.g, err = NewTrainer(pr.dev, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.g.Close(); pr.cpu.Close(); pr.dev.Close() })
	return pr
}

// stepCase is a model on a dataset kind with the batches of its test.
func stepBatches(t *testing.T, c modelCase) ([]*data.Batch, nn.Bucket) {
	gs := synthetic(t, c.spec, c.key, 12, 3)
	bs := batchesOf(t, gs, 4)
	b := nn.Bucket{}
	for _, bt := range bs {
		b.Nodes = max(b.Nodes, bt.Union.N+3) // padding rows and edges in every batch
		b.Edges = max(b.Edges, bt.Union.NumEdges()+5)
		b.Graphs = max(b.Graphs, bt.NumGraphs+1)
	}
	return bs, b
}

// checkStep compares one training step (gradients, then the update) and a short run.
func checkStep(t *testing.T, c modelCase, b gpuexec.Backend) {
	bs, bucket := stepBatches(t, c)
	pr := newPair(t, c, b, bucket)
	bt := bs[0]

	// Gradients of step 1 (the dropout masks of step 1 on both sides).
	pr.cpu.P.Step, pr.dev.P.Step = 1, 1
	pr.cpu.P.SetTraining(true)
	net, err := pr.cpu.Net(0)
	if err != nil {
		t.Fatal(err)
	}
	lossC, err := net.Run(bt)
	if err != nil {
		t.Fatal(err)
	}
	names, vals := net.Gradients()
	lossG, grads, err := pr.g.Gradients(bt)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "loss", []float32{float32(lossG)}, []float64{lossC}, lossTol)
	if len(grads) != len(names) {
		t.Fatalf("%d gradients on the device, %d on the CPU", len(grads), len(names))
	}
	for i, name := range names {
		near(t, "gradient of "+name, grads[name], ops.Values(vals[i]), gradTol)
	}

	// The same step with the update (both forward passes moved the running statistics once).
	pr.cpu.P.Step, pr.dev.P.Step = 0, 0
	lossC, predC, err := pr.cpu.StepPred(bt)
	if err != nil {
		t.Fatal(err)
	}
	predC = slices.Clone(predC)
	lossG, predG, err := pr.g.StepPred(bt)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "step loss", []float32{float32(lossG)}, []float64{lossC}, lossTol)
	near(t, "step predictions", f32s(predG), predC, gradTol)
	if err := pr.g.Sync(); err != nil {
		t.Fatal(err)
	}
	compareState(t, pr, names, vals)

	// A short run: three more steps over the other batches, then evaluation of every batch.
	for s, bt := range append(bs[1:], bs[0]) {
		lc, _, err := pr.cpu.StepPred(bt)
		if err != nil {
			t.Fatal(err)
		}
		lg, _, err := pr.g.StepPred(bt)
		if err != nil {
			t.Fatal(err)
		}
		near(t, fmt.Sprintf("loss of step %d", s+2), []float32{float32(lg)}, []float64{lc}, tol{2e-3, 1e-5})
	}
	for i, bt := range bs {
		lc, pc, err := pr.cpu.Eval(bt)
		if err != nil {
			t.Fatal(err)
		}
		pc = slices.Clone(pc)
		lg, pg, err := pr.g.Eval(bt)
		if err != nil {
			t.Fatal(err)
		}
		near(t, fmt.Sprintf("evaluation loss of batch %d", i), []float32{float32(lg)}, []float64{lc}, tol{2e-3, 1e-5})
		near(t, fmt.Sprintf("evaluation predictions of batch %d", i), f32s(pg), pc, tol{5e-3, 1e-3})
	}
}

// compareState compares the parameters, Adam's moments and the running statistics after
// one step (grads: the CPU gradients of that step).
func compareState(t *testing.T, pr *pair, names []string, grads []gorgonia.Value) {
	t.Helper()
	gradOf := map[string][]float64{}
	for i, n := range names {
		gradOf[n] = ops.Values(grads[i])
	}
	sc, sg := pr.cpu.Opt.State(), pr.dev.Opt.State()
	if sc.Step != sg.Step {
		t.Fatalf("Adam step %d on the device, %d on the CPU", sg.Step, sc.Step)
	}
	lr := pr.cpu.Opt.LR
	for _, name := range pr.cpu.P.Names {
		want := ops.Values(pr.cpu.P.T[name])
		got := pr.dev.P.T[name].Float32s()
		g := gradOf[name]
		if g == nil { // no gradient: untouched
			near(t, "parameter "+name+" (no gradient)", got, want, tol{0, 0})
			continue
		}
		near(t, "Adam m of "+name, f32s(sg.M[name]), sc.M[name], gradTol)
		near(t, "Adam v of "+name, f32s(sg.V[name]), sc.V[name], tol{2*gradTol.rel + 1e-6, 2 * gradTol.abs})
		// The first Adam step moves each entry by lr·g/(|g| + 1e-8): compare where the
		// gradient is clearly non-zero; elsewhere (gradients at rounding level, such as those
		// of a bias before a batch norm, whose sign and size are noise on either side) the
		// move must stay within lr.
		gmax := 0.0
		for _, v := range g {
			gmax = math.Max(gmax, math.Abs(v))
		}
		for i := range want {
			d := math.Abs(float64(got[i]) - want[i])
			if math.Abs(g[i]) > max(1e-3*gmax, 1e-6) {
				if d > 1e-3*lr+1e-6*math.Abs(want[i]) {
					t.Fatalf("parameter %s[%d] = %.8g after the step, want %.8g (gradient %.3g)", name, i, got[i], want[i], g[i])
				}
			} else if d > 2.01*lr {
				t.Fatalf("parameter %s[%d] = %.8g after the step, want %.8g: moved more than lr", name, i, got[i], want[i])
			}
		}
	}
	for name, s := range pr.cpu.P.BN {
		d := pr.dev.P.BN[name]
		near(t, "running mean of "+name, f32s(d.RunMean), s.RunMean, statTol)
		near(t, "running variance of "+name, f32s(d.RunVar), s.RunVar, statTol)
	}
}

// stepCases are the models the step tests train: GatedGCN, MoNet and the transformer (each
// normalisation), with dropout, on a graph regression, a graph and a node classification, and
// with each node encoding (Laplacian, random walk); and GatedGCN on a multi-label task (the BCE
// loss) and a multi-target regression.
func stepCases(t *testing.T) []modelCase {
	var out []modelCase
	for _, e := range []encodingCase{encodings[1], encodings[4], encodings[5], encodings[6], encodings[10]} {
		for _, ms := range modelSets {
			out = append(out, newCase(t, e, append(slices.Clone(ms), "model.dropout=0.1", "model.in_feat_dropout=0.1")...))
		}
	}
	// the BCE loss (multi-label, missing labels) and the L1 loss over several targets
	for _, e := range encodings[len(encodings)-2:] {
		out = append(out, newCase(t, e, append(modelSet(t, "gatedgcn"), "model.dropout=0.1")...))
	}
	// the relative-position Transformer: a table row and sinusoids per path length, W_R on walk counts
	for _, rc := range []struct {
		e   encodingCase
		rel string
	}{{encodings[2], "learned"}, {encodings[2], "sinusoid"}, {encodings[1], "learned"}} {
		out = append(out, newCase(t, rc.e, append(modelSet(t, "transformer"), "model.relative="+rc.rel, "model.dropout=0.1")...))
	}
	return out
}

// TestStepMatchesCPU runs the step and short-run comparison on the emulated GPU, in its
// deterministic schedule (fast: a block's threads are fibers on one OS thread).
func TestStepMatchesCPU(t *testing.T) {
	for _, c := range stepCases(t) {
		t.Run(c.name, func(t *testing.T) { checkStep(t, c, emuExact(t)) })
	}
}

// TestStepMatchesCPUConcurrent runs one case of each model on the emulated GPU with every
// thread of a block running at once (as on a GPU), so that the kernels' atomics and barriers
// are exercised inside whole steps as well as in cuda's op tests.
func TestStepMatchesCPUConcurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("concurrent whole-step checks: skipped with -short")
	}
	for _, c := range stepCases(t) {
		if !strings.HasPrefix(c.name, "cifar10") || strings.Contains(c.name, "_ln") || strings.Contains(c.name, "pre_bn") {
			continue
		}
		t.Run(c.name, func(t *testing.T) { checkStep(t, c, emuBackend(t)) })
	}
}

// TestGPUStepMatchesCPU runs it on the GPU.
func TestGPUStepMatchesCPU(t *testing.T) {
	b := realGPU(t)
	for _, c := range stepCases(t) {
		t.Run(c.name, func(t *testing.T) { checkStep(t, c, b) })
	}
}

// TestSyncRoundTrip checks that Sync brings every piece of device state to the host mirror
// exactly: a new Trainer made from the synced host state (as after restoring a checkpoint)
// continues bit for bit like the one that kept running.
func TestSyncRoundTrip(t *testing.T) {
	c := newCase(t, encodings[1], append(modelSet(t, "gatedgcn"), "model.dropout=0.1")...)
	bs, bucket := stepBatches(t, c)
	sim := emuExact(t)
	pr := newPair(t, c, sim, bucket)
	for _, bt := range bs[:2] {
		if _, _, err := pr.g.StepPred(bt); err != nil {
			t.Fatal(err)
		}
	}
	if err := pr.g.Sync(); err != nil {
		t.Fatal(err)
	}
	fresh, err := NewTrainer(pr.dev, sim)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	step := pr.dev.P.Step
	l1, p1, err := pr.g.StepPred(bs[2])
	if err != nil {
		t.Fatal(err)
	}
	p1 = slices.Clone(p1)
	pr.dev.P.Step = step // the same dropout masks
	st := pr.dev.Opt.State()
	st.Step--
	pr.dev.Opt.SetState(st)
	l2, p2, err := fresh.StepPred(bs[2])
	if err != nil {
		t.Fatal(err)
	}
	if l1 != l2 || !slices.Equal(p1, p2) {
		t.Fatalf("after Sync and a new Trainer: loss %v, want %v (predictions equal: %t)", l2, l1, slices.Equal(p1, p2))
	}
	pr.g.Close()
	if err := fresh.Sync(); err != nil {
		t.Fatal(err)
	}
}

// TestPipelinedSteps checks Launch, Stage, Wait and StepAhead: staging the next batch while a
// step runs, and launching it behind the running one (two steps in flight), give the same
// losses, predictions and parameters as StepPred one batch at a time, and misuse is refused.
func TestPipelinedSteps(t *testing.T) {
	c := newCase(t, encodings[6], append(modelSet(t, "gatedgcn"), "model.dropout=0.1")...) // Laplacian encoding
	bs, bucket := stepBatches(t, c)
	a, b, d := newPair(t, c, emuExact(t), bucket), newPair(t, c, emuExact(t), bucket), newPair(t, c, emuExact(t), bucket)
	signs := func(p *pair, s int) {
		if p.dev.LapSign == nil {
			p.dev.LapSign = make([]float32, 2)
		}
		for j := range p.dev.LapSign {
			p.dev.LapSign[j] = float32(1 - 2*((s>>j)&1))
		}
	}
	const steps = 6
	var want []float64
	var wantPred [][]float64
	for s := 0; s < steps; s++ {
		signs(a, s)
		l, p, err := a.g.StepPred(bs[s%len(bs)])
		if err != nil {
			t.Fatal(err)
		}
		want, wantPred = append(want, l), append(wantPred, slices.Clone(p))
	}
	// b: Stage the next batch between Launch and Wait.
	signs(b, 0)
	if err := b.g.Stage(bs[0]); err != nil {
		t.Fatal(err)
	}
	for s := 0; s < steps; s++ {
		if err := b.g.Launch(bs[s%len(bs)]); err != nil {
			t.Fatal(err)
		}
		if _, _, err := b.g.Eval(bs[0]); err == nil {
			t.Fatal("Eval while a step is in flight was accepted")
		}
		if s+1 < steps {
			signs(b, s+1)
			if err := b.g.Stage(bs[(s+1)%len(bs)]); err != nil {
				t.Fatal(err)
			}
		}
		l, _, err := b.g.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if l != want[s] {
			t.Fatalf("step %d: pipelined loss %v, one at a time %v", s, l, want[s])
		}
	}
	if _, _, err := b.g.Wait(); err == nil {
		t.Fatal("Wait without a launched step was accepted")
	}
	// d: StepAhead, each step launched behind the one before it (the results are read back
	// asynchronously, two steps in flight).
	signs(d, 0)
	for s := 0; s < steps; s++ {
		var next func() *data.Batch
		if s+1 < steps {
			next = func() *data.Batch {
				signs(d, s+1)
				return bs[(s+1)%len(bs)]
			}
		}
		l, p, ahead, err := d.g.StepAhead(bs[s%len(bs)], next)
		if err != nil {
			t.Fatal(err)
		}
		if ahead != (next != nil) {
			t.Fatalf("step %d: launched ahead %v, want %v", s, ahead, next != nil)
		}
		if l != want[s] || !slices.Equal(p, wantPred[s]) {
			t.Fatalf("step %d: loss %v with the next step in flight, one at a time %v (predictions equal: %t)", s, l, want[s], slices.Equal(p, wantPred[s]))
		}
	}
	if err := a.g.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := b.g.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := d.g.Sync(); err != nil {
		t.Fatal(err)
	}
	for _, name := range a.dev.P.Names {
		if !slices.Equal(a.dev.P.T[name].Float32s(), b.dev.P.T[name].Float32s()) {
			t.Fatalf("parameter %s differs between pipelined and one-at-a-time steps", name)
		}
		if !slices.Equal(a.dev.P.T[name].Float32s(), d.dev.P.T[name].Float32s()) {
			t.Fatalf("parameter %s differs between steps launched ahead and one at a time", name)
		}
	}
	for i := 0; i < 2; i++ { // two in flight; a third is refused
		if err := d.g.Launch(bs[0]); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.g.Launch(bs[0]); err == nil {
		t.Fatal("a third step in flight was accepted")
	}
	if _, _, err := d.g.Gradients(bs[0]); err == nil {
		t.Fatal("Gradients while steps are in flight was accepted")
	}
}
