package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "-grid is required"},
		{[]string{"-grid", "g.yaml", "-workers", "0"}, "-workers 0"},
		{[]string{"-grid", "g.yaml", "-submit"}, "-submit needs -slurm"},
		{[]string{"-grid", "g.yaml", "x"}, `unexpected argument "x"`},
		{[]string{"-bogus"}, "-bogus"},
	} {
		var so, se bytes.Buffer
		if code := run(context.Background(), c.args, &so, &se); code != 2 || !strings.Contains(se.String(), c.want) {
			t.Errorf("%v: exit %d, %s", c.args, code, se.String())
		}
	}
}

func TestGPUIDs(t *testing.T) {
	t.Setenv("CUDA_VISIBLE_DEVICES", "2,3")
	if ids, err := gpuIDs(""); err != nil || strings.Join(ids, ",") != "2,3" {
		t.Errorf("env: %v %v", ids, err)
	}
	if ids, err := gpuIDs("0, 1"); err != nil || strings.Join(ids, ",") != "0,1" {
		t.Errorf("flag: %v %v", ids, err)
	}
	if ids, err := gpuIDs("none"); err != nil || len(ids) != 0 {
		t.Errorf("none: %v %v", ids, err)
	}
	if _, err := gpuIDs("0;rm"); err == nil || !strings.Contains(err.Error(), "-gpus") {
		t.Errorf("bad id: %v", err)
	}
}

// fakeTrainer builds the sweep package's fake trainer (../../sweep/testdata/faketrain).
func fakeTrainer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "faketrain")
	if out, err := exec.Command("go", "build", "-o", bin, "../../sweep/testdata/faketrain").CombinedOutput(); err != nil {
		t.Fatalf("building the fake trainer: %v\n%s", err, out)
	}
	return bin
}

const tinyGrid = `name: tiny
table: "table:zinc"
datasets: [zinc]
models: [gatedgcn]
encodings: [adj]
cls: [false, true]
r: [1, 2]
seeds: [41, 95]
overrides:
  train:
    max_time: 20m
`

// The command end to end: a real grid file (config.LoadGrid), the fake trainer, a failure, the
// second invocation finishing the job by resuming it, -dry-run, and -slurm.
func TestSweepCommand(t *testing.T) {
	bin := fakeTrainer(t)
	dir := t.TempDir()
	grid := filepath.Join(dir, "tiny.yaml")
	os.WriteFile(grid, []byte(tinyGrid), 0o644)
	out := filepath.Join(dir, "runs")
	t.Setenv("FAKE_FAIL", "zinc-gatedgcn-adj-cls-r2/95")
	t.Setenv("FAKE_SLEEP_MS", "1")
	args := []string{"-grid", grid, "-out", out, "-train-bin", bin, "-workers", "2"}
	var so, se bytes.Buffer
	if code := run(context.Background(), args, &so, &se); code != 1 {
		t.Fatalf("first sweep: exit %d, want 1\n%s\n%s", code, so.String(), se.String())
	}
	if !strings.Contains(se.String(), "1 failed jobs:\n  zinc-gatedgcn-adj-cls-r2 seed 95: exit status 5 after") {
		t.Errorf("failure list:\n%s", se.String())
	}
	if !strings.Contains(so.String(), "8 jobs: 0 already finished, 8 run (0 resumed): 7 finished, 1 failed") {
		t.Errorf("summary:\n%s", so.String())
	}
	// the resolved config the trainer got is a loadable config
	if _, err := os.Stat(filepath.Join(out, ".sweep", "configs", "zinc-gatedgcn-adj-cls-r2.yaml")); err != nil {
		t.Error(err)
	}
	so.Reset()
	if code := run(context.Background(), append(args, "-dry-run"), &so, &se); code != 0 ||
		!strings.Contains(so.String(), "7 finished, 1 resumable, 0 pending") ||
		!strings.Contains(so.String(), "train -resume "+filepath.Join(out, "zinc-gatedgcn-adj-cls-r2", "seed95")) {
		t.Errorf("dry run: exit %d\n%s", code, so.String())
	}
	so.Reset()
	se.Reset()
	if code := run(context.Background(), args, &so, &se); code != 0 {
		t.Fatalf("second sweep: exit %d\n%s\n%s", code, so.String(), se.String())
	}
	if !strings.Contains(so.String(), "8 jobs: 7 already finished, 1 run (1 resumed): 1 finished, 0 failed") {
		t.Errorf("second summary:\n%s", so.String())
	}
	// -slurm for a grid with everything finished, then with -set making new runs
	so.Reset()
	sdir := filepath.Join(dir, "slurm")
	if code := run(context.Background(), []string{"-grid", grid, "-out", out, "-train-bin", bin, "-slurm", sdir}, &so, &se); code != 0 ||
		!strings.Contains(so.String(), "nothing to submit") {
		t.Errorf("slurm, all finished: exit %d %s %s", code, so.String(), se.String())
	}
	so.Reset()
	out2 := filepath.Join(dir, "runs2")
	code := run(context.Background(), []string{"-grid", grid, "-out", out2, "-train-bin", bin, "-slurm", sdir,
		"-set", "device=cuda", "-partition", "gpu", "-max-parallel", "3"}, &so, &se)
	if code != 0 || !strings.Contains(so.String(), "(8 tasks of 8 jobs") {
		t.Fatalf("slurm: exit %d %s %s", code, so.String(), se.String())
	}
	b, _ := os.ReadFile(filepath.Join(sdir, "sweep.sbatch"))
	for _, want := range []string{"--array=0-7%3", "--time=0-00:50:00", "--gres=gpu:1", "--partition=gpu", "--job-name=tiny"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("script lacks %s:\n%s", want, b)
		}
	}
	// a grid error names the file
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("datasets: [zinc]\nmodles: [gatedgcn]\n"), 0o644)
	se.Reset()
	if code := run(context.Background(), []string{"-grid", bad}, &so, &se); code != 1 || !strings.Contains(se.String(), "bad.yaml") {
		t.Errorf("bad grid: exit %d %s", code, se.String())
	}
}
