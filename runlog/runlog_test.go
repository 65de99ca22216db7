package runlog

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/internal/tfread"
	"github.com/rewiregnn/rewiregnn/rundir"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// epochs are n made-up metrics.jsonl records.
func epochs(n int) []runfiles.Epoch {
	var eps []runfiles.Epoch
	for i := range n {
		loss := 0.5 / float64(i+1)
		eps = append(eps, runfiles.Epoch{Epoch: i, LR: 1e-3, TrainLoss: 1 / float64(i+1), TrainMetric: 0.9 / float64(i+1),
			ValLoss: 0.8 / float64(i+1), ValMetric: 0.7 / float64(i+1), TestMetric: 0.6 / float64(i+1), TestLoss: &loss,
			Seconds: 1.5, EvalSeconds: 0.25, Elapsed: 2 * float64(i+1)})
	}
	return eps
}

// writeMetrics writes eps as dir's metrics.jsonl.
func writeMetrics(t *testing.T, dir string, eps []runfiles.Epoch) {
	t.Helper()
	if err := runfiles.WriteMetrics(filepath.Join(dir, runfiles.MetricsFile), eps); err != nil {
		t.Fatal(err)
	}
}

// TestResumeMetrics: a resume keeps the lines its checkpoint covers and drops, saying so, what
// follows them (complete lines, a torn last line); a file with fewer lines than the checkpoint
// covers is an error naming -restart.
func TestResumeMetrics(t *testing.T) {
	dir := t.TempDir()
	writeMetrics(t, dir, epochs(3))
	path := filepath.Join(dir, runfiles.MetricsFile)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"epoch": 3, "lr"`) // a write cut short
	f.Close()
	for _, c := range []struct {
		covered int
		dropped string
	}{
		{3, "dropped a torn last line"},
		{1, "dropped 2 complete lines and a torn last line"},
	} {
		var log bytes.Buffer
		eps, err := ResumeMetrics(dir, c.covered, &log)
		if err != nil || len(eps) != c.covered {
			t.Fatalf("covered %d: %d epochs, %v", c.covered, len(eps), err)
		}
		if !strings.Contains(log.String(), c.dropped) {
			t.Errorf("covered %d: log %q, want %q", c.covered, log.String(), c.dropped)
		}
	}
	var log bytes.Buffer
	if _, err := ResumeMetrics(dir, 4, &log); err == nil || !strings.Contains(err.Error(), "are lost") || !strings.Contains(err.Error(), "`-restart`") {
		t.Errorf("a checkpoint past the file's lines: %v", err)
	}
	if eps, err := ResumeMetrics(t.TempDir(), 0, &log); err != nil || len(eps) != 0 {
		t.Errorf("a new run without metrics.jsonl: %v, %v", eps, err)
	}
}

// TestBoard: a session's board holds the epochs it is given; a resumed session's board drops
// from the earlier files the epochs past its checkpoint and the end, and writes the covered
// epochs no file holds; the end's events are written for a finished run only.
func TestBoard(t *testing.T) {
	dir := t.TempDir()
	eps := epochs(3)
	writeMetrics(t, dir, eps)
	var log bytes.Buffer
	b := OpenBoard(dir, nil, runfiles.MetricMAE, true, true, &log)
	for _, ep := range eps {
		b.Epoch(ep)
	}
	c, err := config.Load("", []string{"dataset.name=zinc"})
	if err != nil {
		t.Fatal(err)
	}
	res := &runfiles.Result{Metric: runfiles.MetricMAE, Epochs: 3, StoppedBy: runfiles.StopMaxEpochs, TestMetric: 0.2, ValMetric: 0.3, TrainMetric: 0.1, TotalSeconds: 6}
	b.End(c, 41, res)
	b.Close()
	b.Close() // twice does nothing
	if log.Len() != 0 {
		t.Errorf("log %q", log.String())
	}
	r, err := tfread.MatchMetrics(dir, runfiles.MetricMAE, true, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.End) != 3 { // session start, final figures, session end
		t.Fatalf("%d end events, want 3", len(r.End))
	}
	// A resume from the checkpoint after epoch 1: epoch 2 and the end go.
	writeMetrics(t, dir, eps[:2])
	b = OpenBoard(dir, eps[:2], runfiles.MetricMAE, true, true, &log)
	b.End(c, 41, &runfiles.Result{Metric: runfiles.MetricMAE, StoppedBy: runfiles.StopSignal})
	b.Close()
	if r, err = tfread.MatchMetrics(dir, runfiles.MetricMAE, true, true); err != nil || len(r.End) != 0 {
		t.Fatalf("after the resume: %v, %d end events", err, len(r.End))
	}
	if !strings.Contains(log.String(), "kept 2 epochs of the 2 epochs the checkpoint covers, dropped 4 events") {
		t.Errorf("log %q", log.String())
	}
	// The folder lost: the covered epochs come back from metrics.jsonl.
	log.Reset()
	if err := os.RemoveAll(filepath.Join(dir, runfiles.TBDir)); err != nil {
		t.Fatal(err)
	}
	OpenBoard(dir, eps[:2], runfiles.MetricMAE, true, true, &log).Close()
	if _, err := tfread.MatchMetrics(dir, runfiles.MetricMAE, true, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "wrote epochs 0 to 1 from metrics.jsonl") {
		t.Errorf("log %q", log.String())
	}
}

// TestBoardFailure: a board that cannot be written says so once, with the way out, and its
// methods then do nothing, as a nil board's do.
func TestBoardFailure(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, runfiles.TBDir), []byte("in the way"), 0o644); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	b := OpenBoard(dir, nil, runfiles.MetricMAE, true, true, &log)
	for _, ep := range epochs(2) {
		b.Epoch(ep)
	}
	b.Close()
	if n := strings.Count(log.String(), "tensorboard:"); n != 1 || !strings.Contains(log.String(), rundir.Suggest("-rebuild-tb", dir)) {
		t.Errorf("%d warnings, want 1 naming -rebuild-tb: %q", n, log.String())
	}
	var none *Board
	none.Epoch(epochs(1)[0])
	none.End(nil, 41, &runfiles.Result{})
	none.Close()
}

// TestRebuildBoard: the folder rebuilt from a finished run's files holds its epochs and its
// end; the old folder is kept under .old-<time>/; a run without result.json is refused.
func TestRebuildBoard(t *testing.T) {
	dir := t.TempDir()
	c, err := config.Load("", []string{"dataset.name=zinc"})
	if err != nil {
		t.Fatal(err)
	}
	if err := config.WriteFile(filepath.Join(dir, runfiles.ConfigFile), c); err != nil {
		t.Fatal(err)
	}
	eps := epochs(3)
	writeMetrics(t, dir, eps)
	if _, err := RebuildBoard(dir, nil); err == nil || !strings.Contains(err.Error(), "`train -resume "+dir+"`") {
		t.Errorf("without result.json: %v", err)
	}
	res := &runfiles.Result{Name: c.RunName(), Dataset: c.Dataset.Name, Model: c.Model.Name, R: 1, Seed: 41, Metric: runfiles.MetricMAE,
		Epochs: 3, StoppedBy: runfiles.StopMaxEpochs, TestMetric: 0.2, ValMetric: 0.3, TrainMetric: 0.1, TotalSeconds: 6}
	if err := runfiles.WriteResult(filepath.Join(dir, runfiles.ResultFile), res); err != nil {
		t.Fatal(err)
	}
	OpenBoard(dir, eps[:1], runfiles.MetricMAE, true, true, nil).Close() // a board that lacks epochs
	var log bytes.Buffer
	old, err := RebuildBoard(dir, &log)
	if err != nil {
		t.Fatal(err)
	}
	r, err := tfread.MatchMetrics(dir, runfiles.MetricMAE, true, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.End) != 3 {
		t.Errorf("%d end events, want 3", len(r.End))
	}
	if files, _ := tfread.Files(old); old == "" || len(files) != 1 {
		t.Errorf("the old folder %q holds %v", old, files)
	}
	if !strings.Contains(log.String(), "wrote 3 epochs") {
		t.Errorf("log %q", log.String())
	}
}
