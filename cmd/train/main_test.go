package main

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rewiregnn/rewiregnn/runfiles"
	"github.com/rewiregnn/rewiregnn/train"
)

// build compiles this command into a temporary folder.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "train")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

var nmArgs = []string{"-set", "dataset.name=neighborsmatch-2", "-set", "dataset.encoding=lp", "-set", "dataset.q=3",
	"-set", "train.batch_size=8", "-epochs", "30", "-seed", "35", "-quiet"}

// waitEpochs waits until the run directory's metrics.jsonl holds at least n epochs.
func waitEpochs(t *testing.T, dir string, n int, cmd *exec.Cmd) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if eps, err := runfiles.ReadMetrics(filepath.Join(dir, runfiles.MetricsFile)); err == nil && len(eps) >= n {
			return
		}
		if cmd.ProcessState != nil {
			t.Fatal("the run ended early")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %d epochs in %s after 2 minutes", n, dir)
}

// TestKillAndResume kills a training process (SIGKILL), resumes it, interrupts the resumed
// process with SIGTERM (a clean stop inside an epoch, exit status 3), resumes again, and
// compares the finished run with an uninterrupted one: every epoch's losses and metrics, the
// result and the final parameters must be identical.
func TestKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the command")
	}
	bin := build(t)
	whole, cut := t.TempDir(), t.TempDir()
	if out, err := exec.Command(bin, append(nmArgs, "-out", whole)...).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	dir := filepath.Join(cut, "neighborsmatch-2-gatedgcn-lp-r1", "seed35")

	var log bytes.Buffer
	cmd := exec.Command(bin, append(nmArgs, "-out", cut)...)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitEpochs(t, dir, 4, cmd)
	cmd.Process.Kill()
	cmd.Wait()

	cmd = exec.Command(bin, "-resume", dir, "-quiet")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitEpochs(t, dir, 12, cmd)
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitSignal {
		t.Fatalf("SIGTERM: %v, want exit status %d\n%s", err, exitSignal, log.String())
	}
	if res, err := runfiles.ReadResult(filepath.Join(dir, runfiles.ResultFile)); err != nil || res.StoppedBy != runfiles.StopSignal {
		t.Fatalf("after SIGTERM: %+v, %v", res, err)
	}
	if out, err := exec.Command(bin, "-resume", dir, "-quiet").CombinedOutput(); err != nil {
		t.Fatalf("second resume: %v\n%s", err, out)
	}
	if !strings.Contains(log.String(), "resumed at epoch") {
		t.Fatalf("the log does not mention the resume:\n%s", log.String())
	}
	compareRuns(t, filepath.Join(whole, "neighborsmatch-2-gatedgcn-lp-r1", "seed35"), dir)
}

func compareRuns(t *testing.T, a, b string) {
	t.Helper()
	ea, err := runfiles.ReadMetrics(filepath.Join(a, runfiles.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	eb, err := runfiles.ReadMetrics(filepath.Join(b, runfiles.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(ea) != len(eb) || len(ea) != 30 {
		t.Fatalf("%d and %d epochs, want 30", len(ea), len(eb))
	}
	for i := range ea {
		x, y := ea[i], eb[i]
		x.Seconds, x.EvalSeconds, x.Elapsed = 0, 0, 0
		y.Seconds, y.EvalSeconds, y.Elapsed = 0, 0, 0
		if x != y {
			t.Fatalf("epoch %d differs:\n%+v\n%+v", i, x, y)
		}
	}
	ra, err := runfiles.ReadResult(filepath.Join(a, runfiles.ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	rb, err := runfiles.ReadResult(filepath.Join(b, runfiles.ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	if ra.TestMetric != rb.TestMetric || ra.TrainMetric != rb.TrainMetric || ra.StoppedBy != rb.StoppedBy || rb.Resumed != 2 {
		t.Fatalf("results differ:\n%+v\n%+v", ra, rb)
	}
	ca, err := train.ReadCheckpoint(filepath.Join(a, runfiles.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	cb, err := train.ReadCheckpoint(filepath.Join(b, runfiles.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range ca.Params {
		if !slices.Equal(v, cb.Params[name]) {
			t.Fatalf("parameter %s differs", name)
		}
	}
}

// TestBadFlags: usage errors name the problem.
func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-epochs", "-1"}, {"stray"}, {}} {
		if code := run(args); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	if code := run([]string{"-set", "dataset.name=zinc", "-set", "dataset.r=0", "-out", t.TempDir()}); code != 1 {
		t.Errorf("r = 0: exit %d, want 1", code)
	}
}

// TestMemoryFlags: -memory below the run's estimate stops it at once with the guard's message
// (exit 1, no checkpoint); -no-memory-guard trains it; a malformed size is a usage error.
func TestMemoryFlags(t *testing.T) {
	if code := run([]string{"-memory", "lots", "-set", "dataset.name=neighborsmatch-2"}); code != exitUsage {
		t.Errorf("-memory lots: exit %d, want %d", code, exitUsage)
	}
	bin := build(t)
	out := t.TempDir()
	args := []string{"-set", "dataset.name=neighborsmatch-2", "-epochs", "1", "-seed", "35", "-quiet", "-out", out}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, append(args, "-memory", "20MiB")...)
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("-memory 20MiB: %v, want exit status 1\n%s", err, stderr.String())
	}
	for _, want := range []string{"memory: this run needs about", "20.0 MiB is available (-memory)", "-no-memory-guard"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("the message lacks %q:\n%s", want, stderr.String())
		}
	}
	if matches, _ := filepath.Glob(filepath.Join(out, "*", "seed35", runfiles.CheckpointFile)); len(matches) > 0 {
		t.Errorf("a refused run wrote %v", matches)
	}
	if b, err := exec.Command(bin, append(args, "-memory", "20MiB", "-no-memory-guard")...).CombinedOutput(); err != nil {
		t.Fatalf("-no-memory-guard: %v\n%s", err, b)
	}
}
