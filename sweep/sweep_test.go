package sweep

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

var (
	fakeOnce sync.Once
	fakeBin  string
	fakeErr  error
)

// fakeTrainer builds testdata/faketrain once per test binary.
func fakeTrainer(t *testing.T) string {
	t.Helper()
	fakeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "faketrain")
		if err != nil {
			fakeErr = err
			return
		}
		fakeBin = filepath.Join(dir, "faketrain")
		out, err := exec.Command("go", "build", "-o", fakeBin, "./testdata/faketrain").CombinedOutput()
		if err != nil {
			fakeErr = fmt.Errorf("building the fake trainer: %v\n%s", err, out)
		}
	})
	if fakeErr != nil {
		t.Fatal(fakeErr)
	}
	return fakeBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fakeBin != "" {
		os.RemoveAll(filepath.Dir(fakeBin))
	}
	os.Exit(code)
}

// writeTestConfig writes the little the fake trainer reads.
func writeTestConfig(path string, run *config.Run) error {
	return os.WriteFile(path, []byte(fmt.Sprintf("name: %s\ndevice: %s\n", run.Name, run.Device)), 0o644)
}

func testRuns(device string, names ...string) []*config.Run {
	var runs []*config.Run
	for _, n := range names {
		runs = append(runs, &config.Run{Name: n, Device: device, Train: config.Train{Seeds: []int64{41, 95}}})
	}
	return runs
}

func readLines(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// A sweep in which some trainers fail midway is finished by a second invocation, which starts
// only the missing jobs and resumes those with a checkpoint.
func TestResumeHalfFinishedSweep(t *testing.T) {
	bin := fakeTrainer(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "runs")
	plan, err := NewPlan("g", "table:zinc", testRuns("cpu", "a", "b", "c"), out, filepath.Join(out, ".sweep", "configs"))
	if err != nil {
		t.Fatal(err)
	}
	argsLog := filepath.Join(dir, "args.log")
	var log bytes.Buffer
	r := &Runner{TrainBin: bin, Workers: 2, WriteConfig: writeTestConfig, Log: &log,
		Env: []string{"FAKE_FAIL=b/41,c/95", "FAKE_ARGS_LOG=" + argsLog, "FAKE_SLEEP_MS=20", "FAKE_CONFIG_HASH=" + plan.Jobs[0].Config.Hash()}}
	sum, err := r.Run(context.Background(), plan.Jobs)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Total != 6 || sum.Skipped != 0 || sum.Started != 6 || sum.Succeeded != 4 || len(sum.Failed) != 2 || sum.Resumed != 0 {
		t.Fatalf("first sweep: %v\n%s", sum, log.String())
	}
	if f := sum.Failed; f[0].Job.String() != "b seed 41" || f[1].Job.String() != "c seed 95" || !strings.Contains(f[0].Err.Error(), "exit status 5") {
		t.Errorf("failures %v", f)
	}
	if !strings.Contains(sum.Failed[0].Err.Error(), "failing on purpose") {
		t.Errorf("the failure does not quote the trainer's log: %v", sum.Failed[0].Err)
	}
	// a job interrupted before its first checkpoint: nothing left but an unverifiable result
	aDir := RunDir(out, "a", 95)
	os.Remove(filepath.Join(aDir, runfiles.CheckpointFile))
	os.WriteFile(filepath.Join(aDir, runfiles.ResultFile), []byte(`{"name":"a"`), 0o644)

	if n := len(readLines(t, argsLog)); n != 6 {
		t.Fatalf("%d trainer invocations, want 6", n)
	}
	os.Remove(argsLog)
	log.Reset()
	r.Env = []string{"FAKE_FAIL=b/41,c/95", "FAKE_ARGS_LOG=" + argsLog, "FAKE_CONFIG_HASH=" + plan.Jobs[0].Config.Hash()}
	sum, err = r.Run(context.Background(), plan.Jobs)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Total != 6 || sum.Skipped != 3 || sum.Started != 3 || sum.Resumed != 2 || sum.Succeeded != 3 || len(sum.Failed) != 0 {
		t.Fatalf("second sweep: %v\n%s", sum, log.String())
	}
	lines := readLines(t, argsLog)
	resumed := 0
	for _, l := range lines {
		if strings.Contains(l, "-resume") {
			resumed++
			if !strings.Contains(l, "-resume "+RunDir(out, "b", 41)) && !strings.Contains(l, "-resume "+RunDir(out, "c", 95)) {
				t.Errorf("unexpected resume: %s", l)
			}
			if strings.Contains(l, "-config") {
				t.Errorf("-resume with -config: %s", l)
			}
		} else if !strings.Contains(l, "-seed 95") || !strings.Contains(l, filepath.Join(".sweep", "configs", "a.yaml")) {
			t.Errorf("unexpected fresh start: %s", l)
		}
	}
	if len(lines) != 3 || resumed != 2 {
		t.Errorf("second sweep invocations:\n%s", strings.Join(lines, "\n"))
	}
	if !strings.Contains(log.String(), "unexpected EOF") || !strings.Contains(log.String(), "skip a seed 41") {
		t.Errorf("log:\n%s", log.String())
	}
	// everything finished now: a third run starts nothing
	sum, err = r.Run(context.Background(), plan.Jobs)
	if err != nil || sum.Skipped != 6 || sum.Started != 0 {
		t.Errorf("third sweep: %v %v", sum, err)
	}
	// every job wrote its trainer output to its run dir
	if b, err := os.ReadFile(filepath.Join(RunDir(out, "b", 41), LogFile)); err != nil || strings.Count(string(b), "==== ") != 2 {
		t.Errorf("train.log of b/41: %v\n%s", err, b)
	}
}

// GPU jobs run one per device at a time, with CUDA_VISIBLE_DEVICES set; CPU jobs beside them.
func TestGPUJobsOnePerDevice(t *testing.T) {
	bin := fakeTrainer(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "runs")
	plan, err := NewPlan("g", "", testRuns("cuda", "g1", "g2", "g3"), out, filepath.Join(dir, "cfg"))
	if err != nil {
		t.Fatal(err)
	}
	argsLog := filepath.Join(dir, "args.log")
	r := &Runner{TrainBin: bin, Workers: 4, GPUs: []string{"7"}, WriteConfig: writeTestConfig,
		Env: []string{"FAKE_EXCLUSIVE=" + filepath.Join(dir, "gpu.lock"), "FAKE_ARGS_LOG=" + argsLog, "FAKE_SLEEP_MS=30"}}
	sum, err := r.Run(context.Background(), plan.Jobs)
	if err != nil || sum.Succeeded != 6 {
		t.Fatalf("%v %v %v", sum, err, sum.Failed)
	}
	for _, l := range readLines(t, argsLog) {
		if !strings.HasSuffix(l, "CUDA_VISIBLE_DEVICES=7") {
			t.Errorf("no device: %s", l)
		}
	}
}

func TestInspect(t *testing.T) {
	dir := t.TempDir()
	j := Job{Name: "x", Seed: 41, Dir: filepath.Join(dir, "x", "seed41"), Config: testRuns("cpu", "x")[0]}
	if st, _ := Inspect(j); st != Pending {
		t.Errorf("empty: %v", st)
	}
	os.MkdirAll(j.Dir, 0o755)
	os.WriteFile(filepath.Join(j.Dir, runfiles.CheckpointFile), []byte("c"), 0o644)
	if st, _ := Inspect(j); st != Resumable {
		t.Errorf("checkpoint: %v", st)
	}
	good := `{"name":"x","dataset":"zinc","model":"gatedgcn","r":1,"seed":41,"metric":"mae","epochs":3,"stopped_by":"%s","config_hash":"` + j.Config.Hash() + `"}`
	os.WriteFile(filepath.Join(j.Dir, runfiles.ResultFile), []byte(fmt.Sprintf(good, "min_lr")), 0o644)
	if st, _ := Inspect(j); st != Finished {
		t.Errorf("result: %v", st)
	}
	os.WriteFile(filepath.Join(j.Dir, runfiles.ResultFile), []byte(fmt.Sprintf(good, "signal")), 0o644)
	if st, note := Inspect(j); st != Resumable || !strings.Contains(note, "signal") {
		t.Errorf("signal: %v %s", st, note)
	}
	os.WriteFile(filepath.Join(j.Dir, runfiles.ResultFile), []byte(fmt.Sprintf(good, "nan")), 0o644)
	if st, note := Inspect(j); st != Diverged || !strings.Contains(note, "non-finite") {
		t.Errorf("nan: %v %s", st, note)
	}
	var log bytes.Buffer
	sum, err := (&Runner{TrainBin: "/nonexistent", Workers: 1, WriteConfig: writeTestConfig, Log: &log}).Run(context.Background(), []Job{j})
	if err != nil || len(sum.Failed) != 1 || sum.Started != 0 {
		t.Errorf("a diverged run is reported, not rerun: %v %v", sum, err)
	}
	j.Seed = 95
	os.WriteFile(filepath.Join(j.Dir, runfiles.ResultFile), []byte(fmt.Sprintf(good, "min_lr")), 0o644)
	if st, note := Inspect(j); st != Resumable || !strings.Contains(note, "seed 41") {
		t.Errorf("other seed: %v %s", st, note)
	}
}

func TestNewPlanErrors(t *testing.T) {
	for _, c := range []struct {
		runs []*config.Run
		want string
	}{
		{testRuns("cpu", "a", "a"), `runs 0 and 1 are both named "a"`},
		{[]*config.Run{{Name: "a"}}, "run a has no train.seeds"},
		{testRuns("cpu", "x/y"), "cannot be a folder name"},
		{[]*config.Run{{Name: "a", Train: config.Train{Seeds: []int64{1, 1}}}}, "seed 1 twice"},
		{nil, "no runs"},
	} {
		if _, err := NewPlan("g", "", c.runs, "out", "cfg"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
	p, err := NewPlan("g", "", testRuns("cpu", "a", "b"), "out", "cfg")
	if err != nil || len(p.Jobs) != 4 || p.Jobs[3].Dir != filepath.Join("out", "b", "seed95") || p.Jobs[3].ConfigPath != filepath.Join("cfg", "b.yaml") {
		t.Errorf("%v %+v", err, p)
	}
}

// TestConfigWritten: a job's config counts as written only when its file holds what
// WriteConfigs with WriteConfig writes for the job.
func TestConfigWritten(t *testing.T) {
	run, err := config.Load("", []string{"dataset.name=zinc", "name=zinc-run"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan("g", "", []*config.Run{run}, filepath.Join(t.TempDir(), "runs"), "")
	if err != nil {
		t.Fatal(err)
	}
	j := p.Jobs[0]
	if ConfigWritten(j) {
		t.Fatalf("%s: written before anything was written", j.ConfigPath)
	}
	if err := WriteConfigs(p.Jobs, WriteConfig); err != nil {
		t.Fatal(err)
	}
	if !ConfigWritten(j) {
		t.Errorf("%s: not written after WriteConfigs", j.ConfigPath)
	}
	if err := os.WriteFile(j.ConfigPath, []byte("dataset: {name: aqsol}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ConfigWritten(j) {
		t.Errorf("%s: a file of another config counts as written", j.ConfigPath)
	}
}
