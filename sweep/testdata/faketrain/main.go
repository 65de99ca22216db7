// Command faketrain stands in for cmd/train in the sweep tests: it takes the trainer's flags,
// sleeps a little, and writes a valid metrics.jsonl, checkpoint.bin and result.json into
// <out>/<name>/seed<seed>/, the run name read from the config's "name:" line.
//
// Environment: FAKE_SLEEP_MS (default 50); FAKE_FAIL, a comma list of name/seed that write a
// checkpoint and exit 5 unless started with -resume; FAKE_ARGS_LOG, a file each invocation
// appends its arguments to; FAKE_CONFIG_HASH, the config_hash written into result.json, or
// "load" to resolve the config like cmd/train (config.Load with the -set overrides; on resume the
// run directory's config.yaml), write config.yaml and record the hash and departures.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

func main() {
	cfg := flag.String("config", "", "config file")
	seed := flag.Int64("seed", 0, "seed")
	out := flag.String("out", "", "output root")
	resume := flag.String("resume", "", "run dir to resume")
	flag.String("device", "", "device")
	var sets []string
	flag.Func("set", "override", func(s string) error { sets = append(sets, s); return nil })
	flag.Parse()
	if log := os.Getenv("FAKE_ARGS_LOG"); log != "" {
		f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			die(err)
		}
		fmt.Fprintln(f, strings.Join(os.Args[1:], " "), "CUDA_VISIBLE_DEVICES="+os.Getenv("CUDA_VISIBLE_DEVICES"))
		f.Close()
	}
	var name, dir string
	if *resume != "" {
		// like cmd/train: the run directory says everything; -config is refused
		if *cfg != "" {
			fmt.Fprintln(os.Stderr, "fake trainer: -resume uses the run directory's config.yaml; drop -config")
			os.Exit(2)
		}
		dir = *resume
		name = filepath.Base(filepath.Dir(dir))
		s, err := strconv.ParseInt(strings.TrimPrefix(filepath.Base(dir), "seed"), 10, 64)
		if err != nil {
			die(fmt.Errorf("-resume %s: not a run directory", dir))
		}
		*seed = s
		if _, err := os.Stat(filepath.Join(dir, runfiles.CheckpointFile)); err != nil {
			die(fmt.Errorf("-resume %s: %w", dir, err))
		}
	} else {
		var err error
		if name, err = runName(*cfg); err != nil {
			die(err)
		}
		if *out == "" {
			die(fmt.Errorf("no -out"))
		}
		dir = filepath.Join(*out, name, fmt.Sprintf("seed%d", *seed))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		die(err)
	}
	hash, deps, reds := os.Getenv("FAKE_CONFIG_HASH"), []runfiles.Departure(nil), []runfiles.Reduction(nil)
	if hash == "load" {
		src := *cfg
		if *resume != "" {
			src = filepath.Join(dir, runfiles.ConfigFile)
		}
		run, err := config.Load(src, sets)
		if err != nil {
			die(err)
		}
		if err := config.WriteFile(filepath.Join(dir, runfiles.ConfigFile), run); err != nil {
			die(err)
		}
		hash, deps = run.Hash(), run.Departures()
		reds = runfiles.WithoutKeys(run.Reductions(), deps)
	}
	ms := 50
	if s := os.Getenv("FAKE_SLEEP_MS"); s != "" {
		ms, _ = strconv.Atoi(s)
	}
	if lock := os.Getenv("FAKE_EXCLUSIVE"); lock != "" {
		// a stand-in for a GPU: two trainers holding it at once is an error
		f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake trainer: device busy:", err)
			os.Exit(4)
		}
		f.Close()
	}
	time.Sleep(time.Duration(ms) * time.Millisecond)
	metrics := ""
	for ep := 0; ep < 3; ep++ {
		b, _ := json.Marshal(runfiles.Epoch{Epoch: ep, LR: 1e-3, ValLoss: 1 / float64(ep+1), ValMetric: 1 / float64(ep+1), TestMetric: 0.5})
		metrics += string(b) + "\n"
	}
	write(filepath.Join(dir, runfiles.MetricsFile), []byte(metrics))
	write(filepath.Join(dir, runfiles.CheckpointFile), []byte("fake checkpoint"))
	for _, f := range strings.Split(os.Getenv("FAKE_FAIL"), ",") {
		if f == fmt.Sprintf("%s/%d", name, *seed) && *resume == "" {
			fmt.Println("fake trainer: failing on purpose")
			if lock := os.Getenv("FAKE_EXCLUSIVE"); lock != "" {
				os.Remove(lock)
			}
			os.Exit(5)
		}
	}
	res := runfiles.Result{Name: name, Dataset: "zinc", Model: "gatedgcn", Encoding: "adj", R: 1, Seed: *seed,
		Metric: runfiles.MetricMAE, TestMetric: 0.5, ValMetric: 0.5, TrainMetric: 0.4, Epochs: 3,
		SecondsPerEpoch: float64(ms) / 1000, TotalSeconds: float64(ms) / 1000, Params: 1000,
		Device: "cpu", StoppedBy: runfiles.StopMinLR, FinalLR: 1e-7, ConfigHash: hash, Departures: deps, Reductions: reds}
	if *resume != "" {
		res.Resumed = 1
	}
	b, _ := json.Marshal(res)
	write(filepath.Join(dir, runfiles.ResultFile), b)
	fmt.Println("fake trainer: done", dir)
	if lock := os.Getenv("FAKE_EXCLUSIVE"); lock != "" {
		os.Remove(lock)
	}
}

func runName(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "name: "); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("%s: no name: line", path)
}

func write(path string, b []byte) {
	if err := runfiles.WriteAtomic(path, b, 0o644); err != nil {
		die(err)
	}
}

func die(err error) {
	fmt.Fprintln(os.Stderr, "fake trainer:", err)
	os.Exit(1)
}
