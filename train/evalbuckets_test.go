package train

import (
	"math"
	"slices"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/nn"
)

// TestEvalBucketsExact: in evaluation mode a batch's loss and predictions do not depend on the
// bucket it is padded to, bit for bit, so the buckets fitted to the evaluation batches
// (nn.FitEvalBuckets) change only the time an evaluation takes. Each protocol batch of the
// training split, cut in order, is evaluated in the training bucket Eval picks without fitted
// buckets (padded, often far) and in a bucket of exactly its own size (no padding at all), for
// the three models of the paper and each kind of metric.
func TestEvalBucketsExact(t *testing.T) {
	cases := evalCases(t)
	small := []string{"model.layers=2", "model.hidden=18", "dataset.name=zinc", "dataset.subset=60", "dataset.encoding=adj", "dataset.r=2", "dataset.cls=true", "train.batch_size=8"}
	zincDir := cases[0].c.Dataset.Dir
	for _, m := range []string{"monet", "transformer"} {
		cases = append(cases, struct {
			name string
			c    *config.Run
		}{"zinc-" + m, load(t, append(small, "model.name="+m, "dataset.dir="+zincDir)...)})
	}
	for _, ec := range cases {
		t.Run(ec.name, func(t *testing.T) { checkEvalBuckets(t, preparedRun(t, ec.c)) })
	}
}

// TestEvalBucketsOnTheEmulatedGPU is TestEvalBucketsExact through the GPU trainer on the
// emulated GPU (ZINC, GatedGCN).
func TestEvalBucketsOnTheEmulatedGPU(t *testing.T) {
	if testing.Short() {
		t.Skip("the emulated GPU is slow; skipped with -short")
	}
	needEmu(t)
	withProbe(t, emulated)
	c := evalCases(t)[0].c
	c.Device = "cuda"
	r := preparedRun(t, c)
	if r.gpu == nil {
		t.Fatal("the run is not on the (emulated) GPU")
	}
	checkEvalBuckets(t, r)
}

// checkEvalBuckets evaluates each protocol batch of r's training split, cut in order, in the
// bucket Eval picks without fitted buckets and in one of exactly its size, and fails unless the
// two give the same loss and predictions bit for bit.
func checkEvalBuckets(t *testing.T, r *run) {
	t.Helper()
	bs, err := batches(r.train, r.cfg.Train.BatchSize)
	if err != nil {
		t.Fatal(err)
	}
	tighter := 0
	for j, bt := range bs {
		r.tr.EvalBuckets = nil
		padded, err := r.tr.EvalBucket(bt)
		if err != nil {
			t.Fatal(err)
		}
		lossP, predP, err := r.step.Eval(bt)
		if err != nil {
			t.Fatal(err)
		}
		predP = slices.Clone(predP)
		exact := nn.Bucket{Nodes: bt.Union.N, Edges: bt.Union.NumEdges(), Graphs: bt.NumGraphs}
		r.tr.EvalBuckets = []nn.Bucket{exact}
		if got, err := r.tr.EvalBucket(bt); err != nil || got != exact {
			t.Fatalf("batch %d: EvalBucket %v, %v; want the exact %v", j, got, err, exact)
		}
		lossE, predE, err := r.step.Eval(bt)
		if err != nil {
			t.Fatal(err)
		}
		if math.Float64bits(lossP) != math.Float64bits(lossE) {
			t.Fatalf("batch %d: loss %.17g in %v, %.17g in %v", j, lossP, padded, lossE, exact)
		}
		for i := range predP {
			if math.Float64bits(predP[i]) != math.Float64bits(predE[i]) {
				t.Fatalf("batch %d: prediction %d is %.17g in %v, %.17g in %v", j, i, predP[i], padded, predE[i], exact)
			}
		}
		if padded != exact {
			tighter++
		}
	}
	r.tr.EvalBuckets = nil
	if tighter == 0 {
		t.Fatal("every batch filled its training bucket exactly: nothing was compared")
	}
	t.Logf("%d batches, %d of them padded in the training bucket: identical in both", len(bs), tighter)
}
