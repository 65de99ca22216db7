// Package sweep runs the (run, seed) jobs of an experiment grid: locally with a pool of workers
// that invoke the trainer binary (GPU jobs at most one per device at a time), or as a Slurm array
// job (slurm.go). Finished jobs (a valid result.json) are skipped and interrupted ones (a
// checkpoint, no result) are resumed, so a sweep can be started again until everything is done.
package sweep

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/internal/plural"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// Job is one training run of one seed.
type Job struct {
	Name       string      // run name (<out>/<name>/seed<seed>)
	Seed       int64       //
	Config     *config.Run // the resolved run config
	ConfigPath string      // where the resolved config is written for the trainer (shared by the seeds of a run)
	Out        string      // root folder of run directories (the trainer's -out)
	Dir        string      // the run directory, <out>/<name>/seed<seed>
}

func (j Job) String() string { return fmt.Sprintf("%s seed %d", j.Name, j.Seed) }

// Device is the job's configured device: cpu, cuda, emu or auto.
func (j Job) Device() string {
	if j.Config == nil || j.Config.Device == "" {
		return "auto"
	}
	return j.Config.Device
}

// Plan is a grid expanded into jobs.
type Plan struct {
	Grid  string // grid name
	Table string // paper table id the grid reproduces, e.g. table:zinc ("" if none)
	Jobs  []Job
	Notes []config.Note // the grid's footnotes of its runs' cells (config.Grid.Notes)
}

// RunDir is the run directory of a run name and seed under out (train's layout).
func RunDir(out, name string, seed int64) string {
	return filepath.Join(out, name, fmt.Sprintf("seed%d", seed))
}

// NewPlan makes one job per (run, seed). Run names must be unique and usable as folder names;
// every run needs at least one seed. out, when not empty, replaces each run's out folder (the
// root of its run directories). configDir is where the resolved configs will be written
// (<configDir>/<name>.yaml); "" puts them in <out>/.sweep/configs.
func NewPlan(grid, table string, runs []*config.Run, out, configDir string) (*Plan, error) {
	p := &Plan{Grid: grid, Table: table}
	seen := map[string]int{}
	for i, r := range runs {
		name := r.Name
		if name == "" {
			return nil, fmt.Errorf("grid %s: run %d has no name", grid, i)
		}
		if strings.ContainsAny(name, "/\\\t\n") || name == "." || name == ".." || strings.HasPrefix(name, ".") {
			return nil, fmt.Errorf("grid %s: run name %q cannot be a folder name", grid, name)
		}
		if j, dup := seen[name]; dup {
			return nil, fmt.Errorf("grid %s: runs %d and %d are both named %q", grid, j, i, name)
		}
		seen[name] = i
		if len(r.Train.Seeds) == 0 {
			return nil, fmt.Errorf("grid %s: run %s has no train.seeds", grid, name)
		}
		cfg := *r
		if out != "" {
			cfg.Out = out
		}
		if cfg.Out == "" {
			return nil, fmt.Errorf("grid %s: run %s has no out folder (give -out)", grid, name)
		}
		cdir := configDir
		if cdir == "" {
			cdir = filepath.Join(cfg.Out, ".sweep", "configs")
		}
		seeds := map[int64]bool{}
		for _, s := range r.Train.Seeds {
			if seeds[s] {
				return nil, fmt.Errorf("grid %s: run %s lists seed %d twice", grid, name, s)
			}
			seeds[s] = true
			p.Jobs = append(p.Jobs, Job{Name: name, Seed: s, Config: &cfg, Out: cfg.Out,
				ConfigPath: filepath.Join(cdir, name+".yaml"), Dir: RunDir(cfg.Out, name, s)})
		}
	}
	if len(p.Jobs) == 0 {
		return nil, fmt.Errorf("grid %s: no runs", grid)
	}
	return p, nil
}

// State is what a job's run directory says about it.
type State int

const (
	Pending   State = iota // nothing usable: start from scratch
	Resumable              // a checkpoint of the job's config and no final result: resume
	Finished               // a valid result.json of the job's config, of a run that is over (min_lr, max_time, max_epochs)
	Diverged               // the run stopped on a non-finite loss: not rerun, reported as failed
	Mismatch               // the directory holds a run of another config: refused or set aside and rerun (-mismatch)
)

func (s State) String() string {
	return [...]string{"pending", "resumable", "finished", "diverged", "mismatch"}[s]
}

// Inspect reads a job's run directory. A result.json that does not verify, is of another seed or
// says the run was stopped by a signal does not count as finished (note says why); the job is
// then resumed from its checkpoint or started again. A run stopped on a non-finite loss is
// Diverged: rerunning the same seed would diverge again, so the sweep reports it instead (delete
// its result.json to force a rerun).
//
// A finished result counts only if it is the job's run: its config hash and departures equal the
// job's (config.Run.Hash, Departures), and it did not train on the emulated GPU unless the job's
// device is emu. A result without a hash (written before runs recorded
// it) counts when the directory's config.yaml hashes like the job's config. A checkpoint is
// resumed only when config.yaml does. Otherwise the state is Mismatch and note says what
// differs.
func Inspect(j Job) (st State, note string) {
	res, err := runfiles.ReadResult(filepath.Join(j.Dir, runfiles.ResultFile))
	switch {
	case err == nil && res.Seed != j.Seed:
		note = fmt.Sprintf("%s is of seed %d", filepath.Join(j.Dir, runfiles.ResultFile), res.Seed)
	case err == nil && res.Diverged():
		return Diverged, fmt.Sprintf("stopped on a non-finite loss after %s (delete %s to run it again)", plural.Count(res.Epochs, "epoch"), filepath.Join(j.Dir, runfiles.ResultFile))
	case err == nil && !runfiles.Finished(res.StoppedBy):
		note = fmt.Sprintf("the last attempt was stopped by %s", res.StoppedBy)
	case err == nil:
		why, legacy := resultMismatch(j, res)
		if why != "" {
			return Mismatch, why
		}
		if legacy {
			return Finished, "an older result without config_hash; its config.yaml matches the grid's run"
		}
		return Finished, ""
	case !errors.Is(err, fs.ErrNotExist):
		note = err.Error()
	}
	if _, err := os.Stat(filepath.Join(j.Dir, runfiles.CheckpointFile)); err == nil {
		// without config.yaml the trainer cannot resume and says so
		if _, err := os.Stat(filepath.Join(j.Dir, runfiles.ConfigFile)); err != nil {
			return Resumable, note
		}
		if d := configMismatch(j); d != "" {
			return Mismatch, "a checkpoint of another config: " + d
		}
		return Resumable, note
	}
	return Pending, note
}

// TrainArgs are the trainer's arguments for a job: -config <resolved.yaml> -seed S -out OUT, or
// -resume <run dir> to continue from its checkpoint (the trainer then reads the run directory's
// own config.yaml and refuses -config); then a -set for each departure from the protocol
// (config.Run.DepartureSets), since the written config holds the protocol's values
// (WriteConfigs) and the trainer records what departs from it.
func TrainArgs(j Job, resume bool) []string {
	var args []string
	if resume {
		args = []string{"-resume", j.Dir}
	} else {
		args = []string{"-config", j.ConfigPath, "-seed", fmt.Sprint(j.Seed), "-out", j.Out}
	}
	for _, s := range j.Config.DepartureSets() {
		args = append(args, "-set", s)
	}
	return args
}

// ConfigWriter writes a resolved run config where the trainer reads it (config.WriteFile).
type ConfigWriter func(path string, run *config.Run) error

// WriteConfigs writes the resolved config of every run of the jobs once, with the budget keys at
// their protocol values (config.Run.Protocol): TrainArgs passes the departures as -set.
func WriteConfigs(jobs []Job, write ConfigWriter) error {
	if write == nil {
		return errors.New("sweep: no config writer")
	}
	done := map[string]bool{}
	for _, j := range jobs {
		if done[j.ConfigPath] {
			continue
		}
		done[j.ConfigPath] = true
		if err := os.MkdirAll(filepath.Dir(j.ConfigPath), 0o755); err != nil {
			return err
		}
		if err := write(j.ConfigPath, j.Config.Protocol()); err != nil {
			return fmt.Errorf("run %s: writing its config: %w", j.Name, err)
		}
	}
	return nil
}

// ConfigWritten reports whether the job's config file holds what WriteConfigs with WriteConfig
// writes for it: only then does the trainer command line of TrainArgs run the job as the sweep
// would. A missing or unreadable file, or one of another config, is not written.
func ConfigWritten(j Job) bool {
	want, err := j.Config.Protocol().YAML()
	if err != nil {
		return false
	}
	got, err := os.ReadFile(j.ConfigPath)
	return err == nil && bytes.Equal(got, want)
}

// LogFile is the trainer's output inside a run directory (appended to on every attempt).
const LogFile = runfiles.LogFile

// Runner runs jobs locally.
type Runner struct {
	TrainBin    string       // the trainer binary
	Workers     int          // jobs at once (≥ 1)
	GPUs        []string     // device ids for CUDA_VISIBLE_DEVICES; one cuda job per id at a time
	WriteConfig ConfigWriter // writes the resolved configs
	Log         io.Writer    // one line per job start and finish
	Env         []string     // extra environment for the trainer
	// Mismatch is what to do with a job whose directory holds a run of another config:
	// MismatchRefuse ("" too) or MismatchRerun.
	Mismatch string
}

// Failure is a job that did not finish.
type Failure struct {
	Job Job
	Err error
}

// Summary counts what a sweep did.
type Summary struct {
	Total, Skipped, Started, Resumed, Succeeded int
	SetAside                                    int // run directories of another config moved aside (-mismatch rerun)
	Failed                                      []Failure
}

func (s Summary) String() string {
	str := fmt.Sprintf("%s: %d already finished, %d run (%d resumed): %d finished, %d failed",
		plural.Count(s.Total, "job"), s.Skipped, s.Started, s.Resumed, s.Succeeded, len(s.Failed))
	if s.SetAside > 0 {
		str += fmt.Sprintf("; %s of another config set aside", plural.Count(s.SetAside, "run directory"))
	}
	return str
}

// usesGPU reports whether a job needs a GPU slot: device cuda always, auto when the runner has GPUs.
func (r *Runner) usesGPU(j Job) bool {
	d := j.Device()
	return d == "cuda" || (d == "auto" && len(r.GPUs) > 0)
}

// Run runs every job that is not finished. It returns when all have ended or ctx is cancelled
// (running trainers get an interrupt and a grace period); the summary lists the failed jobs.
func (r *Runner) Run(ctx context.Context, jobs []Job) (Summary, error) {
	if r.Workers < 1 {
		return Summary{}, fmt.Errorf("sweep: workers %d, want ≥ 1", r.Workers)
	}
	if r.Mismatch != "" {
		if err := CheckMismatch(r.Mismatch); err != nil {
			return Summary{}, fmt.Errorf("sweep: %w", err)
		}
	}
	if r.Log == nil {
		r.Log = io.Discard
	}
	sum := Summary{Total: len(jobs)}
	type item struct {
		job    Job
		resume bool
		idx    int
	}
	var todo []item
	for i, j := range jobs {
		st, note := Inspect(j)
		if note != "" {
			r.logf("[%d/%d] %s: %s", i+1, len(jobs), j, note)
		}
		if st == Finished {
			sum.Skipped++
			r.logf("[%d/%d] skip %s: %s exists", i+1, len(jobs), j, filepath.Join(j.Dir, runfiles.ResultFile))
			continue
		}
		if st == Diverged {
			sum.Failed = append(sum.Failed, Failure{j, errors.New(note)})
			continue
		}
		if st == Mismatch {
			dst, err := Settle(j, note, r.Mismatch, time.Now())
			if err != nil {
				sum.Failed = append(sum.Failed, Failure{j, err})
				continue
			}
			sum.SetAside++
			r.logf("[%d/%d] %s: set aside %s → %s (%s)", i+1, len(jobs), j, j.Dir, dst, note)
			st = Pending
		}
		todo = append(todo, item{j, st == Resumable, i + 1})
	}
	if len(todo) == 0 {
		return sum, nil
	}
	var pend []Job
	for _, it := range todo {
		pend = append(pend, it.job)
	}
	if err := WriteConfigs(pend, r.WriteConfig); err != nil {
		return sum, err
	}

	// A dispatcher hands each free worker the first pending job it can start now: CPU jobs
	// always, GPU jobs while a device is free.
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	free := append([]string(nil), r.GPUs...)
	if len(free) == 0 {
		free = []string{""} // cuda jobs without known devices: one at a time on the default device
	}
	next := func() (item, string, bool) {
		mu.Lock()
		defer mu.Unlock()
		for {
			if len(todo) == 0 || ctx.Err() != nil {
				return item{}, "", false
			}
			for i, it := range todo {
				if !r.usesGPU(it.job) {
					todo = append(todo[:i], todo[i+1:]...)
					return it, "", true
				}
				if len(free) > 0 {
					gpu := free[0]
					free = free[1:]
					todo = append(todo[:i], todo[i+1:]...)
					return it, gpu, true
				}
			}
			cond.Wait()
		}
	}
	release := func(gpu string, gpuJob bool) {
		mu.Lock()
		if gpuJob {
			free = append(free, gpu)
		}
		mu.Unlock()
		cond.Broadcast()
	}
	stop := context.AfterFunc(ctx, func() { cond.Broadcast() })
	defer stop()

	var wg sync.WaitGroup
	var smu sync.Mutex
	for w := 0; w < r.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				it, gpu, ok := next()
				if !ok {
					return
				}
				gpuJob := r.usesGPU(it.job)
				err := r.runOne(ctx, it.job, it.resume, gpu, gpuJob, fmt.Sprintf("[%d/%d]", it.idx, len(jobs)))
				release(gpu, gpuJob)
				smu.Lock()
				sum.Started++
				if it.resume {
					sum.Resumed++
				}
				if err != nil {
					sum.Failed = append(sum.Failed, Failure{it.job, err})
				} else {
					sum.Succeeded++
				}
				smu.Unlock()
			}
		}()
	}
	wg.Wait()
	// jobs never started because of cancellation are failures too
	for _, it := range todo {
		sum.Failed = append(sum.Failed, Failure{it.job, errors.New("not started: sweep interrupted")})
	}
	sort.Slice(sum.Failed, func(i, k int) bool {
		a, b := sum.Failed[i].Job, sum.Failed[k].Job
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Seed < b.Seed
	})
	return sum, ctx.Err()
}

func (r *Runner) logf(format string, a ...any) {
	fmt.Fprintf(r.Log, "%s %s\n", time.Now().Format("2006-01-02 15:04:05"), fmt.Sprintf(format, a...))
}

func (r *Runner) runOne(ctx context.Context, j Job, resume bool, gpu string, gpuJob bool, tag string) error {
	if err := os.MkdirAll(j.Dir, 0o755); err != nil {
		r.logf("%s FAILED %s: %v", tag, j, err)
		return err
	}
	logPath := filepath.Join(j.Dir, LogFile)
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, runfiles.FilePerm)
	if err != nil {
		r.logf("%s FAILED %s: %v", tag, j, err)
		return err
	}
	defer lf.Close()
	args := TrainArgs(j, resume)
	fmt.Fprintf(lf, "==== %s %s %s\n", time.Now().Format(time.RFC3339), r.TrainBin, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, r.TrainBin, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Env = append(os.Environ(), r.Env...)
	where := "cpu"
	if gpuJob {
		where = "gpu"
		if gpu != "" {
			cmd.Env = append(cmd.Env, "CUDA_VISIBLE_DEVICES="+gpu)
			where = "gpu " + gpu
		}
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 2 * time.Minute
	how := "start"
	if resume {
		how = "resume"
	}
	r.logf("%s %s %s (%s) → %s", tag, how, j, where, j.Dir)
	t0 := time.Now()
	err = cmd.Run()
	took := time.Since(t0).Round(100 * time.Millisecond)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			switch ee.ExitCode() {
			case 3:
				err = fmt.Errorf("trainer interrupted (exit 3; resumable): %w", err)
			case 4:
				err = fmt.Errorf("trainer stopped on a non-finite loss (exit 4): %w", err)
			}
		}
		err = fmt.Errorf("%w after %s (log %s: %s)", err, took, logPath, lastLine(logPath))
		r.logf("%s FAILED %s: %v", tag, j, err)
		return err
	}
	res, err := runfiles.ReadResult(filepath.Join(j.Dir, runfiles.ResultFile))
	if err == nil && res.Seed != j.Seed {
		err = fmt.Errorf("result.json is of seed %d", res.Seed)
	}
	if err != nil {
		err = fmt.Errorf("trainer exited 0 after %s but: %w (log %s)", took, err, logPath)
		r.logf("%s FAILED %s: %v", tag, j, err)
		return err
	}
	r.logf("%s done %s in %s: test %s %.4f, %d epochs, stopped by %s", tag, j, took, res.Metric, res.TestMetric, res.Epochs, res.StoppedBy)
	return nil
}

// lastLine returns the last non-empty line of a file (for failure messages).
func lastLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var last string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		if s := strings.TrimSpace(sc.Text()); s != "" {
			last = s
		}
	}
	if len(last) > 300 {
		last = last[:300] + "…"
	}
	return last
}
