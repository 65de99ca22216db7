package train

import (
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/ops"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// trainedRun trains a short NeighborsMatch run (batch norm in every layer) and rebuilds it from
// its checkpoint.
func trainedRun(t *testing.T, sets ...string) (*run, *runfiles.Result) {
	t.Helper()
	c := nm2(t, append([]string{"train.max_epochs=3"}, sets...)...)
	res, err := trainRun(t, c, 41, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := restoreRun(c.Dir(41), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.tr.Close)
	return r, res
}

// batchStats is the reference for one batch's statistics, by the momentum update of a training
// step's forward pass (the training net, not the evaluation net Recalibrate runs): from zeroed
// running statistics one pass leaves BNMomentum × the batch mean and unbiased variance.
func batchStats(t *testing.T, tr *nn.Trainer, bt *data.Batch) (mean, variance map[string][]float64) {
	t.Helper()
	for _, s := range tr.P.BN {
		clear(s.RunMean)
		clear(s.RunVar)
	}
	b, err := nn.PickBucket(tr.Buckets, bt)
	if err != nil {
		t.Fatal(err)
	}
	n, err := tr.Net(b)
	if err != nil {
		t.Fatal(err)
	}
	tr.P.SetTraining(true)
	if _, err := n.Run(bt); err != nil {
		t.Fatal(err)
	}
	mean, variance = map[string][]float64{}, map[string][]float64{}
	for name, s := range tr.P.BN {
		for c := range s.RunMean {
			mean[name] = append(mean[name], s.RunMean[c]/ops.BNMomentum)
			variance[name] = append(variance[name], s.RunVar[c]/ops.BNMomentum)
		}
	}
	return mean, variance
}

// TestRecalibrateAveragesBatchStatistics: after Recalibrate over the training split's batches,
// every batch norm's running mean and variance are the mean over the batches of that batch's
// statistics, computed independently through the training net; the parameters and the optimiser
// are untouched.
func TestRecalibrateAveragesBatchStatistics(t *testing.T) {
	r, _ := trainedRun(t, "train.batch_size=32")
	bs, err := batches(r.train, r.cfg.Train.BatchSize)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) < 2 {
		t.Fatalf("%d training batches, want several", len(bs))
	}
	before := Capture("x", 41, r.p, r.tr.Opt, Loop{})
	if err := Recalibrate(r.tr, bs); err != nil {
		t.Fatal(err)
	}
	got := Capture("x", 41, r.p, r.tr.Opt, Loop{})
	if !reflect.DeepEqual(got.Params, before.Params) || !reflect.DeepEqual(got.Adam, before.Adam) || got.Step != before.Step {
		t.Fatal("Recalibrate changed the parameters or the optimiser")
	}
	if reflect.DeepEqual(got.BNMean, before.BNMean) {
		t.Fatal("Recalibrate left the running statistics as they were")
	}
	wantMean, wantVar := map[string][]float64{}, map[string][]float64{}
	for _, bt := range bs {
		m, v := batchStats(t, r.tr, bt)
		for name := range m {
			if wantMean[name] == nil {
				wantMean[name], wantVar[name] = make([]float64, len(m[name])), make([]float64, len(v[name]))
			}
			for c := range m[name] {
				wantMean[name][c] += m[name][c] / float64(len(bs))
				wantVar[name][c] += v[name][c] / float64(len(bs))
			}
		}
	}
	if len(wantMean) == 0 || len(wantMean) != len(got.BNMean) {
		t.Fatalf("%d batch norms in the reference, %d in the model", len(wantMean), len(got.BNMean))
	}
	for name := range wantMean {
		for c := range wantMean[name] {
			if !near(got.BNMean[name][c], wantMean[name][c]) || !near(got.BNVar[name][c], wantVar[name][c]) {
				t.Fatalf("%s column %d: mean %v var %v, want %v %v", name, c, got.BNMean[name][c], got.BNVar[name][c], wantMean[name][c], wantVar[name][c])
			}
		}
	}
	for _, s := range r.p.BN {
		if !s.Training {
			t.Fatalf("batch norm %s left in evaluation mode", s.Name)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestRecalibrateOneBatch: recalibrated on one full batch, evaluation mode gives the training
// mode's output for that batch, up to the variance's n/(n−1) (running statistics keep the
// unbiased variance, a training pass normalises with the biased one); the training-time running
// statistics do not.
func TestRecalibrateOneBatch(t *testing.T) {
	r, _ := trainedRun(t, "train.batch_size=512")
	bs, err := batches(r.train, r.cfg.Train.BatchSize)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 1 {
		t.Fatalf("%d training batches, want 1", len(bs))
	}
	b, err := nn.PickBucket(r.tr.Buckets, bs[0])
	if err != nil {
		t.Fatal(err)
	}
	n, err := r.tr.Net(b)
	if err != nil {
		t.Fatal(err)
	}
	saved := Capture("x", 41, r.p, r.tr.Opt, Loop{})
	r.p.SetTraining(true)
	if _, err := n.Run(bs[0]); err != nil {
		t.Fatal(err)
	}
	want := graphRows(t, n, bs[0])
	if err := saved.Restore(r.p, r.tr.Opt); err != nil { // the running statistics training left
		t.Fatal(err)
	}
	_, stored, err := r.tr.Eval(bs[0])
	if err != nil {
		t.Fatal(err)
	}
	storedDiff := maxDiff(stored, want)
	if err := Recalibrate(r.tr, bs); err != nil {
		t.Fatal(err)
	}
	_, recal, err := r.tr.Eval(bs[0])
	if err != nil {
		t.Fatal(err)
	}
	recalDiff := maxDiff(recal, want)
	t.Logf("largest difference from the training-mode output: %.3g with the stored statistics, %.3g recalibrated", storedDiff, recalDiff)
	if recalDiff > 1e-2 || recalDiff > storedDiff/10 {
		t.Fatalf("recalibrated output differs from the training-mode output by %.3g (stored statistics: %.3g)", recalDiff, storedDiff)
	}
}

// graphRows copies the graph rows of a net's last prediction.
func graphRows(t *testing.T, n *nn.Net, bt *data.Batch) []float64 {
	t.Helper()
	k := n.Pred.Shape()[1]
	var out []float64
	switch v := n.Pred.Value().Data().(type) {
	case []float32:
		for _, x := range v[:bt.NumGraphs*k] {
			out = append(out, float64(x))
		}
	case []float64:
		out = append(out, v[:bt.NumGraphs*k]...)
	default:
		t.Fatalf("prediction of type %T", v)
	}
	return out
}

func maxDiff(a, b []float64) float64 {
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

// TestRecalibrateRun: a run directory's stored-statistics figure is its result.json train_metric
// (the same evaluation, of the same batches); a folder without a run is refused.
func TestRecalibrateRun(t *testing.T) {
	c := nm2(t, "train.max_epochs=3", "train.batch_size=512")
	res, err := trainRun(t, c, 41, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := RecalibrateRun(c.Dir(41), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Stored != res.TrainMetric || rc.Run != res.Name || rc.Seed != 41 || rc.Metric != runfiles.MetricAccuracy {
		t.Fatalf("recalibration %+v, result %+v", rc, res)
	}
	if rc.Batches != 1 || rc.Graphs != res.TrainGraphs {
		t.Fatalf("%d batches of %d graphs, want 1 of %d", rc.Batches, rc.Graphs, res.TrainGraphs)
	}
	t.Logf("stored %.2f recalibrated %.2f", rc.Stored, rc.Recalibrated)
	if _, err := RecalibrateRun(filepath.Join(c.Dir(41), "missing"), 1, nil); err == nil {
		t.Fatal("a folder without a run accepted")
	}
}
