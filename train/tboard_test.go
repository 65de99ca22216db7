package train

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/internal/tfread"
	"github.com/rewiregnn/rewiregnn/runfiles"
	"github.com/rewiregnn/rewiregnn/tfevents"
)

// wantBoardMatchesMetrics fails unless dir's tb folder holds the epochs of its metrics.jsonl
// (tfread.MatchMetrics), and returns it.
func wantBoardMatchesMetrics(t *testing.T, dir, metric string, hasVal, hasTest bool) *tfread.Run {
	t.Helper()
	r, err := tfread.MatchMetrics(dir, metric, hasVal, hasTest)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestBoardMatchesMetrics: a finished run's tb folder holds one event file whose epochs are
// those of metrics.jsonl (with and without a validation split), and whose end is the hparams
// session start (the config's keys and seed, grouped by run name), the final figures of
// result.json at step epochs, and the session's end with status success.
func TestBoardMatchesMetrics(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sets   []string
		hasVal bool
	}{
		{"no val", []string{"train.max_epochs=3"}, false},
		{"val", []string{"train.max_epochs=3", "dataset.val_fraction=0.2", "train.monitor=val_loss"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := nm2(t, tc.sets...)
			res, err := trainRun(t, c, 41, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			dir := c.Dir(41)
			files, _ := tfread.Files(filepath.Join(dir, runfiles.TBDir))
			if len(files) != 1 || !strings.HasPrefix(filepath.Base(files[0]), "events.out.tfevents.") {
				t.Fatalf("event files %v", files)
			}
			b := wantBoardMatchesMetrics(t, dir, res.Metric, tc.hasVal, true)
			wantEnd(t, b.End, res, c.RunName(), 1)
			eps, err := runfiles.ReadMetrics(filepath.Join(dir, runfiles.MetricsFile))
			if err != nil {
				t.Fatal(err)
			}
			for _, ep := range eps { // NeighborsMatch has a test split: every record keeps its loss, under test/loss
				if ep.TestLoss == nil || !(*ep.TestLoss > 0) || b.Epochs[int64(ep.Epoch)]["test/loss"] != float32(*ep.TestLoss) {
					t.Fatalf("epoch %d: test loss %v in metrics.jsonl, %v in the tb folder", ep.Epoch, ep.TestLoss, b.Epochs[int64(ep.Epoch)]["test/loss"])
				}
			}
		})
	}
}

// wantEnd checks the end's events: session start, final figures, session end with status.
func wantEnd(t *testing.T, end []tfread.Event, res *runfiles.Result, group string, status int) {
	t.Helper()
	if len(end) != 3 {
		t.Fatalf("%d end events, want 3", len(end))
	}
	start, err := tfread.DecodeHParams(end[0].Values[0].Content)
	if err != nil || end[0].Values[0].Tag != "_hparams_/session_start_info" || end[0].Values[0].Plugin != "hparams" || start.Kind != 3 {
		t.Fatalf("session start %+v, %v", end[0], err)
	}
	if start.Group != group || start.HParams["seed"] != float64(res.Seed) || start.HParams["dataset.name"] != res.Dataset ||
		start.HParams["model.name"] != res.Model || start.HParams["dataset.r"] != float64(res.R) || start.HParams["dataset.cls"] != res.CLS ||
		start.HParams["dataset.encoding"] != res.Encoding || len(start.HParams) != 10 {
		t.Fatalf("session start %+v", start)
	}
	final := map[string]float32{}
	for _, v := range end[1].Values {
		final[v.Tag] = v.Simple
	}
	m := res.Metric
	want := map[string]float64{"final/test_" + m: res.TestMetric, "final/train_" + m: res.TrainMetric}
	if res.ValSplit != "none" {
		want["final/val_"+m] = res.ValMetric
	}
	if end[1].Step != int64(res.Epochs) || len(final) != len(want) {
		t.Fatalf("final figures at step %d: %v, want %v at %d", end[1].Step, final, want, res.Epochs)
	}
	for tag, x := range want {
		if final[tag] != float32(x) {
			t.Errorf("%s: %v, want %v", tag, final[tag], float32(x))
		}
	}
	stop, err := tfread.DecodeHParams(end[2].Values[0].Content)
	if err != nil || end[2].Values[0].Tag != "_hparams_/session_end_info" || stop.Kind != 4 || stop.Status != status {
		t.Fatalf("session end %+v, %v", stop, err)
	}
}

// TestBoardResume interrupts a run in epoch 2 (checkpoint: 2 epochs), then leaves in its tb
// folder what a session killed later would: an event of epoch 2 with other figures (written
// after the checkpoint, before the kill), an end event, and a torn record. The resumed run's
// folder holds every epoch once with the figures of its metrics.jsonl, and they equal the
// uninterrupted run's (timings aside).
func TestBoardResume(t *testing.T) {
	sets := []string{"train.batch_size=8", "train.max_epochs=4"}
	whole := nm2(t, sets...)
	if _, err := trainRun(t, whole, 41, false, nil); err != nil {
		t.Fatal(err)
	}
	cut := nm2(t, sets...)
	dir := cut.Dir(41)
	interrupt(t, cut, 2, 3, false)
	files, _ := tfread.Files(filepath.Join(dir, runfiles.TBDir))
	if len(files) != 1 {
		t.Fatalf("event files %v", files)
	}
	f, err := os.OpenFile(files[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(tfevents.AppendRecord(nil, tfevents.ScalarEvent(1, 2, []tfevents.Scalar{{Tag: "train/loss", Value: 1234}})))
	f.Write(tfevents.AppendRecord(nil, tfevents.ScalarEvent(1, 4, []tfevents.Scalar{{Tag: "final/test_accuracy", Value: 99}})))
	f.Write(tfevents.AppendRecord(nil, tfevents.ScalarEvent(1, 3, []tfevents.Scalar{{Tag: "train/loss", Value: 5}}))[:20])
	f.Close()

	var log bytes.Buffer
	res, err := trainIn(t, cut, dir, true, false, &log)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kept 2 epochs of the 2 epochs the checkpoint covers, dropped 2 events and a tail it could not read"} {
		if !strings.Contains(log.String(), want) {
			t.Fatalf("the log does not say %q:\n%s", want, log.String())
		}
	}
	if files, _ := tfread.Files(filepath.Join(dir, runfiles.TBDir)); len(files) != 2 {
		t.Fatalf("event files after the resume %v, want the repaired one and the new one", files)
	}
	b := wantBoardMatchesMetrics(t, dir, res.Metric, false, true)
	wantEnd(t, b.End, res, cut.RunName(), 1)
	w, err := tfread.ReadRun(whole.Dir(41))
	if err != nil {
		t.Fatal(err)
	}
	if err := tfread.SameFigures(w, b); err != nil {
		t.Fatalf("uninterrupted and resumed: %v", err)
	}
}

// TestBoardBackfillAndFailure: a resumed run whose tb folder is gone gets the covered epochs
// from metrics.jsonl (and says so); a tb that cannot be written (a file in its place) is
// reported once and the run trains on.
func TestBoardBackfillAndFailure(t *testing.T) {
	c := nm2(t, "train.batch_size=8", "train.max_epochs=3")
	dir := c.Dir(41)
	interrupt(t, c, 2, 1, false)
	if err := os.RemoveAll(filepath.Join(dir, runfiles.TBDir)); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	res, err := trainIn(t, c, dir, true, false, &log)
	if err != nil {
		t.Fatal(err)
	}
	if want := "wrote epochs 0 to 1 from metrics.jsonl"; !strings.Contains(log.String(), want) {
		t.Fatalf("the log does not say %q:\n%s", want, log.String())
	}
	wantBoardMatchesMetrics(t, dir, res.Metric, false, true)

	c2 := nm2(t, "train.max_epochs=2")
	dir2 := c2.Dir(41)
	os.MkdirAll(dir2, 0o755)
	os.WriteFile(filepath.Join(dir2, runfiles.TBDir), []byte("in the way"), 0o600)
	log.Reset()
	if _, err := trainIn(t, c2, dir2, false, false, &log); err != nil {
		t.Fatalf("a run with an unwritable tb folder: %v", err)
	}
	if n := strings.Count(log.String(), "tensorboard:"); n != 1 || !strings.Contains(log.String(), "training goes on without TensorBoard events") {
		t.Fatalf("%d tensorboard warnings, want 1:\n%s", n, log.String())
	}
	if eps, err := runfiles.ReadMetrics(filepath.Join(dir2, runfiles.MetricsFile)); err != nil || len(eps) != 2 {
		t.Fatalf("metrics: %d epochs, %v", len(eps), err)
	}
}
