package train

import (
	"bytes"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/prep"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// evalCases are one run of each metric kind, small: ZINC (L1 loss, MAE), NeighborsMatch (graph
// classification, cross-entropy, accuracy) and CLUSTER (node classification, weighted
// cross-entropy, weighted and balanced accuracy). Their batch sizes leave the splits a last
// short batch.
func evalCases(t *testing.T) []struct {
	name string
	c    *config.Run
} {
	small := []string{"model.layers=2", "model.hidden=16"}
	return []struct {
		name string
		c    *config.Run
	}{
		{"zinc", load(t, append(small, "dataset.name=zinc", "dataset.dir="+testdata.Dir(t), "dataset.subset=60", "dataset.encoding=adj", "dataset.r=2", "dataset.cls=true", "train.batch_size=8")...)},
		{"neighborsmatch", nm2(t, append(small, "train.batch_size=7")...)},
		{"cluster", load(t, append(small, "dataset.name=cluster", "dataset.subset=23", "dataset.encoding=lp", "dataset.r=1", "train.batch_size=3")...)},
	}
}

// preparedRun builds the run of c (data, model, trainer on the CPU, or on the device c names)
// and trains it on a few batches, so that the running statistics are not the initial ones.
func preparedRun(t *testing.T, c *config.Run) *run {
	t.Helper()
	r := &run{o: Options{Run: c, Seed: 41, Dir: c.Dir(41), Workers: 1, NoMemoryGuard: true}, cfg: c, start: time.Now(), log: io.Discard}
	t.Cleanup(r.closeDevice)
	if err := r.cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := r.chooseDevice(); err != nil {
		t.Fatal(err)
	}
	if err := Resolve(r.cfg); err != nil {
		t.Fatal(err)
	}
	if err := prepareInPlace(r); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.tr.Close)
	r.loop.Perm = make([]int32, len(r.train))
	for i := range r.loop.Perm {
		r.loop.Perm[i] = int32(i)
	}
	for b := range min(3, r.batchesPerEpoch()) {
		bt, err := r.trainBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := r.step.StepPred(bt); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// sizesOfGraphs is the sizes of gs, in order.
func sizesOfGraphs(gs []*data.Graph) []prep.GraphSize {
	out := make([]prep.GraphSize, len(gs))
	for i, g := range gs {
		out[i] = prep.GraphSize{N: g.N, E: g.NumEdges()}
	}
	return out
}

// largeMeter evaluates the split gs (protocol batches bs) per protocol batches at a time in large
// batches through ev.
func largeMeter(t *testing.T, r *run, ev largeEvaler, gs []*data.Graph, bs []*data.Batch, per int) *Meter {
	t.Helper()
	b, ok := groupBucket([][]prep.GraphSize{sizesOfGraphs(gs)}, r.cfg.Train.BatchSize, per)
	if !ok {
		t.Fatalf("no group of %d protocol batches in %d graphs", per, len(gs))
	}
	large, err := batches(gs, r.cfg.Train.BatchSize*per)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMeter(r.metric, r.io.Out)
	if err := evalLarge(ev, m, bs, large, per, b); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestLargeEvalMetersMatchPerBatch: on the CPU, the meters of the training split evaluated in
// large batches (3 protocol batches at a time: protocol batch boundaries inside each large batch,
// a last short protocol batch, and a last group of one or two) equal those of the protocol's
// batch-by-batch evaluation bit for bit, for each kind of metric: the loss, the metric and, for
// CLUSTER, the balanced accuracy. Each protocol batch's loss formed on the host
// (nn.Inputs.BatchLoss) is the net's own.
func TestLargeEvalMetersMatchPerBatch(t *testing.T) {
	for _, ec := range evalCases(t) {
		t.Run(ec.name, func(t *testing.T) {
			r := preparedRun(t, ec.c)
			bs, err := batches(r.train, r.cfg.Train.BatchSize)
			if err != nil {
				t.Fatal(err)
			}
			if last := bs[len(bs)-1]; last.NumGraphs == r.cfg.Train.BatchSize || len(bs)%3 == 0 {
				t.Fatalf("%d protocol batches, the last of %d graphs: the case should leave a short last batch and a short last group", len(bs), last.NumGraphs)
			}
			net, err := r.tr.EvalNet(0)
			if err != nil {
				t.Fatal(err)
			}
			for i, bt := range bs {
				loss, pred, err := r.tr.Eval(bt)
				if err != nil {
					t.Fatal(err)
				}
				host, err := net.In.BatchLoss(bt, pred)
				if err != nil {
					t.Fatal(err)
				}
				if host != loss {
					t.Fatalf("batch %d: loss %v formed on the host, %v from the net", i, host, loss)
				}
			}
			want, err := r.evaluate(bs)
			if err != nil {
				t.Fatal(err)
			}
			for _, per := range []int{2, 3} {
				got := largeMeter(t, r, r.tr, r.train, bs, per)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%d protocol batches at a time: meter %+v, batch by batch %+v", per, got, want)
				}
			}
			if r.metric == runfiles.MetricWeightedAcc && want.Balanced() <= 0 {
				t.Fatalf("balanced accuracy %v", want.Balanced())
			}
			t.Logf("%s: loss %.6f, %s %.4f, %d batches", ec.name, want.Loss(), r.metric, want.Value(), want.Batches)
		})
	}
}

// TestLargeEvalOnTheEmulatedGPU is TestLargeEvalMetersMatchPerBatch through the GPU trainer on the
// emulated GPU (large batches of 3 protocol batches against batch-by-batch evaluation on the
// same device): the losses and metrics agree within 1e-5 relative (the device's losses sum in
// another order than the host's), the counts of correct predictions exactly; then it runs
// the run's own planning (evaluateSplit) and checks that it chose large batches.
func TestLargeEvalOnTheEmulatedGPU(t *testing.T) {
	if testing.Short() {
		t.Skip("the emulated GPU is slow; skipped with -short")
	}
	needEmu(t)
	withProbe(t, emulated)
	for _, ec := range evalCases(t) {
		t.Run(ec.name, func(t *testing.T) {
			ec.c.Device = "cuda"
			r := preparedRun(t, ec.c)
			if r.gpu == nil {
				t.Fatal("the run is not on the (emulated) GPU")
			}
			name, gs, bs := "val", r.val, r.valB
			if len(gs) == 0 { // NeighborsMatch has no validation split
				name, gs, bs = "test", r.test, r.testB
			}
			want, err := r.evaluate(bs)
			if err != nil {
				t.Fatal(err)
			}
			got := largeMeter(t, r, r.gpu, gs, bs, 3)
			var log bytes.Buffer
			r.log = &log
			planned, err := r.evaluateSplit(name, gs, bs)
			if err != nil {
				t.Fatal(err)
			}
			if r.large.per < 2 || !strings.Contains(log.String(), "computed in one batch") {
				t.Fatalf("the run evaluates %d protocol batches at a time; log:\n%s", r.large.per, log.String())
			}
			for _, m := range []*Meter{got, planned} {
				close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-5*math.Max(math.Abs(b), 1e-3) }
				if m.Batches != want.Batches || !close(m.LossSum, want.LossSum) || !close(m.MetricSum, want.MetricSum) || !close(m.AbsSum, want.AbsSum) || m.Entries != want.Entries ||
					m.Correct != want.Correct || m.Total != want.Total || !reflect.DeepEqual(m.Confusion, want.Confusion) {
					t.Fatalf("meter %+v in large batches, %+v batch by batch", m, want)
				}
			}
			t.Logf("%s: loss %.7f / %.7f, %s %.5f / %.5f (batch by batch / large batches)", ec.name, want.Loss(), got.Loss(), r.metric, want.Value(), got.Value())
		})
	}
}

// TestPickLargeRespectsTheMemoryBound: the protocol batches per large batch are what the
// evaluation batch size allows, halved while the device has no room for their bucket; a split
// longer than a large batch is cut into several; nothing fits, batch by batch.
func TestPickLargeRespectsTheMemoryBound(t *testing.T) {
	split := make([]prep.GraphSize, 100) // 13 protocol batches of 8, the last of 4
	for i := range split {
		split[i] = prep.GraphSize{N: 10 + i%7, E: 20 + i%5}
	}
	splits := [][]prep.GraphSize{split}
	if per := evalBatchFor(0, 128); per != DefaultEvalBatch/128 {
		t.Fatalf("default: %d protocol batches of 128 at a time", per)
	}
	if per := evalBatchFor(200, 128); per != 0 {
		t.Fatalf("an evaluation batch of 200 graphs at batch size 128: %d protocol batches at a time, want batch by batch", per)
	}
	var tried []int
	room := func(limit int) roomFunc {
		return func(b nn.Bucket) (bool, int64, int64, bool, error) {
			tried = append(tried, b.Graphs)
			return b.Graphs <= limit, int64(b.Graphs), int64(limit), true, nil
		}
	}
	var log bytes.Buffer
	per, b, err := pickLarge(splits, 8, 64, room(20), &log) // 8 at a time, then 4, then 2
	if err != nil {
		t.Fatal(err)
	}
	if per != 2 || b.Graphs != 16 || !reflect.DeepEqual(tried, []int{64, 32, 16}) {
		t.Fatalf("per %d, bucket %v, tried buckets of %v graphs; log:\n%s", per, b, tried, log.String())
	}
	if !strings.Contains(log.String(), "trying half") || !strings.Contains(log.String(), "up to 2 protocol batches of 8 graphs") {
		t.Fatalf("log:\n%s", log.String())
	}
	// The bucket holds the largest group: the sums of its nodes and edges.
	n, e := 0, 0
	for lo := 0; lo < len(split); lo += 16 {
		gn, ge := 0, 0
		for _, g := range split[lo:min(lo+16, len(split))] {
			gn, ge = gn+g.N, ge+g.E
		}
		n, e = max(n, gn), max(e, ge)
	}
	if b.Nodes != n || b.Edges != e {
		t.Fatalf("bucket %v, the largest group has %d nodes and %d edges", b, n, e)
	}
	large, err := batches(make([]*data.Graph, 0), 16)
	if err != nil || large != nil {
		t.Fatalf("no graphs: %v, %v", large, err)
	}
	tried = nil
	if per, _, err := pickLarge(splits, 8, 64, room(1), io.Discard); err != nil || per != 0 || len(tried) != 3 {
		t.Fatalf("no room: per %d (%v), tried %v", per, err, tried)
	}
	// Groups of one protocol batch do not count: a split of one batch has no large batches.
	if _, ok := groupBucket([][]prep.GraphSize{split[:8]}, 8, 4); ok {
		t.Fatal("a split of one protocol batch has a large-batch bucket")
	}
}

// TestLargeEvalCutsTheSplit: ZINC's 60 training graphs, 8 protocol batches (the last of 4), are
// cut into large batches of 3, 3 and 2 protocol batches, or of 7 and a lone last batch that
// goes through Eval; evalLarge refuses large batches that do not match the protocol batches.
func TestLargeEvalCutsTheSplit(t *testing.T) {
	r := preparedRun(t, evalCases(t)[0].c)
	gs := r.train
	bs, err := batches(gs, 8)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 60 || len(bs) != 8 {
		t.Fatalf("%d protocol batches of 8 in %d graphs", len(bs), len(gs))
	}
	for _, c := range []struct {
		per    int
		large  []int
		single int
	}{{3, []int{24, 24, 12}, 0}, {7, []int{56}, 1}} {
		rec := &recorder{tr: r.tr}
		b, _ := groupBucket([][]prep.GraphSize{sizesOfGraphs(gs)}, 8, c.per)
		large, err := batches(gs, 8*c.per)
		if err != nil {
			t.Fatal(err)
		}
		m := NewMeter(r.metric, r.io.Out)
		if err := evalLarge(rec, m, bs, large, c.per, b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(rec.large, c.large) || rec.single != c.single || m.Batches != 8 {
			t.Fatalf("%d at a time: large batches of %v graphs, %d on their own, %d protocol batches metered", c.per, rec.large, rec.single, m.Batches)
		}
	}
	b, _ := groupBucket([][]prep.GraphSize{sizesOfGraphs(gs)}, 8, 3)
	large, err := batches(gs, 24)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{tr: r.tr}
	if err := evalLarge(rec, NewMeter(r.metric, r.io.Out), bs, large[:2], 3, b); err == nil || !strings.Contains(err.Error(), "want 3") {
		t.Fatalf("too few large batches: %v", err)
	}
	other, err := batches(gs, 16)
	if err != nil {
		t.Fatal(err)
	}
	if err := evalLarge(rec, NewMeter(r.metric, r.io.Out), bs, other[:3], 3, b); err == nil || !strings.Contains(err.Error(), "its protocol batches") {
		t.Fatalf("large batches of another cut: %v", err)
	}
}

// recorder counts the batches a trainer evaluates.
type recorder struct {
	tr     *nn.Trainer
	large  []int
	single int
}

func (r *recorder) Eval(bt *data.Batch) (float64, []float64, error) {
	r.single++
	return r.tr.Eval(bt)
}

func (r *recorder) EvalRows(bt *data.Batch, b nn.Bucket) ([]float64, *nn.Inputs, error) {
	if !b.Fits(bt) {
		return nil, nil, io.ErrUnexpectedEOF
	}
	r.large = append(r.large, bt.NumGraphs)
	return r.tr.EvalRows(bt, b)
}

// prepareInPlace readies r as Train does, without locking its run directory or writing into it.
func prepareInPlace(r *run) error {
	ckpt, err := r.checkDir()
	if err != nil {
		return err
	}
	build, err := r.loadChecked()
	if err != nil {
		return err
	}
	return r.prepare(ckpt, build)
}
