package train

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
	"github.com/rewiregnn/rewiregnn/internal/tfread"
	"github.com/rewiregnn/rewiregnn/rundir"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// trainIn trains seed 41 of c into dir (fresh, resumed or restarted), logging into log.
func trainIn(t *testing.T, c *config.Run, dir string, resume, restart bool, log *bytes.Buffer) (*runfiles.Result, error) {
	t.Helper()
	o := Options{Run: c, Seed: 41, Dir: dir, Resume: resume, Restart: restart, Workers: 1}
	if log != nil {
		o.Log = log
	}
	return Train(context.Background(), o)
}

// wantErr fails unless err's message holds every one of parts.
func wantErr(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want one naming %q", what, parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("%s: %v\nwant it to name %q", what, err, p)
		}
	}
}

// TestTrainRefusesBusyDirectory: Train on a directory another writer holds fails at once,
// naming the holder, and writes nothing there.
func TestTrainRefusesBusyDirectory(t *testing.T) {
	c := nm2(t, "train.max_epochs=1")
	dir := c.Dir(41)
	os.MkdirAll(dir, 0o755)
	l, err := rundir.LockDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	_, err = trainIn(t, c, dir, false, false, nil)
	var busy *rundir.BusyError
	if !errors.As(err, &busy) {
		t.Fatalf("got %v, want a BusyError", err)
	}
	wantErr(t, "busy", err, dir+" is in use by process", "wait for it or stop it")
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d files in the busy directory, want only the lock", len(ents))
	}
}

// TestRecoveryPaths: a finished run refuses a fresh start and a resume without a larger budget,
// a corrupt checkpoint refuses a resume, each naming the flags that get out; -restart keeps the
// old files in .old-<time> and trains afresh.
func TestRecoveryPaths(t *testing.T) {
	c := nm2(t, "train.max_epochs=1")
	dir := c.Dir(41)
	if _, err := trainIn(t, c, dir, false, false, nil); err != nil {
		t.Fatal(err)
	}
	_, err := trainIn(t, c, dir, false, false, nil)
	wantErr(t, "fresh start over a finished run", err, "holds a finished run (stopped by max_epochs after 1 epoch)", "`train -resume "+dir+" -epochs 3` extends it", "add `-restart`", runfiles.OldPrefix)
	_, err = trainIn(t, c, dir, true, false, nil)
	wantErr(t, "resume without a larger budget", err, dir+" is finished", "train.max_epochs 1 is spent", "add `-epochs 3`", "add `-restart`")
	_, err = trainIn(t, c, dir, true, true, nil)
	wantErr(t, "resume and restart", err, "exclude each other")

	path := filepath.Join(dir, runfiles.CheckpointFile)
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 0xff
	os.WriteFile(path, b, 0o600)
	_, err = trainIn(t, c, dir, true, false, nil)
	wantErr(t, "corrupt checkpoint", err, "checksum mismatch", "-restart")
	oldResult, _ := os.ReadFile(filepath.Join(dir, runfiles.ResultFile))

	var log bytes.Buffer
	res, err := trainIn(t, c, dir, false, true, &log)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	if res.Resumed != 0 || res.Epochs != 1 {
		t.Fatalf("restarted run: %+v", res)
	}
	olds, _ := filepath.Glob(filepath.Join(dir, runfiles.OldPrefix+"*"))
	if len(olds) != 1 || !strings.Contains(log.String(), "moved into "+olds[0]) {
		t.Fatalf("old folders %v; log:\n%s", olds, log.String())
	}
	for _, f := range []string{runfiles.ConfigFile, runfiles.MetricsFile, runfiles.ResultFile, runfiles.CheckpointFile} {
		if _, err := os.Stat(filepath.Join(olds[0], f)); err != nil {
			t.Errorf("the old folder lacks %s: %v", f, err)
		}
	}
	if kept, _ := os.ReadFile(filepath.Join(olds[0], runfiles.CheckpointFile)); !bytes.Equal(kept, b) {
		t.Error("the old folder's checkpoint is not the discarded one")
	}
	if kept, _ := os.ReadFile(filepath.Join(olds[0], runfiles.ResultFile)); !bytes.Equal(kept, oldResult) {
		t.Error("the old folder's result is not the discarded one")
	}
	if _, err := ReadCheckpoint(path); err != nil {
		t.Errorf("the restarted run's checkpoint: %v", err)
	}
	if _, err := trainIn(t, c, dir, false, true, nil); err != nil {
		t.Fatalf("second restart: %v", err)
	}
	if olds, _ := filepath.Glob(filepath.Join(dir, runfiles.OldPrefix+"*")); len(olds) != 2 {
		t.Fatalf("old folders after two restarts: %v", olds)
	}
}

// TestExtendFinishedRun: a run of 3 epochs resumed with max_epochs 5 equals a 5-epoch run bit
// for bit (epochs, result, parameters).
func TestExtendFinishedRun(t *testing.T) {
	sets := []string{"train.batch_size=8", "dataset.encoding=lp", "dataset.q=3", "model.dropout=0.1"}
	whole := nm2(t, append(sets, "train.max_epochs=5")...)
	if _, err := trainRun(t, whole, 41, false, nil); err != nil {
		t.Fatal(err)
	}
	short := nm2(t, append(sets, "train.max_epochs=3")...)
	dir := short.Dir(41)
	if res, err := trainIn(t, short, dir, false, false, nil); err != nil || res.StoppedBy != runfiles.StopMaxEpochs {
		t.Fatalf("3 epochs: %+v, %v", res, err)
	}
	longer := *short
	longer.Train.MaxEpochs = 5
	var log bytes.Buffer
	res, err := trainIn(t, &longer, dir, true, false, &log)
	if err != nil {
		t.Fatal(err)
	}
	if res.Epochs != 5 || res.Resumed != 1 || !strings.Contains(log.String(), "extending it to train.max_epochs 5") {
		t.Fatalf("extended run: %+v\n%s", res, log.String())
	}
	// the first three epochs record the 3-epoch cap they were trained under, the last two the 5
	epochs, err := runfiles.ReadMetrics(filepath.Join(dir, runfiles.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range epochs {
		want := longer.Hash()
		if i < 3 {
			want = short.Hash()
		}
		if e.ConfigHash != want {
			t.Errorf("epoch %d: config hash %.12s, want %.12s", i, e.ConfigHash, want)
		}
	}
	if res.ConfigHash != longer.Hash() {
		t.Errorf("result config hash %.12s, want the extended config's %.12s", res.ConfigHash, longer.Hash())
	}
	sameTraining(t, whole.Dir(41), dir, true)
	// TensorBoard: the first session's end (hparams, final figures) is dropped on resume, the
	// extended run's end written once; the epochs are those of metrics.jsonl
	b := wantBoardMatchesMetrics(t, dir, res.Metric, false, true)
	wantEnd(t, b.End, res, longer.RunName(), 1)
	if !strings.Contains(log.String(), "kept 3 epochs of the 3 epochs the checkpoint covers, dropped 3 events") {
		t.Errorf("the log does not say the end events were dropped:\n%s", log.String())
	}
}

// TestExtendStopRules: a run stopped by min_lr cannot be extended; one stopped by max_time needs
// a longer max_time and then continues.
func TestExtendStopRules(t *testing.T) {
	// min_lr = lr and no patience: the first epoch without improvement halves the rate and stops.
	c := nm2(t, "train.max_epochs=30", "train.min_lr=0.001", "train.patience=0", "dataset.val_fraction=0.2", "train.monitor=val_loss")
	if res, err := trainIn(t, c, c.Dir(41), false, false, nil); err != nil || res.StoppedBy != runfiles.StopMinLR {
		t.Fatalf("min_lr run: %+v, %v", res, err)
	}
	more := *c
	more.Train.MaxEpochs = 100
	_, err := trainIn(t, &more, c.Dir(41), true, false, nil)
	wantErr(t, "extending a min_lr run", err, "stopped by min_lr", "below train.min_lr 0.001", "neither -epochs nor -max-time", "-restart")

	c = nm2(t, "train.max_epochs=3", "train.max_time=1ms")
	if res, err := trainIn(t, c, c.Dir(41), false, false, nil); err != nil || res.StoppedBy != runfiles.StopMaxTime || res.Epochs != 1 {
		t.Fatalf("max_time run: %+v, %v", res, err)
	}
	_, err = trainIn(t, c, c.Dir(41), true, false, nil)
	wantErr(t, "resume a max_time run", err, "stopped by max_time", "train.max_time 1ms is spent", "add `-max-time 1m0s`", "-restart")
	if strings.Contains(err.Error(), "-epochs") {
		t.Fatalf("resume a max_time run: %v\nnames -epochs, whose budget is not spent", err)
	}
	fewer := *c
	fewer.Train.MaxEpochs = 1
	_, err = trainIn(t, &fewer, c.Dir(41), true, false, nil)
	wantErr(t, "both budgets spent", err, "train.max_time 1ms is spent, train.max_epochs 1 is spent", "add `-max-time 1m0s -epochs 3`", "-restart")
	more = *c
	more.Train.MaxTime = 1 << 62
	res, err := trainIn(t, &more, c.Dir(41), true, false, nil)
	if err != nil || res.StoppedBy != runfiles.StopMaxEpochs || res.Epochs != 3 {
		t.Fatalf("extended max_time run: %+v, %v", res, err)
	}
}

// TestStopAccuracy: with train.stop_accuracy the run ends at the first epoch whose training
// accuracy reaches it (recorded as train_accuracy), every earlier epoch below it; a solved run is
// not extended by a larger budget; a regression task refuses the key.
func TestStopAccuracy(t *testing.T) {
	c := nm2(t, "train.batch_size=8", "train.stop_accuracy=60", "train.max_epochs=300")
	dir := c.Dir(41)
	res, err := trainIn(t, c, dir, false, false, nil)
	if err != nil || res.StoppedBy != runfiles.StopAccuracy {
		t.Fatalf("%+v, %v; want stopped by %s", res, err, runfiles.StopAccuracy)
	}
	epochs, err := runfiles.ReadMetrics(filepath.Join(dir, runfiles.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range epochs {
		if last := i == len(epochs)-1; (e.TrainMetric >= 60) != last {
			t.Errorf("epoch %d of %d: training accuracy %v", i, len(epochs), e.TrainMetric)
		}
	}
	longer := *c
	longer.Train.MaxEpochs = 400
	if _, err := trainIn(t, &longer, dir, true, false, nil); err == nil || !strings.Contains(err.Error(), "solved") {
		t.Errorf("extending a solved run: %v", err)
	}
	z := load(t, "dataset.name=zinc", "dataset.dir="+testdata.Dir(t), "dataset.subset=20", "train.stop_accuracy=90")
	if _, err := trainRun(t, z, 41, false, nil); err == nil || !strings.Contains(err.Error(), "regression task") {
		t.Errorf("stop_accuracy on ZINC: %v", err)
	}
}

// TestRestartMovesEveryFile: -restart moves every file of the old run into .old-<time>,
// predictions.bin, the tb folder and files the trainer never writes included, and leaves the lock (held by the
// caller here) and earlier .old-* folders where they are.
func TestRestartMovesEveryFile(t *testing.T) {
	c := nm2(t, "train.max_epochs=1")
	dir := c.Dir(41)
	if _, err := trainIn(t, c, dir, false, false, nil); err != nil {
		t.Fatal(err)
	}
	extra := map[string]string{runfiles.PredictionsFile: "old predictions", "notes.txt": "mine", runfiles.LogFile: "old log"}
	for name, body := range extra {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	earlier := filepath.Join(dir, runfiles.OldPrefix+"20000101T000000Z")
	if err := os.Mkdir(earlier, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := rundir.LockDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	o := Options{Run: c, Seed: 41, Dir: dir, Restart: true, Workers: 1, Lock: lock}
	if _, err := Train(context.Background(), o); err != nil {
		t.Fatalf("restart: %v", err)
	}
	olds, _ := filepath.Glob(filepath.Join(dir, runfiles.OldPrefix+"*"))
	if len(olds) != 2 || olds[0] != earlier {
		t.Fatalf("old folders %v, want %s and a new one", olds, earlier)
	}
	for name, body := range extra {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s of the old run is still in the run directory", name)
		}
		if got, err := os.ReadFile(filepath.Join(olds[1], name)); err != nil || string(got) != body {
			t.Errorf("%s in %s: %q, %v; want %q", name, olds[1], got, err, body)
		}
	}
	for _, f := range []string{runfiles.ConfigFile, runfiles.MetricsFile, runfiles.ResultFile, runfiles.CheckpointFile, runfiles.TBDir} {
		if _, err := os.Stat(filepath.Join(olds[1], f)); err != nil {
			t.Errorf("the old folder lacks %s: %v", f, err)
		}
	}
	// the old run's TensorBoard files went with it; the new run's folder holds only its own
	if files, _ := tfread.Files(filepath.Join(olds[1], runfiles.TBDir)); len(files) != 1 {
		t.Errorf("the old folder's tb holds %v, want the old run's event file", files)
	}
	wantBoardMatchesMetrics(t, dir, runfiles.MetricAccuracy, false, true)
	if _, err := os.Stat(filepath.Join(dir, runfiles.LockFile)); err != nil {
		t.Errorf("the lock left the run directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(olds[1], runfiles.LockFile)); err == nil {
		t.Error("the lock was moved into the old folder")
	}
}

// TestResumeTornMetrics: a metrics.jsonl whose last line was torn by a crash during a write is
// recovered on resume (the lines the checkpoint covers kept, the torn one dropped and said so);
// one torn inside what the checkpoint covers is refused, naming the file and -restart.
func TestResumeTornMetrics(t *testing.T) {
	c := nm2(t, "train.max_epochs=2")
	dir := c.Dir(41)
	if _, err := trainIn(t, c, dir, false, false, nil); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, runfiles.MetricsFile)
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first := bytes.IndexByte(whole, '\n') + 1
	longer := *c
	longer.Train.MaxEpochs = 3

	// a crash while the third epoch's line was written
	os.WriteFile(path, append(slices.Clone(whole), whole[first:first+20]...), 0o600)
	var log bytes.Buffer
	if _, err := trainIn(t, &longer, dir, true, false, &log); err != nil {
		t.Fatalf("resume over a torn last line: %v", err)
	}
	if want := "kept the lines of the 2 epochs the checkpoint covers, dropped a torn last line"; !strings.Contains(log.String(), want) {
		t.Fatalf("the log does not say %q:\n%s", want, log.String())
	}
	if eps, err := runfiles.ReadMetrics(path); err != nil || len(eps) != 3 {
		t.Fatalf("metrics after the resume: %d epochs, %v", len(eps), err)
	}

	// the second epoch's line, which the checkpoint covers, torn
	os.WriteFile(path, whole[:first+20], 0o600)
	_, err = trainIn(t, &longer, dir, false, false, nil)
	wantErr(t, "fresh start", err, "holds a finished run")
	longer.Train.MaxEpochs = 4
	_, err = trainIn(t, &longer, dir, true, false, nil)
	wantErr(t, "resume over a torn covered line", err, path+" holds the lines of 1 epoch, the checkpoint covers 3", "add `-restart`")
}
