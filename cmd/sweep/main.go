// Command sweep runs every (run, seed) of an experiment grid: locally with a pool of workers that
// invoke the trainer, or as a Slurm array job.
//
//	sweep -grid configs/grids/zinc.yaml [-set key=value …] [-out runs] [-workers N] [-gpus 0,1]
//	      [-train-bin PATH] [-mismatch refuse|rerun] [-dry-run [-write-configs]]
//	sweep -grid configs/grids/zinc.yaml -slurm DIR [-partition P] [-account A] [-cpus 4] [-mem 16G]
//	      [-gres auto|none|SPEC] [-time D] [-time-margin 30m] [-max-parallel N] [-submit]
//
// Finished runs (a valid result.json) are skipped and interrupted ones (checkpoint.bin, no result)
// resumed with -resume, so the same command can be repeated until everything is done. Each job's
// trainer output goes to <run dir>/train.log; the sweep logs one line per job start and finish and
// exits 1 listing the failed jobs. -dry-run writes nothing: a trainer command line whose run
// config is not written shows <config not written> in its place; -write-configs writes them.
//
// A finished run counts only if its config hash and departures from the protocol (result.json)
// match the grid's run; a -set on a budget key (dataset.subset, train.max_epochs,
// train.max_time, device) is passed to the trainer as -set, so its runs record the departure. A
// run directory of another config is refused (-mismatch refuse, the default: the job fails,
// naming the keys that differ) or moved to <out>/<name>/.superseded/seed<S>-<time> and trained
// again (-mismatch rerun).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/internal/plural"
	"github.com/rewiregnn/rewiregnn/sweep"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// usageError is a bad command line (exit status 2).
type usageError struct{ error }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := sweepMain(ctx, args, stdout, stderr)
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "sweep:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "sweep:", err)
		return 1
	}
}

func sweepMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sets config.Sets
	grid := fs.String("grid", "", "grid config (configs/grids/*.yaml); required")
	fs.Var(&sets, "set", "key=value override applied to every run of the grid (repeatable)")
	out := fs.String("out", "", "root folder of the run directories (<out>/<run name>/seed<seed>; default: the grid's out, e.g. runs/zinc-reduced, else runs)")
	workers := fs.Int("workers", 1, "local jobs at once")
	gpus := fs.String("gpus", "", "GPU ids for CUDA_VISIBLE_DEVICES, one cuda job per id at a time (default: $CUDA_VISIBLE_DEVICES, else the /dev/nvidiaN found)")
	trainBin := fs.String("train-bin", "", "trainer binary (default: go build ./cmd/train into the sweep's folder)")
	dry := fs.Bool("dry-run", false, "print the jobs, their state and trainer command lines; run nothing and write nothing (a line whose run config is not written shows "+unwrittenConfig+" in its place: add -write-configs)")
	writeConfigs := fs.Bool("write-configs", false, "with -dry-run: also write the resolved config each trainer command line names (<out>/.sweep/configs/<run>.yaml), so that the lines can be run elsewhere (scripts/campaign.sh bundles them)")
	mismatch := fs.String("mismatch", sweep.MismatchRefuse, "a run directory holding a run of another config (config hash or departures differ): refuse (report the job as failed) or rerun (move it to <out>/<name>/.superseded/ and train the job again)")
	slurmDir := fs.String("slurm", "", "write a Slurm array job (script, run list, configs) into this folder instead of running locally")
	partition := fs.String("partition", "", "Slurm partition")
	account := fs.String("account", "", "Slurm account")
	cpus := fs.Int("cpus", 4, "Slurm --cpus-per-task")
	mem := fs.String("mem", "16G", "Slurm --mem")
	gres := fs.String("gres", "auto", "Slurm --gres: auto (gpu:1 when a run's device is cuda or auto), none, or a gres such as gpu:a100:1")
	limit := fs.Duration("time", 0, "Slurm --time (default: the largest train.max_time plus -time-margin)")
	margin := fs.Duration("time-margin", sweep.DefaultMargin, "added to max_time in the Slurm time limit (preprocessing, last-epoch overrun, final evaluation)")
	maxPar := fs.Int("max-parallel", 0, "Slurm array tasks at once (0: no limit)")
	jobName := fs.String("job-name", "", "Slurm job name (default: the grid's name)")
	submit := fs.Bool("submit", false, "run sbatch on the written script and print the job id")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: sweep -grid FILE [-set key=value …] [-out runs] [-workers N] [-train-bin PATH] [-dry-run]")
		fmt.Fprintln(stderr, "       sweep -grid FILE -slurm DIR [-partition P] [-account A] [-submit] …")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q (flags only)", fs.Arg(0))}
	}
	if *grid == "" {
		return usageError{errors.New("-grid is required")}
	}
	if *workers < 1 {
		return usageError{fmt.Errorf("-workers %d: want ≥ 1", *workers)}
	}
	if err := sweep.CheckMismatch(*mismatch); err != nil {
		return usageError{err}
	}
	if *submit && *slurmDir == "" {
		return usageError{errors.New("-submit needs -slurm DIR")}
	}
	if *writeConfigs && !*dry {
		return usageError{errors.New("-write-configs needs -dry-run")}
	}
	local := *slurmDir == ""
	configDir := "" // <the run's out>/.sweep/configs
	if *out != "" {
		configDir = filepath.Join(*out, ".sweep", "configs")
	}
	if !local {
		configDir = filepath.Join(*slurmDir, sweep.SlurmConfigs)
	}
	plan, err := sweep.LoadPlan(*grid, sets, *out, configDir)
	if err != nil {
		return err
	}

	if *dry {
		if *writeConfigs {
			if err := sweep.WriteConfigs(plan.Jobs, sweep.WriteConfig); err != nil {
				return err
			}
		}
		return dryRun(stdout, plan, *mismatch)
	}
	root := *out
	if root == "" && len(plan.Jobs) > 0 {
		root = plan.Jobs[0].Out // the grid's out
	}
	bin := *trainBin
	if bin == "" {
		dir := filepath.Join(root, ".sweep", "bin")
		if !local {
			dir = filepath.Join(*slurmDir, "bin")
		}
		if bin, err = buildTrainer(dir, stderr); err != nil {
			return err
		}
	} else if err := checkExecutable(bin); err != nil {
		return usageError{fmt.Errorf("-train-bin: %w", err)}
	}

	if !local {
		sl := sweep.Slurm{Dir: *slurmDir, TrainBin: bin, Partition: *partition, Account: *account, CPUs: *cpus,
			Mem: *mem, GPU: *gres, Time: *limit, Margin: *margin, MaxParallel: *maxPar, JobName: *jobName, Mismatch: *mismatch}
		script, n, err := sweep.WriteSlurm(plan, sl, sweep.WriteConfig)
		if err != nil {
			return err
		}
		if n == 0 {
			fmt.Fprintf(stdout, "grid %s: %s, all finished; nothing to submit\n", plan.Grid, plural.Count(len(plan.Jobs), "job"))
			return nil
		}
		fmt.Fprintf(stdout, "wrote %s (%s of %s; run list %s)\n", script, plural.Count(n, "task"), plural.Count(len(plan.Jobs), "job"), filepath.Join(*slurmDir, sweep.SlurmList))
		if !*submit {
			fmt.Fprintf(stdout, "submit with: sbatch %s\n", script)
			return nil
		}
		id, err := sweep.Submit("sbatch", script, nil)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "submitted array job %s\n", id)
		return nil
	}

	ids, err := gpuIDs(*gpus)
	if err != nil {
		return usageError{err}
	}
	r := &sweep.Runner{TrainBin: bin, Workers: *workers, GPUs: ids, WriteConfig: sweep.WriteConfig, Log: stdout, Mismatch: *mismatch}
	fmt.Fprintf(stdout, "sweep: grid %s, %s, %s, GPUs [%s], trainer %s, runs under %s\n",
		plan.Grid, plural.Count(len(plan.Jobs), "job"), plural.Count(*workers, "worker"), strings.Join(ids, ","), bin, root)
	sum, err := r.Run(ctx, plan.Jobs)
	fmt.Fprintf(stdout, "sweep: %s\n", sum)
	// TensorBoard's hparams view is a convenience: a failure to write it is reported, not fatal.
	if terr := sweep.WriteExperiment(root, plan.Grid, plan.Jobs, time.Now()); terr != nil {
		fmt.Fprintf(stdout, "sweep: %v\n", terr)
	}
	if len(sum.Failed) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "%s:", plural.Count(len(sum.Failed), "failed job"))
		for _, f := range sum.Failed {
			fmt.Fprintf(&b, "\n  %s: %v", f.Job, f.Err)
		}
		if err != nil {
			return fmt.Errorf("%w; %s", err, b.String())
		}
		return errors.New(b.String())
	}
	return err
}

// unwrittenConfig stands in a dry run's trainer command line for a run config that is not
// written, or not current (-dry-run alone writes no files), so that no line names a file the
// trainer would not find.
const unwrittenConfig = "<config not written>"

// dryRun prints the jobs, their state and their trainer command lines. A line whose config is
// not written shows unwrittenConfig instead, and a note before the jobs says how to get
// runnable lines.
func dryRun(w io.Writer, plan *sweep.Plan, mismatch string) error {
	fmt.Fprintf(w, "grid %s (%s): %s\n", plan.Grid, plan.Table, plural.Count(len(plan.Jobs), "job"))
	counts := map[sweep.State]int{}
	var jobs strings.Builder
	unwritten, configDir := 0, ""
	for i, j := range plan.Jobs {
		st, note := sweep.Inspect(j)
		counts[st]++
		line := fmt.Sprintf("[%d/%d] %-9s %s device=%s → %s", i+1, len(plan.Jobs), st, j, j.Device(), j.Dir)
		train := func(resume bool) string {
			if !resume && !sweep.ConfigWritten(j) {
				unwritten++
				configDir = filepath.Dir(j.ConfigPath)
				j.ConfigPath = unwrittenConfig
			}
			return "\n      train " + strings.Join(sweep.TrainArgs(j, resume), " ")
		}
		switch {
		case st == sweep.Mismatch && mismatch == sweep.MismatchRerun:
			line += fmt.Sprintf("\n      set aside into %s, then", filepath.Join(filepath.Dir(j.Dir), sweep.SupersededDir))
			line += train(false)
		case st == sweep.Mismatch:
			line += fmt.Sprintf("\n      refused (pass -mismatch %s to set it aside and train it again)", sweep.MismatchRerun)
		case st != sweep.Finished && st != sweep.Diverged:
			line += train(st == sweep.Resumable)
		}
		if note != "" {
			line += "\n      note: " + note
		}
		fmt.Fprintln(&jobs, line)
	}
	if unwritten > 0 {
		fmt.Fprintf(w, "note: -dry-run writes no files, so %d trainer command lines show %s where their run config goes; "+
			"add -write-configs to this command to write the configs into %s and print runnable lines, or run the sweep without -dry-run\n",
			unwritten, unwrittenConfig, configDir)
	}
	io.WriteString(w, jobs.String())
	fmt.Fprintf(w, "%d finished, %d resumable, %d pending, %d of another config (mismatch: %s), %d diverged\n",
		counts[sweep.Finished], counts[sweep.Resumable], counts[sweep.Pending], counts[sweep.Mismatch], mismatch, counts[sweep.Diverged])
	return nil
}

// buildTrainer builds ./cmd/train of the current module into dir.
func buildTrainer(dir string, log io.Writer) (string, error) {
	abs, err := filepath.Abs(filepath.Join(dir, "train"))
	if err != nil {
		return "", err
	}
	fmt.Fprintf(log, "sweep: building the trainer: go build -o %s ./cmd/train\n", abs)
	cmd := exec.Command("go", "build", "-o", abs, "./cmd/train")
	b, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building the trainer (go build ./cmd/train, run from the repository root, or pass -train-bin): %v\n%s", err, b)
	}
	return abs, nil
}

func checkExecutable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}

var gpuIDRe = regexp.MustCompile(`^[A-Za-z0-9\-]+$`)

// gpuIDs parses -gpus, or finds the GPUs: $CUDA_VISIBLE_DEVICES, else /dev/nvidia0, 1, ….
func gpuIDs(flagVal string) ([]string, error) {
	src, v := "-gpus", flagVal
	if v == "" {
		src, v = "CUDA_VISIBLE_DEVICES", os.Getenv("CUDA_VISIBLE_DEVICES")
	}
	if v == "" {
		var ids []int
		devs, _ := filepath.Glob("/dev/nvidia[0-9]*")
		for _, d := range devs {
			if n, err := strconv.Atoi(strings.TrimPrefix(d, "/dev/nvidia")); err == nil {
				ids = append(ids, n)
			}
		}
		sort.Ints(ids)
		var out []string
		for _, n := range ids {
			out = append(out, strconv.Itoa(n))
		}
		return out, nil
	}
	if v == "none" {
		return nil, nil
	}
	var out []string
	for _, id := range strings.Split(v, ",") {
		id = strings.TrimSpace(id)
		if !gpuIDRe.MatchString(id) {
			return nil, fmt.Errorf("%s %q: %q is not a GPU id", src, v, id)
		}
		out = append(out, id)
	}
	return out, nil
}
