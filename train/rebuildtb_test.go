package train

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/internal/tfread"
	"github.com/rewiregnn/rewiregnn/rundir"
	"github.com/rewiregnn/rewiregnn/runfiles"
	"github.com/rewiregnn/rewiregnn/runlog"
)

// rebuild runs RebuildBoard on dir and returns the old folder and the log.
func rebuild(t *testing.T, dir string) (string, string) {
	t.Helper()
	var log bytes.Buffer
	old, err := runlog.RebuildBoard(dir, &log)
	if err != nil {
		t.Fatal(err)
	}
	return old, log.String()
}

// endFigures are the scalar values of a board's end events, and its session start's hparams.
func endFigures(t *testing.T, b *tfread.Run) (map[string]float32, *tfread.HParams) {
	t.Helper()
	vals := map[string]float32{}
	var start *tfread.HParams
	for _, e := range b.End {
		for _, v := range e.Values {
			if v.HasSimple {
				vals[v.Tag] = v.Simple
			}
			if v.Tag == "_hparams_/session_start_info" {
				h, err := tfread.DecodeHParams(v.Content)
				if err != nil {
					t.Fatal(err)
				}
				start = h
			}
		}
	}
	return vals, start
}

// TestRebuildBoardMatchesTraining: the tb folder rebuilt from a finished run's metrics.jsonl
// and result.json holds the scalars the training wrote, every one (timings too, which come
// from the same records), with the same end: hparams and final figures. The folder written
// during training is kept, under .old-<time>/tb, byte for byte.
func TestRebuildBoardMatchesTraining(t *testing.T) {
	c := nm2(t, "train.max_epochs=3")
	res, err := trainRun(t, c, 41, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := c.Dir(41)
	trained, err := tfread.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := tfread.Files(filepath.Join(dir, runfiles.TBDir))
	before, _ := os.ReadFile(files[0])
	old, log := rebuild(t, dir)
	if !strings.Contains(log, "wrote 3 epochs and the end of the run (max_epochs)") || !strings.Contains(log, old) {
		t.Errorf("log:\n%s", log)
	}
	if kept, err := os.ReadFile(filepath.Join(old, filepath.Base(files[0]))); err != nil || !bytes.Equal(kept, before) {
		t.Fatalf("the old folder's file: %v (same bytes %v)", err, bytes.Equal(kept, before))
	}
	rebuilt := wantBoardMatchesMetrics(t, dir, res.Metric, false, true)
	wantEnd(t, rebuilt.End, res, c.RunName(), 1)
	if !reflect.DeepEqual(rebuilt.Epochs, trained.Epochs) {
		t.Errorf("epochs rebuilt %v, trained %v", rebuilt.Epochs, trained.Epochs)
	}
	gotEnd, gotStart := endFigures(t, rebuilt)
	wantEndVals, wantStart := endFigures(t, trained)
	if !reflect.DeepEqual(gotEnd, wantEndVals) || !reflect.DeepEqual(gotStart.HParams, wantStart.HParams) || gotStart.Group != wantStart.Group {
		t.Errorf("end rebuilt %v %+v, trained %v %+v", gotEnd, gotStart, wantEndVals, wantStart)
	}
}

// TestRebuildBoardFillsGaps: a finished run whose event file was torn in its second epoch's
// record, and one whose session could not write TensorBoard at all (a file where tb goes; its
// log names -rebuild-tb), get every epoch and the end back from -rebuild-tb.
func TestRebuildBoardFillsGaps(t *testing.T) {
	c := nm2(t, "train.max_epochs=3")
	res, err := trainRun(t, c, 41, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := c.Dir(41)
	files, _ := tfread.Files(filepath.Join(dir, runfiles.TBDir))
	b, _ := os.ReadFile(files[0])
	evs, err := tfread.Parse(b)
	if err != nil || len(evs) < 3 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	cut := len(b) * 2 / 5 // inside the epochs' records: the version event is short
	if err := os.WriteFile(files[0], b[:cut], 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := tfread.MatchMetrics(dir, res.Metric, false, true); err == nil {
		t.Fatal("the torn folder matches metrics.jsonl")
	}
	rebuild(t, dir)
	wantEnd(t, wantBoardMatchesMetrics(t, dir, res.Metric, false, true).End, res, c.RunName(), 1)

	c2 := nm2(t, "train.max_epochs=2")
	dir2 := c2.Dir(41)
	os.MkdirAll(dir2, 0o755)
	os.WriteFile(filepath.Join(dir2, runfiles.TBDir), []byte("in the way"), 0o666)
	var log bytes.Buffer
	res2, err := trainIn(t, c2, dir2, false, false, &log)
	if err != nil {
		t.Fatal(err)
	}
	if want := "`train -rebuild-tb " + dir2 + "` rebuilds its tb folder"; !strings.Contains(log.String(), want) {
		t.Fatalf("the warning does not say %q:\n%s", want, log.String())
	}
	old, _ := rebuild(t, dir2)
	wantEnd(t, wantBoardMatchesMetrics(t, dir2, res2.Metric, false, true).End, res2, c2.RunName(), 1)
	if got, err := os.ReadFile(old); err != nil || string(got) != "in the way" {
		t.Errorf("the file in tb's place was not kept at %s: %q %v", old, got, err)
	}
}

// TestRebuildBoardRefusals: a run directory without result.json (killed: its -resume fills the
// gaps) and one another process holds are refused by name, and their tb folder is left alone.
func TestRebuildBoardRefusals(t *testing.T) {
	c := nm2(t, "train.max_epochs=2")
	if _, err := trainRun(t, c, 41, false, nil); err != nil {
		t.Fatal(err)
	}
	dir := c.Dir(41)
	tb := filepath.Join(dir, runfiles.TBDir)
	files, _ := tfread.Files(tb)
	if err := os.Remove(filepath.Join(dir, runfiles.ResultFile)); err != nil {
		t.Fatal(err)
	}
	_, err := runlog.RebuildBoard(dir, nil)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, runfiles.ResultFile)) || !strings.Contains(err.Error(), "`train -resume "+dir+"`") {
		t.Errorf("without result.json: %v", err)
	}
	l, err := rundir.LockDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if _, err := runlog.RebuildBoard(dir, nil); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("a locked run directory: %v", err)
	}
	if now, _ := tfread.Files(tb); !reflect.DeepEqual(now, files) {
		t.Errorf("event files %v, were %v", now, files)
	}
	if ents, _ := filepath.Glob(filepath.Join(dir, ".*")); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}
