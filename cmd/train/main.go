// Command train runs the benchmark protocol for one config: every seed of train.seeds in turn
// (or only -seed), each into <out>/<run name>/seed<seed>/ with config.yaml, metrics.jsonl,
// result.json and checkpoint.bin.
//
//	train -config configs/zinc/gatedgcn-adj-cls-r4.yaml [-set key=value …] [-seed N]
//	train -set dataset.name=neighborsmatch-2 -epochs 30
//	train -resume runs/zinc-gatedgcn-adj-cls-r4/seed41
//
// SIGINT or SIGTERM checkpoints the position inside the epoch and exits with status 3; -resume
// continues exactly where the run stopped.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/rewiregnn/rewiregnn/config"
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

func run(args []string) int {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	var overrides config.Sets
	cfgPath := fs.String("config", "", "run config (YAML); optional when -set names dataset.name")
	fs.Var(&overrides, "set", "override a config key, key=value (repeatable), e.g. -set train.batch_size=64")
	seed := fs.Int64("seed", 0, "run only this seed (default: every seed of train.seeds)")
	device := fs.String("device", "", "cpu, cuda or auto (overrides the config's device)")
	out := fs.String("out", "", "root folder of run directories (overrides the config's out)")
	dataDir := fs.String("data", "", "benchmark data folder (overrides dataset.dir)")
	cacheDir := fs.String("cache", "", "preprocessing cache folder, auto (default: <user cache dir>/rewiregnn/prep) or off (overrides dataset.cache)")
	resume := fs.String("resume", "", "continue the run in this run directory")
	maxTime := fs.Duration("max-time", 0, "wall-clock cap per seed, e.g. 10m (overrides train.max_time)")
	epochs := fs.Int("epochs", 0, "at most this many epochs (overrides train.max_epochs)")
	workers := fs.Int("workers", 0, "preprocessing workers (default: all cores)")
	subset := fs.Int("subset", 0, "use only the first N graphs of each split (quick runs; sets dataset.subset)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "train: unexpected argument %q (flags only; see -h)\n", fs.Arg(0))
		return exitUsage
	}
	for flagName, s := range map[string]string{"dataset.dir": *dataDir, "dataset.cache": *cacheDir, "device": *device, "out": *out} {
		if s != "" {
			overrides.Add(flagName, s)
		}
	}
	if *maxTime < 0 || *epochs < 0 || *subset < 0 {
		fmt.Fprintln(os.Stderr, "train: -max-time, -epochs and -subset must not be negative")
		return exitUsage
	}
	if *maxTime > 0 {
		overrides.Add("train.max_time", maxTime.String())
	}
	if *subset > 0 {
		overrides.Add("dataset.subset", strconv.Itoa(*subset))
	}
	if *epochs > 0 {
		overrides.Add("train.max_epochs", strconv.Itoa(*epochs))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opt := train.Options{Log: os.Stderr, Progress: !*quiet && isTerminal(os.Stderr), Workers: *workers}
	if *resume != "" {
		return resumeRun(ctx, opt, *resume, overrides, *cfgPath)
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
	seeds := cfg.Train.Seeds
	if *seed != 0 || flagSet(fs, "seed") {
		seeds = []int64{*seed}
	}
	for _, s := range seeds {
		opt.Run, opt.Seed, opt.Dir = cfg, s, cfg.Dir(s)
		if code := one(ctx, opt); code != 0 {
			return code
		}
	}
	return 0
}

// resumeRun continues the run in dir with its own resolved config (plus any -set overrides,
// e.g. a longer train.max_time).
func resumeRun(ctx context.Context, opt train.Options, dir string, overrides config.Sets, cfgPath string) int {
	if cfgPath != "" {
		fmt.Fprintln(os.Stderr, "train: -resume uses the run directory's config.yaml; drop -config (use -set to change keys)")
		return exitUsage
	}
	cfg, err := config.Load(filepath.Join(dir, runfiles.ConfigFile), overrides)
	if err != nil {
		fmt.Fprintf(os.Stderr, "train: resume: %v\n", err)
		return 1
	}
	ck, err := train.ReadCheckpoint(filepath.Join(dir, runfiles.CheckpointFile))
	if err != nil {
		fmt.Fprintf(os.Stderr, "train: resume %s: %v\n", dir, err)
		return 1
	}
	if res, err := runfiles.ReadResult(filepath.Join(dir, runfiles.ResultFile)); err == nil && runfiles.Finished(res.StoppedBy) {
		fmt.Fprintf(os.Stderr, "train: %s is finished (stopped by %s); nothing to resume\n", dir, res.StoppedBy)
		return 0
	}
	opt.Run, opt.Seed, opt.Dir, opt.Resume = cfg, ck.Seed, dir, true
	return one(ctx, opt)
}

// one trains one seed and prints its final metric.
func one(ctx context.Context, opt train.Options) int {
	start := time.Now()
	res, err := train.Train(ctx, opt)
	switch {
	case errors.Is(err, train.ErrNaN):
		fmt.Fprintf(os.Stderr, "train: %s: %v\n", opt.Dir, err)
		return exitNaN
	case err != nil:
		fmt.Fprintf(os.Stderr, "train: %s: %v\n", opt.Dir, err)
		return 1
	}
	fmt.Printf("%s seed %d: %s, %d epochs, %.2fs/epoch, stopped by %s, %s\n",
		res.Name, res.Seed, train.Scores(res), res.Epochs, res.SecondsPerEpoch, res.StoppedBy, time.Since(start).Round(time.Second))
	if res.StoppedBy == runfiles.StopSignal {
		return exitSignal
	}
	return 0
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
