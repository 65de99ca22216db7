package train

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
	"github.com/rewiregnn/rewiregnn/internal/tfread"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// load resolves a config from -set overrides alone, with the run directory under a test folder.
func load(t *testing.T, sets ...string) *config.Run {
	t.Helper()
	c, err := config.Load("", append(sets, "out="+t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// nm2 is NeighborsMatch at problem radius 2 (4 leaves, 96 examples), adjacency encoding at r = 2.
func nm2(t *testing.T, sets ...string) *config.Run {
	return load(t, append([]string{"dataset.name=neighborsmatch-2", "dataset.encoding=adj", "dataset.r=2"}, sets...)...)
}

func trainRun(t *testing.T, c *config.Run, seed int64, resume bool, hook func(int, int, *nn.Params)) (*runfiles.Result, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := Options{Run: c, Seed: seed, Dir: c.Dir(seed), Resume: resume, Workers: 1}
	o.AfterBatch = hook
	return Train(ctx, o)
}

// interrupt trains seed 41 of c (resuming its run directory if resume) and cancels it after
// batch b of epoch e, as SIGINT does; the run must stop by the signal there, after e epochs.
func interrupt(t *testing.T, c *config.Run, e, b int, resume bool) *runfiles.Result {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := Options{Run: c, Seed: 41, Dir: c.Dir(41), Resume: resume, Workers: 1, AfterBatch: func(ep, bt int, _ *nn.Params) {
		if ep == e && bt == b {
			cancel()
		}
	}}
	res, err := Train(ctx, o)
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if res.StoppedBy != runfiles.StopSignal || res.Epochs != e {
		t.Fatalf("interrupted run stopped by %s after %d epochs, want the signal after %d", res.StoppedBy, res.Epochs, e)
	}
	return res
}

// TestNeighborsMatchLearns: the GatedGCN reaches 100% training accuracy at problem radius 2
// (Alon & Yahav's over-squashing measure) within 120 epochs, and the run stops there
// (train.stop_accuracy 100, NeighborsMatch's default).
func TestNeighborsMatchLearns(t *testing.T) {
	c := nm2(t, "train.max_epochs=120")
	res, err := trainRun(t, c, 41, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d epochs: train accuracy %.1f%%, test %.1f%%", res.Epochs, res.TrainMetric, res.TestMetric)
	if res.Metric != runfiles.MetricAccuracy || res.TrainMetric != 100 {
		t.Fatalf("train %s %.2f, want accuracy 100", res.Metric, res.TrainMetric)
	}
	if res.StoppedBy != runfiles.StopAccuracy || res.Epochs >= 120 {
		t.Fatalf("stopped by %s after %d epochs", res.StoppedBy, res.Epochs)
	}
	eps, err := runfiles.ReadMetrics(filepath.Join(c.Dir(41), runfiles.MetricsFile))
	if err != nil || len(eps) != res.Epochs || eps[len(eps)-1].TrainMetric != 100 {
		t.Fatalf("metrics: %d epochs, %v", len(eps), err)
	}
	if got, err := runfiles.ReadResult(filepath.Join(c.Dir(41), runfiles.ResultFile)); err != nil || got.TrainMetric != 100 {
		t.Fatalf("result.json: %+v, %v", got, err)
	}
}

// TestResumeIsExact interrupts a run inside an epoch (the way SIGINT does), resumes it, and
// checks that every epoch's losses and metrics and the final parameters equal those of an
// uninterrupted run bit for bit, with at least two threads.
func TestResumeIsExact(t *testing.T) {
	resumeIsExact(t, []string{"train.batch_size=8", "train.max_epochs=6", "dataset.encoding=lp", "dataset.q=3", "model.dropout=0.1"}, 2, 4, 0)
}

// resumeIsExact trains one run of the NeighborsMatch config sets uninterrupted and one
// interrupted after batch b of epoch e (as SIGINT does) and then resumed, and compares them.
// resumeIsExact interrupts a run after batch b of epoch e, resumes it and compares it with an
// uninterrupted run. ahead is the number of steps launched ahead that the interrupted run
// finishes first (0 on the CPU, 1 on a GPU: gpu.Trainer.StepAhead).
func resumeIsExact(t *testing.T, sets []string, e, b, ahead int) {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0)))) // more than one thread
	whole := nm2(t, sets...)
	if _, err := trainRun(t, whole, 95, false, nil); err != nil {
		t.Fatal(err)
	}
	cut := nm2(t, sets...)
	ctx, cancel := context.WithCancel(context.Background())
	o := Options{Run: cut, Seed: 95, Dir: cut.Dir(95), Workers: 1, AfterBatch: func(ep, bt int, _ *nn.Params) {
		if ep == e && bt == b {
			cancel()
		}
	}}
	res, err := Train(ctx, o)
	cancel()
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if res.StoppedBy != runfiles.StopSignal || res.Epochs != e {
		t.Fatalf("interrupted run stopped by %s after %d epochs", res.StoppedBy, res.Epochs)
	}
	ck, err := ReadCheckpoint(filepath.Join(cut.Dir(95), runfiles.CheckpointFile))
	if err != nil || ck.Loop.Epoch != e || ck.Loop.Next != b+1+ahead {
		t.Fatalf("checkpoint at epoch %d batch %d (%v), want %d, %d", ck.Loop.Epoch, ck.Loop.Next, err, e, b+1+ahead)
	}
	if strings.Contains(string(ck.Config), cut.Out) { // a parked checkpoint travels to other machines
		t.Errorf("the checkpoint's config names the run folder %s:\n%s", cut.Out, ck.Config)
	}
	if _, err := trainRun(t, cut, 95, true, nil); err != nil {
		t.Fatal(err)
	}
	sameRuns(t, whole.Dir(95), cut.Dir(95))
}

// sameRuns compares two run directories: epochs (timings aside), results and parameters.
func sameRuns(t *testing.T, a, b string) {
	t.Helper()
	sameTraining(t, a, b, false)
}

// sameTraining is sameRuns; with anyProvenance the epochs' config hashes and departures may
// differ (an extended run's earlier epochs record the shorter cap they were trained under).
func sameTraining(t *testing.T, a, b string, anyProvenance bool) {
	t.Helper()
	ea, err := runfiles.ReadMetrics(filepath.Join(a, runfiles.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	eb, err := runfiles.ReadMetrics(filepath.Join(b, runfiles.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(ea) != len(eb) {
		t.Fatalf("%d and %d epochs", len(ea), len(eb))
	}
	for i := range ea {
		x, y := ea[i], eb[i]
		x.Seconds, x.EvalSeconds, x.Elapsed, x.PeakBytes = 0, 0, 0, 0
		y.Seconds, y.EvalSeconds, y.Elapsed, y.PeakBytes = 0, 0, 0, 0
		if anyProvenance {
			x.ConfigHash, x.Departures, y.ConfigHash, y.Departures = "", nil, "", nil
		}
		if !reflect.DeepEqual(x, y) {
			t.Fatalf("epoch %d differs:\n%+v\n%+v", i, x, y)
		}
	}
	ra, err := runfiles.ReadResult(filepath.Join(a, runfiles.ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	rb, err := runfiles.ReadResult(filepath.Join(b, runfiles.ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	if ra.TestMetric != rb.TestMetric || ra.TrainMetric != rb.TrainMetric || ra.ValMetric != rb.ValMetric || ra.Epochs != rb.Epochs || ra.FinalLR != rb.FinalLR {
		t.Fatalf("results differ:\n%+v\n%+v", ra, rb)
	}
	if !anyProvenance && (ra.ConfigHash != rb.ConfigHash || !reflect.DeepEqual(ra.Departures, rb.Departures)) {
		t.Fatalf("results' provenance differs: %s %+v and %s %+v", ra.ConfigHash, ra.Departures, rb.ConfigHash, rb.Departures)
	}
	ca, err := ReadCheckpoint(filepath.Join(a, runfiles.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	cb, err := ReadCheckpoint(filepath.Join(b, runfiles.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range ca.Params {
		if !slices.Equal(v, cb.Params[name]) {
			t.Fatalf("parameter %s differs", name)
		}
	}
	if ca.Step != cb.Step || ca.Adam.Step != cb.Adam.Step {
		t.Fatalf("steps differ: %d/%d and %d/%d", ca.Step, ca.Adam.Step, cb.Step, cb.Adam.Step)
	}
}

// TestNaNStops poisons a parameter during epoch 1: the next loss is not finite, the run stops
// with ErrNaN and stopped_by nan, and the checkpoint of the end of epoch 0 is kept; its
// TensorBoard session ends with status failure.
func TestNaNStops(t *testing.T) {
	c := nm2(t, "train.batch_size=16", "train.max_epochs=5")
	_, err := trainRun(t, c, 12, false, func(e, b int, p *nn.Params) {
		if e == 1 && b == 2 {
			p.T[p.Names[0]].Float32s()[0] = float32(math.NaN())
		}
	})
	assertDiverged(t, c.Dir(12), err, 1)
	if want := "the last good checkpoint (end of epoch 0) is kept"; !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "-restart`") {
		t.Errorf("the error does not say %q and the way out: %v", want, err)
	}
	ck, cerr := ReadCheckpoint(filepath.Join(c.Dir(12), runfiles.CheckpointFile))
	if cerr != nil || ck.Loop.Epoch != 1 || ck.Loop.Perm != nil {
		t.Fatalf("checkpoint: %v", cerr)
	}
	for name, v := range ck.Params {
		for _, x := range v {
			if math.IsNaN(x) {
				t.Fatalf("the kept checkpoint holds NaN in %s", name)
			}
		}
	}
	// TensorBoard: epoch 0, then the session's start and its end with status failure (no final figures)
	b := wantBoardMatchesMetrics(t, c.Dir(12), runfiles.MetricAccuracy, false, true)
	if len(b.End) != 2 {
		t.Fatalf("%d end events, want the session start and end", len(b.End))
	}
	if end, err := tfread.DecodeHParams(b.End[1].Values[0].Content); err != nil || end.Kind != 4 || end.Status != 2 {
		t.Fatalf("session end %+v, %v; want status failure (2)", end, err)
	}
}

// TestRunDirectoryGuards: a finished run is not overwritten, a corrupt checkpoint is refused.
func TestRunDirectoryGuards(t *testing.T) {
	c := nm2(t, "train.max_epochs=1")
	if _, err := trainRun(t, c, 41, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := trainRun(t, c, 41, false, nil); err == nil {
		t.Fatal("a second run into a finished directory was accepted")
	}
	path := filepath.Join(c.Dir(41), runfiles.CheckpointFile)
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 0xff
	os.WriteFile(path, b, 0o644)
	if _, err := ReadCheckpoint(path); err == nil {
		t.Fatal("a corrupt checkpoint was accepted")
	}
}

// TestZINCBeatsMean: two epochs of the 100K GatedGCN on 600 ZINC molecules bring the
// validation MAE well below that of the best constant predictor (the training median).
func TestZINCBeatsMean(t *testing.T) {
	dir := testdata.Dir(t)
	const n = 600
	c := load(t, "dataset.name=zinc", "dataset.dir="+dir, "dataset.subset=600", "train.batch_size=32", "train.max_epochs=2")
	res, err := trainRun(t, c, 41, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr, _, err := data.LoadSplit(dir, "zinc", "train")
	if err != nil {
		t.Fatal(err)
	}
	va, _, err := data.LoadSplit(dir, "zinc", "val")
	if err != nil {
		t.Fatal(err)
	}
	ys := make([]float64, n)
	for i, g := range tr[:n] {
		ys[i] = float64(g.Y[0])
	}
	slices.Sort(ys)
	median := (ys[n/2-1] + ys[n/2]) / 2
	base := 0.0
	for _, g := range va[:n] {
		base += math.Abs(float64(g.Y[0])-median) / n
	}
	t.Logf("validation MAE %.4f after %d epochs; constant predictor %.4f", res.ValMetric, res.Epochs, base)
	if !(res.ValMetric < 0.8*base) {
		t.Fatalf("validation MAE %.4f, want below 0.8 × %.4f", res.ValMetric, base)
	}
}

// TestEvalNaNStops: parameters that turn non-finite after an epoch's last training batch leave
// that epoch's training loss finite but its evaluation not: the run stops as diverged (ErrNaN,
// stopped_by nan) with the epochs before it recorded, instead of failing to write a NaN into
// metrics.jsonl.
func TestEvalNaNStops(t *testing.T) {
	c := load(t, "dataset.name=zinc", "dataset.dir="+testdata.Dir(t), "dataset.subset=48", "dataset.encoding=adj", "dataset.r=1",
		"dataset.cache=off", "train.batch_size=16", "train.max_epochs=5")
	last := 0
	_, err := trainRun(t, c, 12, false, func(e, b int, p *nn.Params) {
		if e == 0 {
			last = max(last, b)
		}
		if e == 1 && b == last {
			p.T[p.Names[0]].Float32s()[0] = float32(math.NaN())
		}
	})
	assertDiverged(t, c.Dir(12), err, 1)
	eps, merr := runfiles.ReadMetrics(filepath.Join(c.Dir(12), runfiles.MetricsFile))
	if merr != nil || len(eps) != 1 {
		t.Fatalf("metrics.jsonl: %d epochs, %v", len(eps), merr)
	}
}

// assertDiverged checks that a run stopped as diverged: ErrNaN, and a result.json in dir with
// stopped_by nan after epochs epochs.
func assertDiverged(t *testing.T, dir string, err error, epochs int) {
	t.Helper()
	if !errors.Is(err, ErrNaN) {
		t.Fatalf("error %v, want ErrNaN", err)
	}
	res, rerr := runfiles.ReadResult(filepath.Join(dir, runfiles.ResultFile))
	if rerr != nil || res.StoppedBy != runfiles.StopNaN || res.Epochs != epochs {
		t.Fatalf("result %+v (%v)", res, rerr)
	}
}

// TestCheckpointInEpoch: with Options.CheckpointEvery due at every batch, the run writes a
// checkpoint inside each epoch and trains on exactly as a run checkpointing after epochs only;
// a copy of its run folder taken mid-epoch (what a machine stopped without a word leaves) resumes
// to the same run bit for bit.
func TestCheckpointInEpoch(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	sets := []string{"train.batch_size=8", "train.max_epochs=4", "model.dropout=0.1"}
	whole := nm2(t, sets...)
	ctx := context.Background()
	if _, err := Train(ctx, Options{Run: whole, Seed: 95, Dir: whole.Dir(95), Workers: 1, CheckpointEvery: -1}); err != nil {
		t.Fatal(err)
	}
	const e, b = 2, 3 // the copy is taken after batch b of epoch e: its checkpoint is before batch b
	often := nm2(t, sets...)
	killed := nm2(t, sets...)
	var copied bool
	o := Options{Run: often, Seed: 95, Dir: often.Dir(95), Workers: 1, CheckpointEvery: time.Nanosecond,
		AfterBatch: func(ep, bt int, _ *nn.Params) {
			if ep != e || bt != b {
				return
			}
			if err := os.MkdirAll(killed.Dir(95), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{runfiles.ConfigFile, runfiles.MetricsFile, runfiles.CheckpointFile} {
				data, err := os.ReadFile(filepath.Join(often.Dir(95), f))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(killed.Dir(95), f), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			copied = true
		}}
	if _, err := Train(ctx, o); err != nil {
		t.Fatal(err)
	}
	if !copied {
		t.Fatal("the hook never ran")
	}
	sameRuns(t, whole.Dir(95), often.Dir(95))
	ck, err := ReadCheckpoint(filepath.Join(killed.Dir(95), runfiles.CheckpointFile))
	if err != nil || ck.Loop.Epoch != e || ck.Loop.Next != b {
		t.Fatalf("the mid-epoch checkpoint: epoch %d, next batch %d (%v); want %d, %d", ck.Loop.Epoch, ck.Loop.Next, err, e, b)
	}
	if _, err := trainRun(t, killed, 95, true, nil); err != nil {
		t.Fatal(err)
	}
	sameRuns(t, whole.Dir(95), killed.Dir(95))
}
