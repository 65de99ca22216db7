// Command train runs the benchmark protocol for one config: every seed of train.seeds in turn
// (or only -seed), each into <out>/<run name>/seed<seed>/ with config.yaml, metrics.jsonl,
// result.json and checkpoint.bin.
//
//	train -config configs/zinc/gatedgcn-adj-cls-r4.yaml [-set key=value …] [-seed N]
//	train -set dataset.name=neighborsmatch-2 -epochs 30
//	train -resume runs/zinc-gatedgcn-adj-cls-r4/seed41
//	train -resume runs/zinc-gatedgcn-adj-cls-r4/seed41 -epochs 500    # extend a finished run
//	train -resume runs/zinc-gatedgcn-adj-cls-r4/seed41 -restart       # start it again from scratch
//
// SIGINT or SIGTERM checkpoints the position inside the epoch and exits with status 3; -resume
// continues exactly where the run stopped. A finished run (stopped by max_epochs or max_time)
// continues with -resume and a larger -epochs or -max-time; a solved one (train_accuracy) with
// -resume DIR -set train.stop_accuracy=0. A resumed run may change only train.max_epochs,
// train.max_time and train.stop_accuracy: a config that differs from its checkpoint's in another
// key is refused by name. Every refusal names the command that gets out of it, in backquotes.
// -restart moves every file of a run directory but its lock into DIR/.old-<UTC time>/ and starts
// it afresh: with -config for each seed's directory, with -resume DIR for that directory (its own
// config.yaml; the seed from -seed or the directory's name seed<N>). One trainer at a time holds a run directory (DIR/lock); a second
// fails at once, naming the first one's PID.
//
// Before training on the CPU, the memory guard estimates the run's memory and stops it at once
// (status 1) if it exceeds the budget: the cgroup limit or MemAvailable, or -memory SIZE (e.g.
// -memory 16GiB); the message names the largest train.batch_size that fits. -no-memory-guard
// skips the check. -plan trains nothing: it prints the run's planned memory on the CPU (with and
// without model.recompute) and on the GPU, and the largest batch size that fits -budget SIZE.
//
//	train -config configs/cluster/gatedgcn-lp-r3.yaml -set train.batch_size=48 -plan -budget 16GiB
//
// -device picks where to train: cpu (the default), cuda (GPU 0), auto (a working GPU, else the
// CPU) or emu, the emulated GPU: the GPU path with the CUDA kernels compiled as C++ by the
// system's compiler and run on CPU threads, slow, for checking that path without a GPU; its
// runs record the device and the tables leave them out as reduced.
//
//	train -set dataset.name=zinc -subset 256 -epochs 2 -device emu
//
// -parallel K trains up to K seeds of train.seeds at once in this process, each in its own
// goroutine with its own trainer and run directory; on cuda, emu or auto each run opens its own
// device, so on one GPU the runs are K streams of one CUDA context (whose kernels can overlap)
// instead of K processes' contexts taking turns. Each run writes the files, and gives the
// results, it gives alone: on the CPU the same bits, as the runs share the cores (GOMAXPROCS,
// not split between them) and the kernels' sums are fixed by the data's shape, never by the
// threads. Log lines start with "seed N: " and no progress bar is drawn. The memory guard reads
// the budget once and gives each run 1/K of it; a run that does not fit is refused with the
// -parallel that does. A failed run does not stop the others; the command ends with one line
// naming every seed that did not finish and exits with 1 if a run failed, else 4 if one stopped
// on a non-finite loss, else 3 if interrupted (SIGINT or SIGTERM checkpoints every running run;
// seeds not started yet are named, to train with -seed N), else 0. -parallel above 1 is refused
// with -seed or -resume (one run) and with -plan or -predict (none).
//
//	train -config configs/zinc/gatedgcn-adj-cls-r4.yaml -device cuda -parallel 4
//
// dataset.r: auto picks r by the paper's density rule before the run is named. -predict DIR
// trains nothing either: it predicts the test split with DIR's checkpoint and writes
// DIR/predictions.bin, which tables -homophily reads.
//
//	train -predict runs/cluster-gatedgcn-adj-r1/seed41
//
// -rebuild-tb DIR trains nothing: it writes the run directory's TensorBoard folder DIR/tb anew
// from its metrics.jsonl and result.json, for a run that is over whose folder lacks epochs (a
// session that could not write it says so in its log) or holds a torn file; the old folder is
// moved into DIR/.old-<UTC time>/. (An unfinished run's gaps are filled by its -resume.)
//
//	train -rebuild-tb runs/neighborsmatch-2-gatedgcn-adj-r2/seed41
//
// -cpuprofile FILE writes a CPU profile of the whole command (preprocessing, training and
// evaluation; an interrupted run's too) to FILE, which must not exist yet:
//
//	train -config configs/neighborsmatch-6/gatedgcn-adj-r4.yaml -epochs 2 -subset 2560 -cpuprofile nm6.pprof
//	go tool pprof -top nm6.pprof
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/internal/memlimit"
	"github.com/rewiregnn/rewiregnn/internal/plural"
	"github.com/rewiregnn/rewiregnn/rundir"
	"github.com/rewiregnn/rewiregnn/runfiles"
	"github.com/rewiregnn/rewiregnn/train"
)

// Exit statuses besides 0 (finished) and 1 (error).
const (
	exitUsage  = 2
	exitSignal = 3 // interrupted; resumable
	exitNaN    = 4 // stopped on a non-finite loss
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) (code int) {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	var overrides config.Sets
	cfgPath := fs.String("config", "", "run config (YAML); optional when -set names dataset.name")
	fs.Var(&overrides, "set", "override a config key, key=value (repeatable), e.g. -set train.batch_size=64")
	seed := fs.Int64("seed", 0, "run only this seed (default: every seed of train.seeds)")
	device := fs.String("device", "", "cpu, cuda, emu or auto (overrides the config's device); emu trains on the emulated GPU, the CUDA kernels compiled as C++ and run on CPU threads (needs g++ or clang++; slow: for checking the GPU path without a GPU); auto takes a working GPU, else the CPU, never emu")
	out := fs.String("out", "", "root folder of run directories (overrides the config's out)")
	dataDir := fs.String("data", "", "benchmark data folder (overrides dataset.dir)")
	cacheDir := fs.String("cache", "", "preprocessing cache folder, auto (default: <user cache dir>/rewiregnn/prep) or off (overrides dataset.cache)")
	resume := fs.String("resume", "", "continue the run in this run directory (a finished one with a larger -epochs or -max-time, a solved one with -set train.stop_accuracy=0)")
	restart := fs.Bool("restart", false, "move the run directory's files into DIR/.old-<UTC time>/ and start afresh (with -config, or with -resume DIR)")
	maxTime := fs.Duration("max-time", 0, "wall-clock cap per seed, e.g. 10m, more than 0 (overrides train.max_time)")
	ckEvery := fs.Duration("checkpoint-every", train.DefaultCheckpointEvery, "besides the checkpoint after every epoch, write one inside an epoch once this long has passed since the last, so that a run killed without a signal (its machine stopped) loses at most this much; 0: after every epoch only (results are the same either way)")
	epochs := fs.Int("epochs", 0, "at most this many epochs, at least 1 (overrides train.max_epochs)")
	workers := fs.Int("workers", 0, "preprocessing workers (default: all cores)")
	evalBatch := fs.Int("eval-batch", train.DefaultEvalBatch, "on the GPU, evaluate up to this many graphs in one batch (rounded down to whole batches of train.batch_size, fewer where device memory is short; below two batches: batch by batch); the metrics are still formed per batch of train.batch_size, and the CPU always evaluates batch by batch")
	subset := fs.Int("subset", 0, "use only the first N graphs of each split, N at least 1 (quick runs; sets dataset.subset)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	memory := fs.String("memory", "", "memory budget of the memory guard, e.g. 16GiB (default: the cgroup limit or MemAvailable, whichever is smaller)")
	noGuard := fs.Bool("no-memory-guard", false, "skip the memory guard (a run larger than memory is then killed by the kernel)")
	plan := fs.Bool("plan", false, "do not train: print the run's planned memory on the CPU (with and without model.recompute) and the GPU, and the largest batch size that fits -budget")
	predict := fs.String("predict", "", "do not train: predict the test split with the run directory's checkpoint and write DIR/predictions.bin (what tables -homophily reads)")
	rebuildTB := fs.String("rebuild-tb", "", "do not train: write the run directory's TensorBoard folder DIR/tb anew from its metrics.jsonl and result.json (a run that is over; the old folder goes to DIR/.old-<UTC time>/)")
	budget := fs.String("budget", "", "with -plan: the memory to fit, e.g. 16GiB (default: what this machine makes available)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole command to this new file (read it with go tool pprof)")
	parallel := fs.Int("parallel", 1, "train up to K seeds of train.seeds at once in this process, each with its own trainer, run directory and (on a GPU) its own stream; the memory guard gives each run 1/K of the budget, and the CPU runs share the cores (results unchanged); log lines start with the seed; 1 trains the seeds one after another")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "train: unexpected argument %q (flags only; see -h)\n", fs.Arg(0))
		return exitUsage
	}
	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "train: %v\n", err)
			return exitUsage
		}
		defer func() {
			if err := stopProfile(); err != nil {
				fmt.Fprintf(os.Stderr, "train: %v\n", err)
				if code == 0 {
					code = 1
				}
			}
		}()
	}
	for flagName, s := range map[string]string{"dataset.dir": *dataDir, "dataset.cache": *cacheDir, "device": *device, "out": *out} {
		if s != "" {
			overrides.Add(flagName, s)
		}
	}
	if err := checkPositive(fs, "epochs", "subset", "max-time"); err != nil {
		fmt.Fprintf(os.Stderr, "train: %v\n", err)
		return exitUsage
	}
	if err := checkParallel(fs, *parallel); err != nil {
		fmt.Fprintf(os.Stderr, "train: %v\n", err)
		return exitUsage
	}
	if *evalBatch < 1 {
		fmt.Fprintf(os.Stderr, "train: -eval-batch %d: want 1 or more graphs (up to one batch of train.batch_size evaluates batch by batch)\n", *evalBatch)
		return exitUsage
	}
	if *ckEvery < 0 {
		fmt.Fprintf(os.Stderr, "train: -checkpoint-every %v: want 0 (after every epoch only) or more\n", *ckEvery)
		return exitUsage
	}
	if flagSet(fs, "max-time") {
		overrides.Add("train.max_time", maxTime.String())
	}
	if flagSet(fs, "subset") {
		overrides.Add("dataset.subset", strconv.Itoa(*subset))
	}
	if flagSet(fs, "epochs") {
		overrides.Add("train.max_epochs", strconv.Itoa(*epochs))
	}
	opt := train.Options{Log: os.Stderr, Progress: !*quiet && isTerminal(os.Stderr), Workers: *workers, NoMemoryGuard: *noGuard, Restart: *restart, EvalBatch: *evalBatch,
		CheckpointEvery: *ckEvery}
	if *ckEvery == 0 {
		opt.CheckpointEvery = -1 // Options: negative is after every epoch only
	}
	if *memory != "" {
		b, err := memlimit.ParseSize(*memory)
		if err != nil {
			fmt.Fprintf(os.Stderr, "train: -memory: %v\n", err)
			return exitUsage
		}
		opt.Memory = b
	}
	if *budget != "" && !*plan {
		fmt.Fprintln(os.Stderr, "train: -budget goes with -plan; a training run's budget is -memory SIZE")
		return exitUsage
	}
	if *plan {
		return planRun(*cfgPath, overrides, opt, *budget)
	}
	if *predict != "" {
		if *cfgPath != "" || len(overrides) > 0 {
			fmt.Fprintln(os.Stderr, "train: -predict reads the run directory's own config.yaml and checkpoint; drop -config and -set")
			return exitUsage
		}
		path, err := train.WritePredictions(*predict, *workers, os.Stderr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "train: -predict: %v\n", err)
			return 1
		}
		fmt.Println("wrote", path)
		return 0
	}
	if *rebuildTB != "" {
		return rebuildBoard(fs, *rebuildTB)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *resume != "" {
		if *cfgPath != "" {
			fmt.Fprintln(os.Stderr, "train: -resume uses the run directory's config.yaml; drop -config (-epochs, -max-time and -set train.stop_accuracy=… change what a resumed run may change)")
			return exitUsage
		}
		var seedFlag *int64
		if flagSet(fs, "seed") {
			seedFlag = seed
		}
		return resumeRun(ctx, opt, *resume, overrides, seedFlag)
	}
	if *cfgPath == "" && len(overrides) == 0 {
		fmt.Fprintln(os.Stderr, "train: give -config FILE or at least -set dataset.name=NAME (see -h)")
		return exitUsage
	}
	cfg, err := config.Load(*cfgPath, overrides)
	if err != nil {
		fmt.Fprintf(os.Stderr, "train: %v\n", err)
		return 1
	}
	if err := train.ResolveRadius(cfg, os.Stderr, *workers); err != nil {
		fmt.Fprintf(os.Stderr, "train: %v\n", err)
		return 1
	}
	seeds := cfg.Train.Seeds
	if *seed != 0 || flagSet(fs, "seed") {
		seeds = []int64{*seed}
	}
	if k := min(*parallel, len(seeds)); k > 1 {
		// Each run gets a config of its own (train.Train resolves it in place), with the
		// radius resolved above.
		r := cfg.Dataset.R
		load := func() (*config.Run, error) {
			c, err := config.Load(*cfgPath, overrides)
			if err == nil {
				c.Dataset.R = r
			}
			return c, err
		}
		return runParallel(ctx, opt, load, seeds, k, *parallel)
	}
	for _, s := range seeds {
		opt.Run, opt.Seed, opt.Dir = cfg, s, cfg.Dir(s)
		if code := one(ctx, opt); code != 0 {
			return code
		}
	}
	return 0
}

// checkParallel refuses a -parallel below 1, and one above 1 where there is a single run to
// train (-seed, -resume) or none (-plan, -predict).
func checkParallel(fs *flag.FlagSet, k int) error {
	if k < 1 {
		return fmt.Errorf("-parallel %d: want 1 or more (1, the default, trains the seeds one after another)", k)
	}
	if k == 1 {
		return nil
	}
	for _, name := range []string{"seed", "resume", "plan", "predict"} {
		if flagSet(fs, name) {
			return fmt.Errorf("-parallel %d trains several seeds of train.seeds at once; -%s gives it none or one: drop -parallel, or -%s", k, name, name)
		}
	}
	return nil
}

// planRun prints the memory plan of a config (train -plan).
func planRun(cfgPath string, overrides config.Sets, opt train.Options, budget string) int {
	var b int64
	if budget != "" {
		var err error
		if b, err = memlimit.ParseSize(budget); err != nil {
			fmt.Fprintf(os.Stderr, "train: -budget: %v\n", err)
			return exitUsage
		}
	}
	if cfgPath == "" && len(overrides) == 0 {
		fmt.Fprintln(os.Stderr, "train: -plan needs -config FILE or -set dataset.name=NAME")
		return exitUsage
	}
	cfg, err := config.Load(cfgPath, overrides)
	if err != nil {
		fmt.Fprintf(os.Stderr, "train: %v\n", err)
		return 1
	}
	opt.Run, opt.Seed = cfg, cfg.Train.Seeds[0]
	pl, err := train.PlanMemory(opt, b)
	if err != nil {
		fmt.Fprintf(os.Stderr, "train: -plan: %v\n", err)
		return 1
	}
	pl.Report(os.Stdout)
	return 0
}

// resumeRun continues the run in dir (or, with opt.Restart, starts it afresh) with its own
// resolved config plus any -set overrides (e.g. a longer train.max_time). It locks dir before
// reading anything in it. seed is -seed when given.
func resumeRun(ctx context.Context, opt train.Options, dir string, overrides config.Sets, seed *int64) int {
	if st, err := os.Stat(dir); err != nil {
		fmt.Fprintf(os.Stderr, "train: -resume %s: %v\n", dir, err)
		return 1
	} else if !st.IsDir() {
		fmt.Fprintf(os.Stderr, "train: -resume %s: not a run directory but a file\n", dir)
		return 1
	}
	lock, err := rundir.LockDir(dir, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "train: %v\n", err)
		return 1
	}
	defer func() {
		if err := lock.Release(); err != nil {
			fmt.Fprintf(os.Stderr, "train: %v\n", err)
		}
	}()
	cfg, err := config.Load(filepath.Join(dir, runfiles.ConfigFile), overrides)
	if err != nil {
		fmt.Fprintf(os.Stderr, "train: -resume %s: %v; fix %s, or start the run afresh from a config file of its setting: %s\n",
			dir, err, filepath.Join(dir, runfiles.ConfigFile), freshCommand(dir))
		return 1
	}
	s, err := runSeed(dir, opt.Restart, seed)
	if err != nil {
		fmt.Fprintf(os.Stderr, "train: %v\n", err)
		return 1
	}
	opt.Run, opt.Seed, opt.Dir, opt.Resume, opt.Lock = cfg, s, dir, !opt.Restart, lock
	return one(ctx, opt)
}

// runSeed is the seed of the run in dir: -seed when given, else the checkpoint's to resume, or
// for a restart (whose checkpoint may be unreadable) the directory's name seed<N>.
func runSeed(dir string, restart bool, seed *int64) (int64, error) {
	if seed != nil {
		return *seed, nil
	}
	if !restart {
		ck, err := train.ReadRunCheckpoint(dir)
		if err != nil {
			return 0, err
		}
		return ck.Seed, nil
	}
	base := filepath.Base(filepath.Clean(dir))
	s, err := strconv.ParseInt(strings.TrimPrefix(base, "seed"), 10, 64)
	if err != nil || !strings.HasPrefix(base, "seed") {
		return 0, fmt.Errorf("-restart %s: the directory's name is not seed<N>; add `-seed N` to this command, N the run's seed", dir)
	}
	return s, nil
}

// freshCommand is the command that starts the run in dir afresh from a config file FILE (a
// placeholder): dir is <out>/<run name>/seed<N>, so -seed and -out follow from it.
func freshCommand(dir string) string {
	clean := filepath.Clean(dir)
	seed := strings.TrimPrefix(filepath.Base(clean), "seed")
	return fmt.Sprintf("`train -config FILE -seed %s -out %s -restart`", seed, filepath.Dir(filepath.Dir(clean)))
}

// one trains one seed and prints its final metric.
func one(ctx context.Context, opt train.Options) int { return oneTo(ctx, opt, os.Stdout, os.Stderr) }

// oneTo is one with the final line written to stdout and an error to stderr.
func oneTo(ctx context.Context, opt train.Options, stdout, stderr io.Writer) int {
	start := time.Now()
	res, err := train.Train(ctx, opt)
	if err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, opt.Dir) {
			msg = opt.Dir + ": " + msg
		}
		fmt.Fprintf(stderr, "train: %s\n", msg)
		if errors.Is(err, train.ErrNaN) {
			return exitNaN
		}
		return 1
	}
	fmt.Fprintf(stdout, "%s seed %d: %s, %s, %.2fs/epoch, stopped by %s, %s\n",
		res.Name, res.Seed, train.Scores(res), plural.Count(res.Epochs, "epoch"), res.SecondsPerEpoch, res.StoppedBy, time.Since(start).Round(time.Second))
	if res.StoppedBy == runfiles.StopSignal {
		return exitSignal
	}
	return 0
}

// checkPositive refuses a flag given on the command line with a value of 0 or less: for -epochs,
// -subset and -max-time, 0 would otherwise be read as "not given" and silently fall back to the
// config's value.
func checkPositive(fs *flag.FlagSet, names ...string) error {
	for _, name := range names {
		if !flagSet(fs, name) {
			continue
		}
		f := fs.Lookup(name)
		bad := false
		switch v := f.Value.(flag.Getter).Get().(type) {
		case int:
			bad = v <= 0
		case time.Duration:
			bad = v <= 0
		}
		if bad {
			return fmt.Errorf("-%s %s: want a value above 0 (leave the flag out to keep the config's %s)", name, f.Value, configKeyOf[name])
		}
	}
	return nil
}

// configKeyOf is the config key each budget flag overrides.
var configKeyOf = map[string]string{"epochs": "train.max_epochs", "subset": "dataset.subset", "max-time": "train.max_time"}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
