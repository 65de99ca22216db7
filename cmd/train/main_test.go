package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rewiregnn/rewiregnn/internal/tfread"
	"github.com/rewiregnn/rewiregnn/rundir"
	"github.com/rewiregnn/rewiregnn/runfiles"
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
	// Every process trains on at least two threads.
	t.Setenv("GOMAXPROCS", strconv.Itoa(max(2, runtime.NumCPU())))
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
	killed := cmd.Process.Pid

	cmd = exec.Command(bin, "-resume", dir, "-quiet")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitEpochs(t, dir, 12, cmd)
	// A second trainer on the same directory, resuming or starting afresh, fails at once.
	busy := fmt.Sprintf("%s is in use by process %d on ", dir, cmd.Process.Pid)
	for _, args := range [][]string{{"-resume", dir, "-quiet"}, append(slices.Clone(nmArgs), "-out", cut)} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if !errors.As(err, new(*exec.ExitError)) || !strings.Contains(string(out), busy) {
			t.Fatalf("a second trainer %v: %v\n%s\nwant %q", args, err, out, busy)
		}
	}
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
	if stale := fmt.Sprintf("stale lock of process %d on ", killed); !strings.Contains(log.String(), stale) {
		t.Fatalf("the log does not mention the killed process's lock (%q):\n%s", stale, log.String())
	}
	compareRuns(t, filepath.Join(whole, "neighborsmatch-2-gatedgcn-lp-r1", "seed35"), dir)
}

func compareRuns(t *testing.T, a, b string) {
	t.Helper()
	ea, eb := epochsOf(t, a, b)
	if len(ea) != 30 {
		t.Fatalf("%d and %d epochs, want 30", len(ea), len(eb))
	}
	sameTimelessEpochs(t, ea, eb)
	ra, rb := resultsOf(t, a, b)
	if ra.TestMetric != rb.TestMetric || ra.TrainMetric != rb.TrainMetric || ra.StoppedBy != rb.StoppedBy || rb.Resumed != 2 {
		t.Fatalf("results differ:\n%+v\n%+v", ra, rb)
	}
	sameParams(t, a, b)
	sameBoards(t, a, b, ra)
}

// sameBoards fails unless the tb folders of run directories a and b, whose result is res,
// each hold every epoch of their metrics.jsonl once, with its figures (val/ tags only where
// the run had a validation split: NeighborsMatch has none), the same figures in both (timings
// aside), and one end (hparams session start, final figures, session end).
func sameBoards(t *testing.T, a, b string, res *runfiles.Result) {
	t.Helper()
	hasVal := res.ValSplit != "none"
	ba, err := tfread.MatchMetrics(a, res.Metric, hasVal, true)
	if err != nil {
		t.Fatal(err)
	}
	bb, err := tfread.MatchMetrics(b, res.Metric, hasVal, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := tfread.SameFigures(ba, bb); err != nil {
		t.Fatalf("tb folders of %s and %s: %v", a, b, err)
	}
	if len(ba.End) != 3 || len(bb.End) != 3 {
		t.Fatalf("%d and %d end events, want 3", len(ba.End), len(bb.End))
	}
}

// TestBadFlags: usage errors name the problem.
func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-epochs", "-1"}, {"stray"}, {}, {"-eval-batch", "0", "-set", "dataset.name=neighborsmatch-2"}} {
		if code := run(args); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	if code := run([]string{"-set", "dataset.name=zinc", "-set", "dataset.r=0", "-out", t.TempDir()}); code != 1 {
		t.Errorf("r = 0: exit %d, want 1", code)
	}
}

// runCaptured runs the command in this process and returns its exit status and what it wrote
// to stderr.
func runCaptured(t *testing.T, args ...string) (int, string) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	saved := os.Stderr
	os.Stderr = f
	code := run(args)
	os.Stderr = saved
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return code, string(b)
}

// wantRun fails unless the command exits with code and its stderr holds every one of parts.
func wantRun(t *testing.T, code int, parts []string, args ...string) string {
	t.Helper()
	got, stderr := runCaptured(t, args...)
	if got != code {
		t.Fatalf("%v: exit %d, want %d\n%s", args, got, code, stderr)
	}
	for _, p := range parts {
		if !strings.Contains(stderr, p) {
			t.Fatalf("%v: stderr does not name %q:\n%s", args, p, stderr)
		}
	}
	return stderr
}

// TestRecoveryFlags: the ways out of a finished run, a corrupt checkpoint and a busy directory,
// through the command's flags.
func TestRecoveryFlags(t *testing.T) {
	out := t.TempDir()
	fresh := []string{"-set", "dataset.name=neighborsmatch-2", "-seed", "35", "-epochs", "2", "-quiet", "-out", out}
	dir := filepath.Join(out, "neighborsmatch-2-gatedgcn-none-r1", "seed35")
	wantRun(t, 0, nil, fresh...)
	wantRun(t, 1, []string{"holds a finished run", "`train -resume " + dir + " -epochs 5`", "`-restart`"}, fresh...)
	wantRun(t, 1, []string{dir + " is finished", "add `-epochs 5`", "`-restart`"}, "-resume", dir, "-quiet")
	wantRun(t, 0, []string{"extending it to train.max_epochs 3"}, "-resume", dir, "-epochs", "3", "-quiet")
	res, err := runfiles.ReadResult(filepath.Join(dir, runfiles.ResultFile))
	if err != nil || res.Epochs != 3 || res.Resumed != 1 || res.StoppedBy != runfiles.StopMaxEpochs {
		t.Fatalf("extended run: %+v, %v", res, err)
	}

	ck := filepath.Join(dir, runfiles.CheckpointFile)
	b, _ := os.ReadFile(ck)
	os.WriteFile(ck, b[:len(b)/2], 0o600)
	wantRun(t, 1, []string{"checksum mismatch", "-restart"}, "-resume", dir, "-quiet")
	wantRun(t, 0, []string{"moved into " + filepath.Join(dir, runfiles.OldPrefix)}, "-resume", dir, "-restart", "-quiet")
	if res, err := runfiles.ReadResult(filepath.Join(dir, runfiles.ResultFile)); err != nil || res.Epochs != 3 || res.Resumed != 0 {
		t.Fatalf("restarted from the run directory: %+v, %v", res, err)
	}
	wantRun(t, 0, nil, append(fresh, "-restart")...)
	if olds, _ := filepath.Glob(filepath.Join(dir, runfiles.OldPrefix+"*")); len(olds) != 2 {
		t.Fatalf("old folders after two restarts: %v", olds)
	}
	other := filepath.Join(t.TempDir(), "run")
	os.Mkdir(other, 0o755)
	if b, err := os.ReadFile(filepath.Join(dir, runfiles.ConfigFile)); err != nil || os.WriteFile(filepath.Join(other, runfiles.ConfigFile), b, 0o644) != nil {
		t.Fatalf("copying the config: %v", err)
	}
	wantRun(t, 1, []string{"not seed<N>", "add `-seed N`"}, "-resume", other, "-restart")
	wantRun(t, 0, nil, "-resume", other, "-restart", "-seed", "35", "-quiet")

	lock, err := rundir.LockDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	busy := fmt.Sprintf("%s is in use by process %d on ", dir, os.Getpid())
	wantRun(t, 1, []string{busy}, "-resume", dir, "-quiet")
	wantRun(t, 1, []string{busy}, append(fresh, "-restart")...)
}

// TestMemoryFlags: -memory below the run's estimate stops it at once with the guard's message
// (exit 1, no checkpoint); -no-memory-guard trains it; a malformed size is a usage error, and so
// is -budget without -plan; -plan prints a plan.
func TestMemoryFlags(t *testing.T) {
	if code := run([]string{"-memory", "lots", "-set", "dataset.name=neighborsmatch-2"}); code != exitUsage {
		t.Errorf("-memory lots: exit %d, want %d", code, exitUsage)
	}
	if code := run([]string{"-budget", "1GiB", "-set", "dataset.name=neighborsmatch-2"}); code != exitUsage {
		t.Errorf("-budget without -plan: exit %d, want %d", code, exitUsage)
	}
	if code := run([]string{"-plan", "-budget", "1GiB", "-set", "dataset.name=neighborsmatch-2", "-out", t.TempDir()}); code != 0 {
		t.Errorf("-plan: exit %d, want 0", code)
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

// TestCPUProfile: -cpuprofile writes a CPU profile of a short run that go tool pprof reads;
// naming an existing file or a missing folder is a usage error before anything trains, and the
// existing profile is left as it was.
func TestCPUProfile(t *testing.T) {
	out := t.TempDir()
	prof := filepath.Join(out, "cpu.pprof")
	args := []string{"-set", "dataset.name=neighborsmatch-2", "-seed", "35", "-epochs", "1", "-quiet", "-out", out}
	wantRun(t, 0, nil, append(args, "-cpuprofile", prof)...)
	raw, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	// go tool pprof, the profile's own reader, must parse it as a CPU profile.
	top, err := exec.Command("go", "tool", "pprof", "-symbolize=none", "-top", prof).CombinedOutput()
	if err != nil || !strings.Contains(string(top), "Type: cpu") {
		t.Fatalf("go tool pprof -top %s: %v\n%s", prof, err, top)
	}
	wantRun(t, exitUsage, []string{"-cpuprofile " + prof, "exists"}, append(args, "-cpuprofile", prof)...)
	if again, _ := os.ReadFile(prof); !bytes.Equal(again, raw) {
		t.Error("a refused -cpuprofile changed the existing profile")
	}
	missing := filepath.Join(out, "no-such-folder", "cpu.pprof")
	wantRun(t, exitUsage, []string{"no folder " + filepath.Dir(missing)}, append(args, "-cpuprofile", missing)...)
}

// TestZeroBudgetFlags: -epochs, -subset and -max-time given as 0 or less are usage errors naming
// the flag and the config key it would override, not a silent "no override".
func TestZeroBudgetFlags(t *testing.T) {
	base := []string{"-set", "dataset.name=neighborsmatch-2", "-quiet", "-out", t.TempDir()}
	for _, c := range []struct{ flag, value, key string }{
		{"-epochs", "0", "train.max_epochs"}, {"-epochs", "-2", "train.max_epochs"},
		{"-subset", "0", "dataset.subset"}, {"-subset", "-1", "dataset.subset"},
		{"-max-time", "0s", "train.max_time"}, {"-max-time", "-1m0s", "train.max_time"},
	} {
		wantRun(t, exitUsage, []string{c.flag + " " + c.value + ": want a value above 0", c.key}, append(base, c.flag, c.value)...)
	}
}

// TestPredictMissingRun: -predict of a folder that does not exist says there is no such run,
// naming the path, rather than failing to lock it.
func TestPredictMissingRun(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-run", "seed41")
	stderr := wantRun(t, 1, []string{missing + ": no such run directory"}, "-predict", missing)
	if strings.Contains(stderr, "lock") {
		t.Fatalf("the message speaks of the lock:\n%s", stderr)
	}
}

// TestMissingDataLeavesNoRunDirectory: a run whose data folder does not exist fails naming it
// and creates no run directory (not even <out>/<run name>).
func TestMissingDataLeavesNoRunDirectory(t *testing.T) {
	out := t.TempDir()
	missing := filepath.Join(t.TempDir(), "nonexistent")
	wantRun(t, 1, []string{missing}, "-set", "dataset.name=zinc", "-data", missing, "-seed", "41", "-epochs", "1", "-quiet", "-out", out)
	if ents, _ := os.ReadDir(out); len(ents) > 0 {
		t.Fatalf("the failed run left %s in %s", ents[0].Name(), out)
	}
}
