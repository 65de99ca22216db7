package train

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/internal/plural"
	"github.com/rewiregnn/rewiregnn/rundir"
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
		return nil, r.wrote(fmt.Errorf("run directory: %w", err))
	}
	l, err := rundir.LockDir(r.o.Dir, r.log) // its errors name their way out
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
		return nil, rundir.MoveAside(r.o.Dir, r.log)
	case r.o.Resume:
		return r.resumeCheckpoint()
	}
	return nil, r.refuseExisting()
}

// resumeMayChange are the keys of the config hash that a resumed run may change: its budget and
// the accuracy stop. Any other difference would continue the checkpoint under another model or
// protocol.
var resumeMayChange = map[string]bool{"train.max_epochs": true, "train.max_time": true, "train.stop_accuracy": true}

// configDiff names the keys, other than resumeMayChange, in which the run's config differs from
// want, as "key value (want other)".
func configDiff(c, want *config.Run) []string {
	var out []string
	for _, d := range c.Diff(want) {
		if key, _, _ := strings.Cut(d, " "); !resumeMayChange[key] {
			out = append(out, d)
		}
	}
	return out
}

// refuseExisting refuses a fresh start in a directory that holds a run's result or checkpoint,
// saying what it holds and which command gets out: a run of another config, a finished run (and
// whether and how -resume extends it), a diverged run, or an unfinished one to resume.
func (r *run) refuseExisting() error {
	dir := r.o.Dir
	var present []string
	for _, f := range []string{runfiles.CheckpointFile, runfiles.ResultFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			present = append(present, f)
		}
	}
	if len(present) == 0 {
		return nil
	}
	old, err := config.Load(filepath.Join(dir, runfiles.ConfigFile), nil)
	if err == nil {
		if diff := configDiff(old, r.cfg); len(diff) > 0 {
			return fmt.Errorf("%s holds a run of another config: %s, where want is this command's value; %s",
				dir, strings.Join(diff, ", "), rundir.FreshRestartAdvice(dir))
		}
	}
	res, err := runfiles.ReadResult(filepath.Join(dir, runfiles.ResultFile))
	switch {
	case err == nil && runfiles.Finished(res.StoppedBy):
		return fmt.Errorf("%s holds a finished run (stopped by %s after %s)%s; %s",
			dir, res.StoppedBy, plural.Count(res.Epochs, "epoch"), r.resumeExtension(old, res), rundir.FreshRestartAdvice(dir))
	case err == nil && res.StoppedBy == runfiles.StopNaN:
		return fmt.Errorf("%s holds a run that diverged (stopped by %s after %s; resuming repeats it); %s",
			dir, res.StoppedBy, plural.Count(res.Epochs, "epoch"), rundir.FreshRestartAdvice(dir))
	}
	return fmt.Errorf("%s already holds %s of an unfinished run: %s continues it, or %s",
		dir, strings.Join(present, " and "), rundir.Suggest("-resume", dir), rundir.FreshRestartAdvice(dir))
}

// resumeExtension is the clause of refuseExisting on extending a finished run: the -resume
// command that does, worked out from the run's own config (old, what -resume reads) and its
// checkpoint, or why none does; "" when neither can be read.
func (r *run) resumeExtension(old *config.Run, res *runfiles.Result) string {
	ck, err := ReadCheckpoint(filepath.Join(r.o.Dir, runfiles.CheckpointFile))
	if old == nil || err != nil {
		return ""
	}
	args, why := extendArgs(old.Train, r.cfg.Train, ck.Loop, trainAccuracy(ck.Loop, res.Metric))
	if why != "" {
		return "; " + why + ", so no budget extends it"
	}
	return "; " + rundir.Suggest(append([]string{"-resume", r.o.Dir}, args...)...) + " extends it"
}

// trainAccuracy is the training accuracy of the loop's last finished epoch (0 for regression or
// before the first epoch), what the accuracy stop compares.
func trainAccuracy(lp Loop, metric string) float64 {
	if lp.Last == nil || !runfiles.IsAccuracy(metric) {
		return 0
	}
	return lp.Last.TrainMetric
}

// extendArgs are the flags that make a run stopped at lp continue under c, the config that
// -resume reads: -set train.stop_accuracy=0 when it reached the accuracy stop (it is solved; the
// flag trains it on regardless), and a -max-time and -epochs beyond what it spent, where spent
// (the values asked in want where they go further, else twice what was spent). A run whose
// learning rate fell below train.min_lr cannot continue: why says so.
func extendArgs(c, want config.Train, lp Loop, acc float64) (args []string, why string) {
	if c.StopAccuracy > 0 && acc >= c.StopAccuracy {
		args = append(args, "-set", "train.stop_accuracy=0")
		c.StopAccuracy = 0
	}
	if StopByLR(lp.Plateau.LR, c.MinLR) {
		return nil, fmt.Sprintf("its learning rate %.3g is below train.min_lr %.3g: its schedule is over", lp.Plateau.LR, c.MinLR)
	}
	if timeSpent(c, lp.Elapsed) {
		t := want.MaxTime
		if t.Seconds() <= lp.Elapsed {
			t = (2 * seconds(lp.Elapsed)).Truncate(time.Minute) + time.Minute
		}
		args = append(args, "-max-time", t.String())
	}
	if epochsSpent(c, lp.Epoch) {
		n := want.MaxEpochs
		if n <= lp.Epoch {
			n = 2*lp.Epoch + 1
		}
		args = append(args, "-epochs", strconv.Itoa(n))
	}
	return args, ""
}

// ReadRunCheckpoint reads the checkpoint of the run directory dir to resume it; a missing or
// unreadable checkpoint is an error that names -restart.
func ReadRunCheckpoint(dir string) (*Checkpoint, error) {
	ck, err := ReadCheckpoint(filepath.Join(dir, runfiles.CheckpointFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("resume %s: nothing to resume, no %s: %s", dir, runfiles.CheckpointFile, rundir.RestartAdvice(dir))
	}
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w: %s", dir, err, rundir.RestartAdvice(dir))
	}
	return ck, nil
}

// resumeCheckpoint reads the checkpoint to resume and checks that it is of this config, run and
// seed and, for a finished run, that the config's budget goes past where it stopped.
func (r *run) resumeCheckpoint() (*Checkpoint, error) {
	dir := r.o.Dir
	ck, err := ReadRunCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	if err := r.checkCheckpointConfig(ck); err != nil {
		return nil, err
	}
	if name := r.cfg.RunName(); ck.Run != name {
		return nil, fmt.Errorf("resume %s: the checkpoint is of run %s, the config names %s: undo the edit of %s or the -set that changes the name, or %s",
			dir, ck.Run, name, filepath.Join(dir, runfiles.ConfigFile), rundir.RestartAdvice(dir))
	}
	if ck.Seed != r.o.Seed {
		return nil, fmt.Errorf("resume %s: the checkpoint is of seed %d, not %d: drop -seed %d from this command (-resume takes the checkpoint's seed), or %s",
			dir, ck.Seed, r.o.Seed, r.o.Seed, rundir.RestartAdvice(dir))
	}
	return ck, r.checkExtends(ck)
}

// checkCheckpointConfig refuses to resume a checkpoint under a config that differs from the one
// it was trained with (config.yaml edited, or a -set) in a key other than resumeMayChange. A
// checkpoint written before checkpoints carried their config is not checked here; restore
// reports what does not fit.
func (r *run) checkCheckpointConfig(ck *Checkpoint) error {
	if len(ck.Config) == 0 {
		return nil
	}
	dir := r.o.Dir
	path := filepath.Join(dir, runfiles.CheckpointFile)
	trained, err := config.Parse(path+" (the config it was trained with)", ck.Config, nil)
	if err != nil {
		return fmt.Errorf("resume %s: %w: %s", dir, err, rundir.RestartAdvice(dir))
	}
	diff := configDiff(r.cfg, trained)
	if len(diff) == 0 {
		return nil
	}
	return fmt.Errorf("resume %s: the config (%s and any -set) differs from the one its checkpoint was trained with: %s (want: the checkpoint's value); "+
		"a resumed run may change only train.max_epochs, train.max_time and train.stop_accuracy: undo the change, or %s",
		dir, filepath.Join(dir, runfiles.ConfigFile), strings.Join(diff, ", "), rundir.RestartAdvice(dir))
}

// checkExtends refuses to resume a finished run (its result.json says min_lr, max_time,
// max_epochs or train_accuracy) that would stop again at once under the config's stop rules,
// naming the flags to add that extend it (extendArgs).
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
	head := fmt.Sprintf("%s is finished: stopped by %s after %s and %s", dir, res.StoppedBy, plural.Count(lp.Epoch, "epoch"), seconds(lp.Elapsed))
	acc := trainAccuracy(lp, res.Metric)
	if stopRule(c, lp.Plateau.LR, lp.Elapsed, lp.Epoch, acc) == "" {
		fmt.Fprintf(r.log, "%s; extending it to train.max_epochs %d and train.max_time %s\n", head, c.MaxEpochs, c.MaxTime)
		return nil
	}
	args, why := extendArgs(c, c, lp, acc)
	if why != "" {
		return fmt.Errorf("%s; %s, so neither -epochs nor -max-time extends it; %s", head, why, rundir.RestartAdvice(dir))
	}
	var reasons []string
	if c.StopAccuracy > 0 && acc >= c.StopAccuracy {
		reasons = append(reasons, fmt.Sprintf("its training accuracy %.4g reached train.stop_accuracy %g (it is solved; train.stop_accuracy=0 trains it on)", acc, c.StopAccuracy))
	}
	if timeSpent(c, lp.Elapsed) {
		reasons = append(reasons, fmt.Sprintf("train.max_time %s is spent", c.MaxTime))
	}
	if epochsSpent(c, lp.Epoch) {
		reasons = append(reasons, fmt.Sprintf("train.max_epochs %d is spent", c.MaxEpochs))
	}
	return fmt.Errorf("%s; %s: to extend it, add `%s` to this command; or %s", head, strings.Join(reasons, ", "), strings.Join(args, " "), rundir.RestartAdvice(dir))
}

func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(time.Second)
}

// misfit is the resume error of a checkpoint that does not fit the model or data the config
// describes (an older checkpoint, which does not carry its config, under an edited config.yaml).
func (r *run) misfit(err error) error {
	dir := r.o.Dir
	return fmt.Errorf("resume %s: %w; the checkpoint does not fit the run that %s (and any -set) describes: undo the change to it, or %s",
		dir, err, filepath.Join(dir, runfiles.ConfigFile), rundir.RestartAdvice(dir))
}
