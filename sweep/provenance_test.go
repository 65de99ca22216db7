package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

const zincConfig = "name: zr\ndataset:\n  name: zinc\n  encoding: adj\n  r: 1\ntrain:\n  seeds: [41]\n"

// loadRun resolves the test config with -set overrides.
func loadRun(t *testing.T, sets ...string) *config.Run {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(zincConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := config.Load(p, sets)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// runDir writes a run directory as the trainer leaves it: config.yaml of run, and a result with
// the given hash and departures (no result when stop is "").
func runDir(t *testing.T, dir string, run *config.Run, stop, hash string, deps []runfiles.Departure) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := config.WriteFile(filepath.Join(dir, runfiles.ConfigFile), run); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, runfiles.CheckpointFile), []byte("c"), 0o644)
	if stop == "" {
		return
	}
	res := runfiles.Result{Name: "zr", Dataset: "zinc", Model: "gatedgcn", Encoding: "adj", R: 1, Seed: 41, Metric: runfiles.MetricMAE,
		Epochs: 2, StoppedBy: stop, ConfigHash: hash, Departures: deps}
	b, _ := json.Marshal(res)
	if err := os.WriteFile(filepath.Join(dir, runfiles.ResultFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestInspectComparesProvenance(t *testing.T) {
	protocol := loadRun(t)
	subset := loadRun(t, "dataset.subset=1000")
	epochs2 := loadRun(t, "train.max_epochs=2")
	capped := loadRun(t, "train.max_time=1h")
	cappedEpochs := loadRun(t, "train.max_time=1h", "train.max_epochs=2")
	for _, tc := range []struct {
		name    string
		job     *config.Run // the grid's run
		dirRun  *config.Run // the run directory's config.yaml
		stop    string
		hash    string
		deps    []runfiles.Departure
		want    State
		noteHas string
	}{
		{"same config", protocol, protocol, runfiles.StopMinLR, protocol.Hash(), nil, Finished, ""},
		{"a -subset run under a protocol grid", protocol, subset, runfiles.StopMaxEpochs, subset.Hash(), subset.Departures(), Mismatch, "dataset.subset 1000 (want 0)"},
		{"same values, other departures", epochs2, epochs2, runfiles.StopMaxEpochs, epochs2.Hash(), nil, Mismatch, "train.max_epochs 1000→2"},
		{"the grid's departures", epochs2, epochs2, runfiles.StopMaxEpochs, epochs2.Hash(), epochs2.Departures(), Finished, ""},
		{"the grid's run on another device", loadRun(t, "device=cuda"), protocol, runfiles.StopMinLR, protocol.Hash(), nil, Finished, ""},
		{"legacy result, same config.yaml", protocol, protocol, runfiles.StopMaxTime, "", nil, Finished, "without config_hash"},
		{"legacy result, other config.yaml", protocol, subset, runfiles.StopMaxTime, "", nil, Mismatch, "no config_hash"},
		{"checkpoint of the same config", protocol, protocol, "", "", nil, Resumable, ""},
		{"checkpoint of another config", protocol, epochs2, "", "", nil, Mismatch, "train.max_epochs 2 (want 1000)"},
		{"interrupted run of the same config", protocol, protocol, runfiles.StopSignal, protocol.Hash(), nil, Resumable, "signal"},
		// a 1-hour cap that never acted (stopped by min_lr within it) is the grid's run; one that
		// stopped the run, or one beside another departure, is not
		{"converged under a 1h cap", protocol, capped, runfiles.StopMinLR, capped.Hash(), capped.Departures(), Finished, ""},
		{"stopped by its 1h cap", protocol, capped, runfiles.StopMaxTime, capped.Hash(), capped.Departures(), Mismatch, "train.max_time 1h (want 12h)"},
		{"a 1h cap and fewer epochs", protocol, cappedEpochs, runfiles.StopMinLR, cappedEpochs.Hash(), cappedEpochs.Departures(), Mismatch, "train.max_epochs 2 (want 1000)"},
		{"a 1h cap under a grid of fewer epochs", epochs2, cappedEpochs, runfiles.StopMinLR, cappedEpochs.Hash(), cappedEpochs.Departures(), Finished, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "zr", "seed41")
			runDir(t, dir, tc.dirRun, tc.stop, tc.hash, tc.deps)
			st, note := Inspect(Job{Name: "zr", Seed: 41, Config: tc.job, Dir: dir})
			if st != tc.want || (tc.noteHas == "") != (note == "") || !strings.Contains(note, tc.noteHas) {
				t.Errorf("state %v note %q, want %v with %q", st, note, tc.want, tc.noteHas)
			}
		})
	}
}

// A sweep -set on a budget key writes the protocol's value into the trainer's config and passes
// the departure as -set, so that the trainer records it.
func TestDeparturesGoToTheTrainerAsSets(t *testing.T) {
	run := loadRun(t, "train.max_epochs=2", "dataset.subset=10")
	dir := t.TempDir()
	plan, err := NewPlan("g", "", []*config.Run{run}, filepath.Join(dir, "runs"), filepath.Join(dir, "cfg"))
	if err != nil {
		t.Fatal(err)
	}
	j := plan.Jobs[0]
	if err := WriteConfigs(plan.Jobs, WriteConfig); err != nil {
		t.Fatal(err)
	}
	args := strings.Join(TrainArgs(j, false), " ")
	if !strings.HasSuffix(args, "-set dataset.subset=10 -set train.max_epochs=2") {
		t.Errorf("trainer arguments %q", args)
	}
	if r := strings.Join(TrainArgs(j, true), " "); r != "-resume "+j.Dir+" -set dataset.subset=10 -set train.max_epochs=2" {
		t.Errorf("resume arguments %q", r)
	}
	// what the trainer resolves from them is the grid's run, departures included
	got, err := config.Load(j.ConfigPath, run.DepartureSets())
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash() != run.Hash() || len(got.Departures()) != 2 || got.Departures()[1].Protocol != "1000" {
		t.Errorf("the trainer resolves departures %+v", got.Departures())
	}
	written, err := config.Load(j.ConfigPath, nil)
	if err != nil || written.Train.MaxEpochs != 1000 || written.Dataset.Subset != 0 {
		t.Errorf("the written config is not at the protocol's budget: %+v %v", written.Train, err)
	}
}

// mismatchedPlan is a one-job plan under dir whose run directory holds a finished run of another
// budget (dataset.subset 1000); it returns the plan, the job and the grid's run.
func mismatchedPlan(t *testing.T, dir string) (*Plan, Job, *config.Run) {
	t.Helper()
	run := loadRun(t)
	plan, err := NewPlan("g", "", []*config.Run{run}, filepath.Join(dir, "runs"), "")
	if err != nil {
		t.Fatal(err)
	}
	j := plan.Jobs[0]
	subset := loadRun(t, "dataset.subset=1000")
	runDir(t, j.Dir, subset, runfiles.StopMaxEpochs, subset.Hash(), subset.Departures())
	return plan, j, run
}

func TestMismatchRefusedOrRerun(t *testing.T) {
	bin := fakeTrainer(t)
	plan, j, run := mismatchedPlan(t, t.TempDir())
	subset := loadRun(t, "dataset.subset=1000")
	var log bytes.Buffer
	r := &Runner{TrainBin: bin, Workers: 1, WriteConfig: WriteConfig, Log: &log, Env: []string{"FAKE_SLEEP_MS=1", "FAKE_CONFIG_HASH=" + run.Hash()}}
	sum, err := r.Run(context.Background(), plan.Jobs)
	if err != nil || sum.Started != 0 || len(sum.Failed) != 1 || !strings.Contains(sum.Failed[0].Err.Error(), "-mismatch rerun") ||
		!strings.Contains(sum.Failed[0].Err.Error(), "dataset.subset 1000 (want 0)") {
		t.Fatalf("refuse: %v %v %v", sum, err, sum.Failed)
	}
	if res, err := runfiles.ReadResult(filepath.Join(j.Dir, runfiles.ResultFile)); err != nil || res.ConfigHash != subset.Hash() {
		t.Fatalf("the refused run directory was changed: %v", err)
	}
	r.Mismatch = MismatchRerun
	sum, err = r.Run(context.Background(), plan.Jobs)
	if err != nil || sum.Started != 1 || sum.Succeeded != 1 || sum.SetAside != 1 || sum.Resumed != 0 {
		t.Fatalf("rerun: %v %v %v\n%s", sum, err, sum.Failed, log.String())
	}
	old, _ := filepath.Glob(filepath.Join(filepath.Dir(j.Dir), SupersededDir, "seed41-*", runfiles.ResultFile))
	if len(old) != 1 {
		t.Fatalf("set-aside results %v", old)
	}
	if st, note := Inspect(j); st != Finished {
		t.Errorf("after the rerun: %v %s", st, note)
	}
	r.Mismatch = "ignore"
	if _, err := r.Run(context.Background(), plan.Jobs); err == nil || !strings.Contains(err.Error(), "-mismatch") {
		t.Errorf("a bad policy: %v", err)
	}
}

// TestSlurmMismatch: the Slurm writer applies the same -mismatch policy as the local runner:
// refused (an error naming the job and the flag, nothing listed), or set aside and listed.
func TestSlurmMismatch(t *testing.T) {
	dir := t.TempDir()
	plan, j, _ := mismatchedPlan(t, dir)
	sl := Slurm{Dir: filepath.Join(dir, "slurm"), TrainBin: "/bin/true", CPUs: 1, Mem: "100M", GPU: "none", Time: time.Hour}
	if _, _, err := WriteSlurm(plan, sl, writeTestConfig); err == nil || !strings.Contains(err.Error(), "-mismatch rerun") ||
		!strings.Contains(err.Error(), "dataset.subset 1000 (want 0)") {
		t.Fatalf("refuse: %v", err)
	}
	if _, err := os.Stat(filepath.Join(j.Dir, runfiles.ResultFile)); err != nil {
		t.Fatalf("the refused run directory was changed: %v", err)
	}
	sl.Mismatch = MismatchRerun
	if _, n, err := WriteSlurm(plan, sl, writeTestConfig); err != nil || n != 1 {
		t.Fatalf("rerun: %d tasks, %v", n, err)
	}
	if old, _ := filepath.Glob(filepath.Join(filepath.Dir(j.Dir), SupersededDir, "seed41-*", runfiles.ResultFile)); len(old) != 1 {
		t.Fatalf("set-aside results %v", old)
	}
}

// TestInspectEmulatedRun: a finished run on the emulated GPU is not the grid's run on a real
// device (tables leave it out as reduced), so the sweep trains the job; it is the job's run
// when the grid asks for the emulated GPU.
func TestInspectEmulatedRun(t *testing.T) {
	protocol := loadRun(t)
	for _, tc := range []struct {
		device string
		want   State
	}{{"auto", Mismatch}, {"cuda", Mismatch}, {"cpu", Mismatch}, {"emu", Finished}} {
		dir := filepath.Join(t.TempDir(), "zr", "seed41")
		runDir(t, dir, protocol, runfiles.StopMinLR, protocol.Hash(), nil)
		res, err := runfiles.ReadResult(filepath.Join(dir, runfiles.ResultFile))
		if err != nil {
			t.Fatal(err)
		}
		res.Device = runfiles.EmulatedDevice + " (the real kernels on CPU threads; 1 SM)"
		b, _ := json.Marshal(res)
		if err := os.WriteFile(filepath.Join(dir, runfiles.ResultFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		st, note := Inspect(Job{Name: "zr", Seed: 41, Config: loadRun(t, "device="+tc.device), Dir: dir})
		if st != tc.want || (tc.want == Mismatch && !strings.Contains(note, "emulated GPU")) {
			t.Errorf("grid device %s: state %v note %q, want %v", tc.device, st, note, tc.want)
		}
	}
}
