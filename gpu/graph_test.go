package gpu

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/gpuexec"
	"github.com/rewiregnn/rewiregnn/gpuopt"
	"github.com/rewiregnn/rewiregnn/nn"
)

// TestGraphReplayEqualsEager trains the same model twice on the emulated GPU's deterministic
// schedule, once queuing every step launch by launch and once replaying each program's
// captured graph (with dropout, whose masks change every step, batch norm in training and
// evaluation, the Adam update in the graph, two buckets sharing the activation arena): the
// losses, predictions, evaluations and final parameters, moments and statistics agree bit for
// bit, and the replays cost four host calls a step. A third run, without the folds of the
// edge backward pass (gpu.edge_folds gate), agrees bit for bit too. With the
// edge sums stored in bf16 (train.precision bf16) the same three runs
// agree with each other bit for bit, and differ from float32's, by no more than the rounding of
// ê explains. Without any edge fold (gpu.edge_folds none) the gated aggregation's sums are
// added in another order (in training the gate's fold adds them in the statistics grid's order):
// the losses agree within float rounding.
func TestGraphReplayEqualsEager(t *testing.T) {
	c := newCase(t, encodings[1], append(modelSet(t, "gatedgcn"), "model.dropout=0.2")...)
	gs := synthetic(t, c.spec, c.key, 14, 21)
	small, large := batchesOf(t, gs[:4], 4)[0], batchesOf(t, gs[4:], 10)[0]
	buckets := []nn.Bucket{
		{Nodes: small.Union.N + 2, Edges: small.Union.NumEdges() + 4, Graphs: small.NumGraphs + 1},
		{Nodes: large.Union.N + 2, Edges: large.Union.NumEdges() + 4, Graphs: large.NumGraphs + 1},
	}
	type trace struct {
		losses []float64
		preds  [][]float64
		state  map[string][]float32
	}
	run := func(graphs bool, o gpuopt.Options) trace {
		pr := newPairBuckets(t, c, emuExact(t), buckets)
		pr.g.SetGraphs(graphs)
		pr.g.Options = o
		dev := pr.g.Backend().(*gpuexec.CUDA).Dev
		var tr trace
		// The large bucket first, so that the arena does not grow after its capture and that
		// graph, captured at the first step (when Adam's moments are created), is replayed.
		for s, bt := range []*data.Batch{large, small, small, large, large, small} {
			c0 := dev.Counts()
			l, p, err := pr.g.StepPred(bt)
			if err != nil {
				t.Fatal(err)
			}
			if n := dev.Counts().Sub(c0); graphs && s >= 2 && n.HostCalls > 4 { // replays
				t.Errorf("step %d: %d host calls, want at most 4 when the step is replayed", s, n.HostCalls)
			}
			tr.losses = append(tr.losses, l)
			tr.preds = append(tr.preds, slices.Clone(p))
			if s%2 == 1 {
				l, p, err := pr.g.Eval(small)
				if err != nil {
					t.Fatal(err)
				}
				tr.losses = append(tr.losses, l)
				tr.preds = append(tr.preds, slices.Clone(p))
			}
		}
		if err := pr.g.Sync(); err != nil {
			t.Fatal(err)
		}
		tr.state = map[string][]float32{}
		for _, name := range pr.dev.P.Names {
			tr.state[name] = slices.Clone(pr.dev.P.T[name].Float32s())
		}
		st := pr.dev.Opt.State()
		for name, m := range st.M {
			tr.state["m:"+name] = f32s(m)
			tr.state["v:"+name] = f32s(st.V[name])
		}
		for name, s := range bnStats(pr.dev.P) {
			tr.state["mean:"+name], tr.state["var:"+name] = f32s(s[0]), f32s(s[1])
		}
		return tr
	}
	fp32, bf16 := gpuopt.Default(), bf16Options()
	without := func(o gpuopt.Options, folds string) gpuopt.Options {
		f, err := gpuopt.ParseFolds(folds)
		if err != nil {
			t.Fatal(err)
		}
		o.EdgeFolds = f
		return o
	}
	eager, replay := run(false, fp32), run(true, fp32)
	same := func(what string, got, want trace) {
		t.Helper()
		if !slices.Equal(want.losses, got.losses) {
			t.Fatalf("losses %s %v, eager %v", what, got.losses, want.losses)
		}
		for i := range want.preds {
			if !slices.Equal(want.preds[i], got.preds[i]) {
				t.Fatalf("predictions of run %d differ between %s and eager steps", i, what)
			}
		}
		if len(want.state) != len(got.state) {
			t.Fatalf("%d state tensors %s, %d eager", len(got.state), what, len(want.state))
		}
		for name, w := range want.state {
			if !slices.Equal(got.state[name], w) {
				t.Errorf("%s differs between %s and eager steps", name, what)
			}
		}
	}
	same("replayed", replay, eager)
	// Without the folds of the edge backward pass (the edge sum's gradient and the edges' batch
	// norm's dx in the gated gradient's pass) the plan queues their launches as before: the
	// same bits.
	bfEager, bfReplay := run(false, bf16), run(true, bf16)
	same("replayed in bf16", bfReplay, bfEager)
	same("replayed without the edge backward folds", run(true, without(fp32, "gate")), eager)
	same("replayed in bf16 without the edge backward folds", run(true, without(bf16, "gate")), bfEager)
	for _, c := range []struct {
		what      string
		got, want trace
	}{{"float32", run(true, without(fp32, "none")), eager}, {"bf16", run(true, without(bf16, "none")), bfEager}} {
		for i, l := range c.want.losses {
			if g := c.got.losses[i]; math.Abs(g-l) > 1e-4*math.Abs(l) {
				t.Errorf("%s without any edge fold: loss %d is %v, %v with them (beyond float rounding)", c.what, i, g, l)
			}
		}
	}

	// bf16 storage is another run: its losses differ from float32's, but by about what
	// rounding ê to 8 significant bits (a relative 2⁻⁹) does to a few steps of training.
	differ := false
	for i, l := range eager.losses {
		b := bfEager.losses[i]
		differ = differ || b != l
		if d := math.Abs(b-l) / math.Max(math.Abs(l), 1e-3); d > 0.05 {
			t.Errorf("loss %d: %v in bf16, %v in float32 (%.3g relative)", i, b, l, d)
		}
	}
	if !differ {
		t.Errorf("the bf16 run's losses equal float32's bit for bit: is ê stored in bf16 at all?")
	}
}

// noCapture is a device whose driver cannot capture graphs.
type noCapture struct{ *gpuexec.CUDA }

func (noCapture) BeginCapture() error { return errors.New("cuStreamBeginCapture: not supported") }

// TestGraphCaptureFailsOver: where the device cannot capture, the trainer says so once and
// trains launch by launch, with the same results.
func TestGraphCaptureFailsOver(t *testing.T) {
	c := newCase(t, encodings[0], modelSet(t, "gatedgcn")...)
	bs, bucket := stepBatches(t, c)
	want := newPair(t, c, emuExact(t), bucket)
	want.g.SetGraphs(false)
	got := newPair(t, c, noCapture{emuExact(t)}, bucket)
	var log strings.Builder
	got.g.Log = &log
	for s := range 4 {
		lw, err := want.g.Step(bs[s%len(bs)])
		if err != nil {
			t.Fatal(err)
		}
		lg, err := got.g.Step(bs[s%len(bs)])
		if err != nil {
			t.Fatal(err)
		}
		if lg != lw {
			t.Fatalf("step %d: loss %v without graphs, %v launch by launch", s, lg, lw)
		}
	}
	if n := strings.Count(log.String(), "not supported"); n != 1 {
		t.Errorf("the log says %d times why graphs are off, want once: %q", n, log.String())
	}
}

// TestGateFoldEvalIsExact: in evaluation the gated aggregation folded into the edge sum
// (gpuexec's foldGate) adds its sums on gated_edges's own grid, so in its order: on the
// deterministic schedule the model evaluates to the same bits with the fold as without it
// (gpu.edge_folds scatter,bndx).
func TestGateFoldEvalIsExact(t *testing.T) {
	c := newCase(t, encodings[1], modelSet(t, "gatedgcn")...)
	gs := synthetic(t, c.spec, c.key, 10, 31)
	bt := batchesOf(t, gs, 10)[0]
	eval := func(o gpuopt.Options) (float64, []float64) {
		pr := newPair(t, c, emuExact(t), bucketOf(bt))
		pr.g.Options = o
		l, p, err := pr.g.Eval(bt)
		if err != nil {
			t.Fatal(err)
		}
		return l, slices.Clone(p)
	}
	l, p := eval(gpuopt.Default())
	noGate := gpuopt.Default()
	noGate.EdgeFolds.Gate = false
	lOff, pOff := eval(noGate)
	if l != lOff || !slices.Equal(p, pOff) {
		t.Errorf("evaluation with the gate folded: loss %v, without %v (predictions equal: %v)", l, lOff, slices.Equal(p, pOff))
	}
}
