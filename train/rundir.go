package train

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

// lockDir creates the run directory and locks it, unless the caller holds its lock
// (Options.Lock); the returned function releases what lockDir took.
func (r *run) lockDir() (func(), error) {
	if l := r.o.Lock; l != nil {
		if filepath.Clean(l.Dir()) != filepath.Clean(r.o.Dir) {
			return nil, fmt.Errorf("the lock held is of %s, the run directory is %s", l.Dir(), r.o.Dir)
		}
		return func() {}, nil
	}
	if err := os.MkdirAll(r.o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	l, err := LockRun(r.o.Dir, r.log)
	if err != nil {
		return nil, err
	}
	return func() {
		if err := l.Release(); err != nil {
			fmt.Fprintln(r.log, err)
		}
	}, nil
}

// checkDir readies the locked run directory: for a restart it moves the old files aside; to
// resume it returns the checkpoint; for a fresh start it refuses a directory holding a run.
func (r *run) checkDir() (*Checkpoint, error) {
	switch {
	case r.o.Restart && r.o.Resume:
		return nil, errors.New("resume and restart exclude each other")
	case r.o.Restart:
		return nil, r.moveAside()
	case r.o.Resume:
		return r.resumeCheckpoint()
	}
	return nil, refuseExisting(r.o.Dir)
}

// restartAdvice is the way out of a run directory that cannot be continued.
func restartAdvice(dir string) string {
	return fmt.Sprintf("-restart discards it and starts afresh (its files kept in %s)", filepath.Join(dir, runfiles.OldPrefix+"<UTC time>"))
}

// refuseExisting refuses a fresh start in a directory that holds a run's result or checkpoint.
func refuseExisting(dir string) error {
	res, err := runfiles.ReadResult(filepath.Join(dir, runfiles.ResultFile))
	if err == nil && runfiles.Finished(res.StoppedBy) {
		return fmt.Errorf("%s holds a finished run (stopped by %s after %d epochs): -resume %s with -epochs or -max-time to extend it, %s, or choose another -out",
			dir, res.StoppedBy, res.Epochs, dir, restartAdvice(dir))
	}
	for _, f := range []string{runfiles.CheckpointFile, runfiles.ResultFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return fmt.Errorf("%s already holds %s of an unfinished run: -resume %s to continue it, %s, or choose another -out", dir, f, dir, restartAdvice(dir))
		}
	}
	return nil
}

// ReadRunCheckpoint reads the checkpoint of the run directory dir to resume it; a missing or
// unreadable checkpoint is an error that names -restart.
func ReadRunCheckpoint(dir string) (*Checkpoint, error) {
	ck, err := ReadCheckpoint(filepath.Join(dir, runfiles.CheckpointFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("resume %s: nothing to resume, no %s: %s", dir, runfiles.CheckpointFile, restartAdvice(dir))
	}
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w: %s", dir, err, restartAdvice(dir))
	}
	return ck, nil
}

// resumeCheckpoint reads the checkpoint to resume and checks that it is of this run and seed and,
// for a finished run, that the config's budget goes past where it stopped.
func (r *run) resumeCheckpoint() (*Checkpoint, error) {
	dir := r.o.Dir
	ck, err := ReadRunCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	if name := r.cfg.RunName(); ck.Run != name || ck.Seed != r.o.Seed {
		return nil, fmt.Errorf("resume %s: the checkpoint is of run %s seed %d, the config is %s seed %d: drop the -set or -seed that changes them, or %s",
			dir, ck.Run, ck.Seed, name, r.o.Seed, restartAdvice(dir))
	}
	return ck, r.checkExtends(ck)
}

// checkExtends refuses to resume a finished run (its result.json says min_lr, max_time or
// max_epochs) that would stop again at once under the config's stop rules.
func (r *run) checkExtends(ck *Checkpoint) error {
	dir := r.o.Dir
	res, err := runfiles.ReadResult(filepath.Join(dir, runfiles.ResultFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		fmt.Fprintf(r.log, "resume %s: the result does not verify (%v); continuing from the checkpoint\n", dir, err)
		return nil
	case !runfiles.Finished(res.StoppedBy):
		return nil
	}
	lp := ck.Loop
	c := r.cfg.Train
	head := fmt.Sprintf("%s is finished: stopped by %s after %d epochs and %s", dir, res.StoppedBy, lp.Epoch, seconds(lp.Elapsed))
	acc := 0.0
	if lp.Last != nil && res.Metric != runfiles.MetricMAE {
		acc = lp.Last.TrainMetric
	}
	switch stopRule(c, lp.Plateau.LR, lp.Elapsed, lp.Epoch, acc) {
	case runfiles.StopAccuracy:
		return fmt.Errorf("%s; its training accuracy %.4g reached train.stop_accuracy %g, so it is solved and neither -epochs nor -max-time extends it; %s",
			head, acc, c.StopAccuracy, restartAdvice(dir))
	case "":
		fmt.Fprintf(r.log, "%s; extending it to train.max_epochs %d and train.max_time %s\n", head, c.MaxEpochs, c.MaxTime)
		return nil
	case runfiles.StopMinLR:
		return fmt.Errorf("%s; its learning rate %.3g is below train.min_lr %.3g, so its schedule is over and neither -epochs nor -max-time extends it; %s",
			head, lp.Plateau.LR, c.MinLR, restartAdvice(dir))
	}
	// Name every budget that is spent, not only the rule that fires first.
	var need []string
	if timeSpent(c, lp.Elapsed) {
		need = append(need, fmt.Sprintf("-max-time longer than %s (train.max_time is %s)", seconds(lp.Elapsed), c.MaxTime))
	}
	if epochsSpent(c, lp.Epoch) {
		need = append(need, fmt.Sprintf("-epochs more than %d (train.max_epochs is %d)", lp.Epoch, c.MaxEpochs))
	}
	return fmt.Errorf("%s; to extend it, resume with %s; %s", head, strings.Join(need, " and "), restartAdvice(dir))
}

func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(time.Second)
}

// moveAside moves everything in the run directory (config.yaml, metrics.jsonl, result.json,
// checkpoint.bin, predictions.bin, train.log and whatever else is there) into a new folder
// <dir>/.old-<UTC time>, except the lock, which this process holds, and the .old-* folders of
// earlier restarts; it deletes nothing. A directory holding nothing else is left as it is.
func (r *run) moveAside() error {
	dir := r.o.Dir
	present, err := oldRunFiles(dir)
	if err != nil {
		return err
	}
	if len(present) == 0 {
		return nil
	}
	old, err := makeOldDir(dir, time.Now())
	if err != nil {
		return err
	}
	for _, f := range present {
		if err := os.Rename(filepath.Join(dir, f), filepath.Join(old, f)); err != nil {
			return fmt.Errorf("restart %s: %w", dir, err)
		}
	}
	fmt.Fprintf(r.log, "restart: %v of %s moved into %s\n", present, dir, old)
	return nil
}

// oldRunFiles are the names in the run directory dir that a restart moves aside: all but the
// lock and the .old-* folders.
func oldRunFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("restart %s: %w", dir, err)
	}
	var names []string
	for _, e := range ents {
		if n := e.Name(); n != runfiles.LockFile && !strings.HasPrefix(n, runfiles.OldPrefix) {
			names = append(names, n)
		}
	}
	return names, nil
}

// makeOldDir creates <dir>/.old-<UTC time>, with a suffix -2, -3, … if that exists already.
func makeOldDir(dir string, now time.Time) (string, error) {
	base := filepath.Join(dir, runfiles.OldPrefix+now.UTC().Format("20060102T150405Z"))
	for i := 1; i <= 100; i++ {
		p := base
		if i > 1 {
			p = fmt.Sprintf("%s-%d", base, i)
		}
		err := os.Mkdir(p, 0o755)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("restart %s: %w", dir, err)
		}
	}
	return "", fmt.Errorf("restart %s: %s-2 … -100 all exist", dir, base)
}
