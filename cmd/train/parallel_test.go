package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rewiregnn/rewiregnn/cuda/emu"
	"github.com/rewiregnn/rewiregnn/rundir"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// parArgs train three seeds of NeighborsMatch-2 with Laplacian encodings (their random signs
// come from each run's own generator) for a few epochs.
var parArgs = []string{"-set", "dataset.name=neighborsmatch-2", "-set", "dataset.encoding=lp", "-set", "dataset.q=3",
	"-set", "train.batch_size=8", "-set", "train.seeds=35,36,37", "-quiet"}

const parRun = "neighborsmatch-2-gatedgcn-lp-r1"

// sameRun fails unless run directories a and b hold the same run: every epoch's figures (not
// its timings), the result's and the checkpoint's parameters, bit for bit.
func sameRun(t *testing.T, a, b string) {
	t.Helper()
	ea, eb := epochsOf(t, a, b)
	if len(ea) == 0 {
		t.Fatalf("%s: no epochs", a)
	}
	sameTimelessEpochs(t, ea, eb)
	ra, rb := resultsOf(t, a, b)
	if ra.TestMetric != rb.TestMetric || ra.TrainMetric != rb.TrainMetric || ra.ValMetric != rb.ValMetric || ra.Epochs != rb.Epochs ||
		ra.StoppedBy != rb.StoppedBy || ra.FinalLR != rb.FinalLR || ra.Device != rb.Device {
		t.Fatalf("results differ:\n%+v\n%+v", ra, rb)
	}
	sameParams(t, a, b)
	sameBoards(t, a, b, ra)
}

// TestParallelMatchesSequential: -parallel 2 over three seeds on the CPU (two at once, then the
// third) gives each seed the run it gets when the seeds train one after another, bit for bit;
// the log lines name their seed and the last line says all finished.
func TestParallelMatchesSequential(t *testing.T) {
	seq, par := t.TempDir(), t.TempDir()
	wantRun(t, 0, nil, append(parArgs, "-epochs", "3", "-out", seq)...)
	stderr := wantRun(t, 0, []string{"seed 35: epoch   2 |", "seed 36: epoch   2 |", "seed 37: epoch   2 |", "train: -parallel 2: 3 of 3 seeds finished"},
		append(parArgs, "-epochs", "3", "-out", par, "-parallel", "2")...)
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if !strings.HasPrefix(line, "seed 3") && !strings.HasPrefix(line, "train: -parallel 2:") {
			t.Errorf("a log line without its seed: %q", line)
		}
	}
	for _, s := range []string{"seed35", "seed36", "seed37"} {
		sameRun(t, filepath.Join(seq, parRun, s), filepath.Join(par, parRun, s))
	}
}

// TestParallelFailingSeed: a seed that cannot train (its directory is busy) is reported by
// its seed and makes the exit status 1; the other seeds finish.
func TestParallelFailingSeed(t *testing.T) {
	out := t.TempDir()
	busy := filepath.Join(out, parRun, "seed36")
	if err := os.MkdirAll(busy, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := rundir.LockDir(busy, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	wantRun(t, 1, []string{"seed 36: train: " + busy + " is in use by process", "2 of 3 seeds finished; failed: seed 36"},
		append(parArgs, "-epochs", "1", "-out", out, "-parallel", "3")...)
	for _, s := range []string{"seed35", "seed37"} {
		if res, err := runfiles.ReadResult(filepath.Join(out, parRun, s, runfiles.ResultFile)); err != nil || res.StoppedBy != runfiles.StopMaxEpochs {
			t.Errorf("%s: %+v, %v; want a finished run", s, res, err)
		}
	}
}

// TestParallelFlags: -parallel below 1, or above 1 with a single run (-seed, -resume) or
// none (-plan, -predict), is a usage error that says why; -parallel above the number of seeds
// trains them all at once.
func TestParallelFlags(t *testing.T) {
	base := []string{"-set", "dataset.name=neighborsmatch-2", "-epochs", "1", "-quiet", "-out", t.TempDir()}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-parallel", "0"}, "-parallel 0: want 1 or more"},
		{[]string{"-parallel", "-2"}, "-parallel -2: want 1 or more"},
		{[]string{"-parallel", "2", "-seed", "35"}, "-seed gives it none or one: drop -parallel, or -seed"},
		{[]string{"-parallel", "2", "-plan"}, "drop -parallel, or -plan"},
	} {
		wantRun(t, exitUsage, []string{c.want}, append(slices.Clone(base), c.args...)...)
	}
	wantRun(t, exitUsage, []string{"drop -parallel, or -resume"}, "-resume", t.TempDir(), "-parallel", "2")
	wantRun(t, exitUsage, []string{"drop -parallel, or -predict"}, "-predict", t.TempDir(), "-parallel", "2")
	wantRun(t, 0, []string{"-parallel 3: 2 seeds, 2 at once", "2 of 2 seeds finished"},
		append(slices.Clone(base), "-set", "train.seeds=35,36", "-parallel", "3")...)
}

// TestParallelMemory: the memory guard gives each of K runs 1/K of the budget and refuses a run
// that does not fit, naming -parallel and the count that fits.
func TestParallelMemory(t *testing.T) {
	out := t.TempDir()
	// One NeighborsMatch-2 run needs about 70 MiB with the collector's room: 100 MiB holds one.
	wantRun(t, 1, []string{"is available (1/2 of 100.0 MiB, -memory, for -parallel 2)", "the whole budget holds 1 run at once: -parallel 1",
		"0 of 2 seeds finished; failed: seed 35, 36"},
		"-set", "dataset.name=neighborsmatch-2", "-set", "train.seeds=35,36", "-epochs", "1", "-quiet", "-out", out, "-parallel", "2", "-memory", "100MiB")
	if m, _ := filepath.Glob(filepath.Join(out, "*", "*", runfiles.CheckpointFile)); len(m) > 0 {
		t.Errorf("refused runs wrote %v", m)
	}
}

// TestParallelInterrupt: SIGTERM stops every run of a -parallel command with a checkpoint
// (exit status 3), names the seed that had not started, and each stopped run resumes with
// -resume to the run it would have been uninterrupted.
func TestParallelInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the command")
	}
	bin := build(t)
	out, whole := t.TempDir(), t.TempDir()
	var log bytes.Buffer
	cmd := exec.Command(bin, append(parArgs, "-epochs", "400", "-out", out, "-parallel", "2")...)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitEpochs(t, filepath.Join(out, parRun, "seed35"), 2, cmd)
	waitEpochs(t, filepath.Join(out, parRun, "seed36"), 2, cmd)
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitSignal {
		t.Fatalf("SIGTERM: %v, want exit status %d\n%s", err, exitSignal, log.String())
	}
	if !strings.Contains(log.String(), "interrupted (continue each with -resume DIR): seed 35, 36; not started (interrupted first; train each with -seed N): seed 37") {
		t.Fatalf("the last line does not name the interrupted and unstarted seeds:\n%s", log.String())
	}
	if _, err := os.Stat(filepath.Join(out, parRun, "seed37")); err == nil {
		t.Error("seed 37 has a run directory, yet it never started")
	}
	for _, s := range []string{"seed35", "seed36"} {
		dir := filepath.Join(out, parRun, s)
		res, err := runfiles.ReadResult(filepath.Join(dir, runfiles.ResultFile))
		if err != nil || res.StoppedBy != runfiles.StopSignal {
			t.Fatalf("%s after SIGTERM: %+v, %v", s, res, err)
		}
		// Resumed to two epochs past the interruption, it is the uninterrupted run of as many.
		epochs := []string{"-epochs", strconv.Itoa(res.Epochs + 2)}
		if b, err := exec.Command(bin, append([]string{"-resume", dir, "-quiet"}, epochs...)...).CombinedOutput(); err != nil {
			t.Fatalf("resume %s: %v\n%s", s, err, b)
		}
		seed := strings.TrimPrefix(s, "seed")
		if b, err := exec.Command(bin, append(append(slices.Clone(parArgs), "-seed", seed, "-out", whole), epochs...)...).CombinedOutput(); err != nil {
			t.Fatalf("uninterrupted %s: %v\n%s", s, err, b)
		}
		sameFigures(t, filepath.Join(whole, parRun, s), dir)
	}
}

// sameFigures is sameRun for runs whose configs differ in train.max_epochs alone (an
// interrupted run extended with -resume -epochs): the figures and parameters, not the hashes.
func sameFigures(t *testing.T, a, b string) {
	t.Helper()
	ea, eb := epochsOf(t, a, b)
	for i := range ea {
		x, y := ea[i], eb[i]
		if x.TrainLoss != y.TrainLoss || x.TrainMetric != y.TrainMetric || x.TestMetric != y.TestMetric || x.LR != y.LR {
			t.Fatalf("epoch %d differs:\n%+v\n%+v", i, x, y)
		}
	}
	sameParams(t, a, b)
}

// TestParallelEmu: -parallel 2 -device emu (two emulated devices, each its own stream, at
// once) gives each seed the run it gets alone on the emulated GPU.
func TestParallelEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("trains four runs on the emulated GPU")
	}
	if err := emu.Skip(); err != nil {
		t.Skip(err)
	}
	seq, par := t.TempDir(), t.TempDir()
	args := func(out string) []string {
		a := emuArgs(t, out)
		i := slices.Index(a, "-seed")
		a = slices.Delete(a, i, i+2)
		return append(a, "-device", "emu", "-set", "train.seeds=41,42")
	}
	wantRun(t, 0, nil, args(seq)...)
	wantRun(t, 0, []string{"2 of 2 seeds finished"}, append(args(par), "-parallel", "2")...)
	for _, s := range []string{"seed41", "seed42"} {
		sameRun(t, filepath.Join(seq, "zinc-gatedgcn-adj-r1", s), filepath.Join(par, "zinc-gatedgcn-adj-r1", s))
	}
}
