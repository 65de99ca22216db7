package runlog

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/internal/plural"
	"github.com/rewiregnn/rewiregnn/rundir"
	"github.com/rewiregnn/rewiregnn/runfiles"
	"github.com/rewiregnn/rewiregnn/tfevents"
)

// RebuildBoard writes the TensorBoard folder of the run directory dir anew from its
// metrics.jsonl and result.json (what `train -rebuild-tb DIR` does): for a run that is over,
// whose folder lacks epochs (TensorBoard failed during a session) or holds a torn file, and
// which no -resume will repair. The new folder holds one event file with the events a session
// would have written: each epoch of metrics.jsonl (epochScalars, at the wall time its record
// was made, reckoned back from the file's modification time by elapsed_seconds) and, unless the
// run stopped by a signal, the end's hparams summaries and final figures (endEvents, at
// result.json's modification time).
//
// It locks the run directory, builds the folder in a hidden temporary folder beside tb, reads
// it back, then moves the old tb folder into <dir>/.old-<UTC time>/ (it deletes nothing) and
// renames the new one into its place. It returns the folder the old one went to ("" for none).
func RebuildBoard(dir string, log io.Writer) (old string, err error) {
	if log == nil {
		log = io.Discard
	}
	lock, err := rundir.LockDir(dir, log)
	if err != nil {
		return "", fmt.Errorf("rebuild-tb: %w", err)
	}
	defer func() {
		if rerr := lock.Release(); err == nil && rerr != nil {
			err = fmt.Errorf("rebuild-tb: %w", rerr)
		}
	}()
	src, err := readBoardSources(dir)
	if err != nil {
		return "", fmt.Errorf("rebuild-tb %s: %w", dir, err)
	}
	tmp, err := src.build(dir)
	if err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("rebuild-tb %s: %w", dir, err)
	}
	if old, err = swapBoard(dir, tmp); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("rebuild-tb %s: %w", dir, err)
	}
	fmt.Fprintf(log, "rebuild-tb: %s: wrote %s and the end of the run (%s) from %s and %s\n",
		filepath.Join(dir, runfiles.TBDir), plural.Count(len(src.epochs), "epoch"), src.res.StoppedBy, runfiles.MetricsFile, runfiles.ResultFile)
	if old != "" {
		fmt.Fprintf(log, "rebuild-tb: the old %s folder is %s\n", runfiles.TBDir, old)
	}
	return old, nil
}

// boardSources are the files of a run directory its TensorBoard folder is made from.
type boardSources struct {
	cfg       *config.Run
	res       *runfiles.Result
	epochs    []runfiles.Epoch
	metricsAt time.Time // metrics.jsonl's modification time: when its last record was written
	resultAt  time.Time // result.json's
	hasVal    bool
	hasTest   bool
}

// readBoardSources reads and checks dir's config.yaml, result.json and metrics.jsonl.
func readBoardSources(dir string) (*boardSources, error) {
	resPath := filepath.Join(dir, runfiles.ResultFile)
	res, err := runfiles.ReadResult(resPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no such file: the run has not ended; %s continues it and writes the epochs its %s folder lacks",
			resPath, rundir.Suggest("-resume", dir), runfiles.TBDir)
	}
	if err != nil {
		return nil, err
	}
	c, err := config.Load(filepath.Join(dir, runfiles.ConfigFile), nil)
	if err != nil {
		return nil, err
	}
	mPath := filepath.Join(dir, runfiles.MetricsFile)
	eps, err := runfiles.ReadMetrics(mPath)
	if err != nil && !(errors.Is(err, fs.ErrNotExist) && res.Epochs == 0) {
		return nil, err
	}
	if len(eps) != res.Epochs {
		return nil, fmt.Errorf("%s holds %s, %s says %d", mPath, plural.Count(len(eps), "epoch"), resPath, res.Epochs)
	}
	src := &boardSources{cfg: c, res: res, epochs: eps, hasVal: res.ValSplit != "none", hasTest: res.TestSplit == ""}
	if src.metricsAt, err = modTime(mPath, len(eps) > 0); err != nil {
		return nil, err
	}
	if src.resultAt, err = modTime(resPath, true); err != nil {
		return nil, err
	}
	return src, nil
}

// modTime is path's modification time; the zero time for a file that need not be there.
func modTime(path string, need bool) (time.Time, error) {
	st, err := os.Stat(path)
	if err != nil {
		if !need && errors.Is(err, fs.ErrNotExist) {
			return time.Time{}, nil
		}
		return time.Time{}, err
	}
	return st.ModTime(), nil
}

// epochTime is when the record of ep was written: metrics.jsonl's modification time less the
// run's elapsed time between that record and the last.
func (s *boardSources) epochTime(ep runfiles.Epoch) time.Time {
	last := s.epochs[len(s.epochs)-1]
	return s.metricsAt.Add(-time.Duration((last.Elapsed - ep.Elapsed) * float64(time.Second)))
}

// events are the new event file's events after its version event.
func (s *boardSources) events() [][]byte {
	var evs [][]byte
	for _, ep := range s.epochs {
		wall := tfevents.Wall(s.epochTime(ep))
		evs = append(evs, tfevents.ScalarEvent(wall, int64(ep.Epoch), epochScalars(ep, s.res.Metric, s.hasVal, s.hasTest)))
	}
	if s.res.StoppedBy != runfiles.StopSignal {
		evs = append(evs, endEvents(s.cfg, s.res.Seed, s.res, s.resultAt)...)
	}
	return evs
}

// build writes the new folder into a hidden temporary folder of dir, which it returns (the
// caller removes it on an error), and reads its file back.
func (s *boardSources) build(dir string) (string, error) {
	tmp := filepath.Join(dir, fmt.Sprintf(".%s.rebuild-%d", runfiles.TBDir, os.Getpid()))
	if err := os.RemoveAll(tmp); err != nil { // left by a rebuild that was killed
		return "", err
	}
	start := s.resultAt
	if len(s.epochs) > 0 {
		start = s.epochTime(s.epochs[0])
	}
	host, _ := os.Hostname()
	w, err := tfevents.Create(tmp, start, host)
	if err != nil {
		return tmp, err
	}
	evs := s.events()
	for _, ev := range evs {
		if err := w.Write(ev); err != nil {
			w.Close()
			return tmp, err
		}
	}
	if err := w.Close(); err != nil {
		return tmp, err
	}
	return tmp, checkBuilt(w.Path(), 1+len(evs))
}

// checkBuilt reads the event file back: n whole records that decode, nothing after them, and
// syncs it to disk.
func checkBuilt(path string, n int) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	recs, _, tail := tfevents.Records(b)
	if tail != nil || len(recs) != n {
		return fmt.Errorf("%s: read back %d records (tail %v), wrote %d", path, len(recs), tail, n)
	}
	for i, rec := range recs {
		if _, err := tfevents.Decode(rec); err != nil {
			return fmt.Errorf("%s: record %d: %w", path, i, err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// swapBoard moves dir's tb folder, if there is one, into a new <dir>/.old-<UTC time>/ and
// renames tmp to tb; if that rename fails, the old folder is moved back. It returns the old
// folder's new path ("" for none).
func swapBoard(dir, tmp string) (string, error) {
	tb := filepath.Join(dir, runfiles.TBDir)
	old := ""
	if _, err := os.Lstat(tb); err == nil {
		od, err := rundir.MakeOldDir(dir, time.Now())
		if err != nil {
			return "", err
		}
		old = filepath.Join(od, runfiles.TBDir)
		if err := os.Rename(tb, old); err != nil {
			os.Remove(od)
			return "", err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err := os.Rename(tmp, tb); err != nil {
		if old != "" {
			if berr := os.Rename(old, tb); berr != nil {
				return "", fmt.Errorf("%w; and moving the old folder %s back: %v", err, old, berr)
			}
		}
		return "", err
	}
	return old, nil
}
