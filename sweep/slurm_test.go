package sweep

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

func TestSlurmTime(t *testing.T) {
	for d, want := range map[time.Duration]string{
		12*time.Hour + 30*time.Minute: "0-12:30:00",
		25 * time.Hour:                "1-01:00:00",
		90 * time.Second:              "0-00:02:00",
		6*time.Hour + DefaultMargin:   "0-06:30:00",
	} {
		if got := SlurmTime(d); got != want {
			t.Errorf("SlurmTime(%v) = %s, want %s", d, got, want)
		}
	}
}

func slurmRuns(device string, maxTime time.Duration, names ...string) []*config.Run {
	runs := testRuns(device, names...)
	for _, r := range runs {
		r.Train.MaxTime = maxTime
	}
	return runs
}

func finishJob(t *testing.T, j Job) {
	t.Helper()
	os.MkdirAll(j.Dir, 0o755)
	b := fmt.Sprintf(`{"name":%q,"dataset":"zinc","model":"gatedgcn","r":1,"seed":%d,"metric":"mae","epochs":3,"stopped_by":"min_lr","config_hash":%q}`, j.Name, j.Seed, j.Config.Hash())
	if err := os.WriteFile(filepath.Join(j.Dir, runfiles.ResultFile), []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSlurmScriptContent(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "runs")
	plan, err := NewPlan("zinc-small", "table:zinc", slurmRuns("cuda", 2*time.Hour, "a", "b"), out, "unused")
	if err != nil {
		t.Fatal(err)
	}
	finishJob(t, plan.Jobs[1]) // a seed 95 is done
	sl := Slurm{Dir: filepath.Join(dir, "slurm"), TrainBin: "/opt/bin/train", Partition: "gpu", Account: "lab",
		CPUs: 4, Mem: "16G", GPU: "auto", Margin: DefaultMargin, MaxParallel: 2}
	script, n, err := WriteSlurm(plan, sl, writeTestConfig)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("%d tasks, want 3", n)
	}
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{
		"#!/bin/bash\n",
		"#SBATCH --job-name=zinc-small\n",
		"#SBATCH --array=0-2%2\n",
		"#SBATCH --time=0-02:30:00\n",
		"#SBATCH --cpus-per-task=4\n",
		"#SBATCH --mem=16G\n",
		"#SBATCH --gres=gpu:1\n",
		"#SBATCH --partition=gpu\n",
		"#SBATCH --account=lab\n",
		"#SBATCH --output=" + filepath.Join(sl.Dir, "logs", "%A_%a.out") + "\n",
		"TRAIN=/opt/bin/train\n",
		`sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" "$LIST"`,
		`args=(-resume "$dir")`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
		t.Errorf("bash -n: %v %s", err, out)
	}
	list := readLines(t, filepath.Join(sl.Dir, SlurmList))
	if len(list) != 3 {
		t.Fatalf("run list:\n%s", strings.Join(list, "\n"))
	}
	want0 := filepath.Join(sl.Dir, "configs", "a.yaml") + "\t41\t" + filepath.Join(out, "a", "seed41") + "\t" // no departures
	if list[0] != want0 || !strings.HasPrefix(list[2], filepath.Join(sl.Dir, "configs", "b.yaml")+"\t95\t") {
		t.Errorf("run list:\n%s\nwant first line %s", strings.Join(list, "\n"), want0)
	}
	if _, err := os.Stat(filepath.Join(sl.Dir, "configs", "b.yaml")); err != nil {
		t.Error(err)
	}
	if st, err := os.Stat(filepath.Join(sl.Dir, "logs")); err != nil || !st.IsDir() {
		t.Errorf("logs folder: %v", err)
	}

	// CPU runs ask for no GPU; runs without max_time need -time
	cpu, _ := NewPlan("c", "", slurmRuns("cpu", time.Hour, "c"), out, "unused")
	sl.Dir, sl.MaxParallel = filepath.Join(dir, "cpu"), 0
	script, _, err = WriteSlurm(cpu, sl, writeTestConfig)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(script)
	if strings.Contains(string(b), "--gres") || !strings.Contains(string(b), "--array=0-1\n") || !strings.Contains(string(b), "--time=0-01:30:00") {
		t.Errorf("cpu script:\n%s", b)
	}
	nocap, _ := NewPlan("n", "", slurmRuns("cpu", 0, "n"), out, "unused")
	if _, _, err := WriteSlurm(nocap, sl, writeTestConfig); err == nil || !strings.Contains(err.Error(), "run n has no train.max_time: give -time") {
		t.Errorf("no max_time: %v", err)
	}
	sl.Time = 3 * time.Hour
	if script, _, err = WriteSlurm(nocap, sl, writeTestConfig); err != nil {
		t.Error(err)
	} else if b, _ = os.ReadFile(script); !strings.Contains(string(b), "--time=0-03:00:00") {
		t.Errorf("-time not used:\n%s", b)
	}
	sl.Mem = "lots"
	if _, _, err := WriteSlurm(nocap, sl, writeTestConfig); err == nil || !strings.Contains(err.Error(), `-mem "lots"`) {
		t.Errorf("bad mem: %v", err)
	}
}

// The script's own logic (skip, resume, run) without Slurm: each task run by bash with
// SLURM_ARRAY_TASK_ID set, the fake trainer standing in.
func TestSlurmScriptTasksWithoutSlurm(t *testing.T) {
	bin := fakeTrainer(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "runs")
	plan, err := NewPlan("g", "", slurmRuns("cpu", time.Hour, "a", "b"), out, "unused")
	if err != nil {
		t.Fatal(err)
	}
	sl := Slurm{Dir: filepath.Join(dir, "slurm"), TrainBin: bin, CPUs: 1, Mem: "100M", GPU: "auto", Margin: time.Minute}
	script, n, err := WriteSlurm(plan, sl, writeTestConfig)
	if err != nil || n != 4 {
		t.Fatal(n, err)
	}
	argsLog := filepath.Join(dir, "args.log")
	task := func(i int) error {
		cmd := exec.Command("bash", script)
		cmd.Env = append(os.Environ(), fmt.Sprintf("SLURM_ARRAY_TASK_ID=%d", i), "FAKE_FAIL=b/41", "FAKE_ARGS_LOG="+argsLog, "FAKE_SLEEP_MS=1",
			"FAKE_CONFIG_HASH="+plan.Jobs[0].Config.Hash())
		b, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, b)
		}
		return nil
	}
	for i := 0; i < 4; i++ {
		err := task(i)
		if (i == 2) != (err != nil) { // line 3 is b seed 41, which fails
			t.Errorf("task %d: %v", i, err)
		}
	}
	if err := task(2); err != nil { // the checkpoint makes it resume
		t.Errorf("task 2 again: %v", err)
	}
	lines := readLines(t, argsLog)
	if len(lines) != 5 || !strings.Contains(lines[4], "-resume "+filepath.Join(out, "b", "seed41")) {
		t.Errorf("invocations:\n%s", strings.Join(lines, "\n"))
	}
	if err := task(0); err != nil {
		t.Error(err)
	}
	if n := len(readLines(t, argsLog)); n != 5 {
		t.Errorf("a finished task ran the trainer again (%d invocations)", n)
	}
	if err := task(7); err == nil || !strings.Contains(err.Error(), "no line 8") {
		t.Errorf("task beyond the list: %v", err)
	}
	if _, n, err := WriteSlurm(plan, sl, writeTestConfig); err != nil || n != 0 {
		t.Errorf("all finished: %d tasks, %v", n, err)
	}
}

// TestSlurmRoundTrip submits a small grid to a real single-node Slurm started for the test
// (testdata/slurm/cluster.sh), with the fake trainer, and waits for every run's result. The
// first array has one failing task; the second submission lists only that one and resumes it.
// It skips where Slurm is not installed or not root; SWEEP_SLURM_TEST=0 skips it too, and
// SWEEP_SLURM_TEST=1 turns those skips into failures.
func TestSlurmRoundTrip(t *testing.T) {
	required := os.Getenv("SWEEP_SLURM_TEST") == "1"
	skip := func(format string, a ...any) {
		t.Helper()
		if required {
			t.Fatalf(format, a...)
		}
		t.Skipf(format, a...)
	}
	if os.Getenv("SWEEP_SLURM_TEST") == "0" {
		t.Skip("SWEEP_SLURM_TEST=0")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	for _, b := range []string{"slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "munged"} {
		if _, err := exec.LookPath(b); err != nil {
			skip("Slurm round trip skipped: %s not installed (apt-get install slurmctld slurmd slurm-client munge; .ci/run does this)", b)
		}
	}
	if os.Geteuid() != 0 {
		skip("Slurm round trip skipped: the private cluster needs root")
	}
	bin := fakeTrainer(t)
	dir := t.TempDir()
	cluster := filepath.Join(dir, "cluster")
	helper, _ := filepath.Abs(filepath.Join("testdata", "slurm", "cluster.sh"))
	start := exec.Command("bash", helper, "start", cluster)
	if b, err := start.CombinedOutput(); err != nil {
		skip("Slurm round trip skipped: the cluster did not start: %v\n%s", err, b)
	}
	t.Cleanup(func() {
		if b, err := exec.Command("bash", helper, "stop", cluster).CombinedOutput(); err != nil {
			t.Logf("stopping the cluster: %v %s", err, b)
		}
	})
	env := append(os.Environ(), "SLURM_CONF="+filepath.Join(cluster, "slurm.conf"),
		"FAKE_FAIL=b/95", "FAKE_SLEEP_MS=300", "FAKE_ARGS_LOG="+filepath.Join(dir, "args.log"),
		"FAKE_CONFIG_HASH="+slurmRuns("cpu", time.Minute, "a")[0].Hash())
	slurmCmd := func(name string, args ...string) (string, error) {
		cmd := exec.Command(name, args...)
		cmd.Env = env
		b, err := cmd.CombinedOutput()
		return string(b), err
	}

	out := filepath.Join(dir, "runs")
	plan, err := NewPlan("tiny", "table:zinc", slurmRuns("cpu", time.Minute, "a", "b", "c"), out, "unused")
	if err != nil {
		t.Fatal(err)
	}
	sl := Slurm{Dir: filepath.Join(dir, "slurm"), TrainBin: bin, CPUs: 1, Mem: "100M", GPU: "auto", Margin: time.Minute}
	submitAndWait := func(wantTasks int) string {
		t.Helper()
		script, n, err := WriteSlurm(plan, sl, writeTestConfig)
		if err != nil || n != wantTasks {
			t.Fatalf("WriteSlurm: %d tasks (want %d), %v", n, wantTasks, err)
		}
		t0 := time.Now()
		id, err := Submit("sbatch", script, env)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("submitted array job %s (%d tasks)", id, n)
		deadline := time.Now().Add(2 * time.Minute)
		for {
			q, err := slurmCmd("squeue", "-h", "-j", id)
			if err == nil && strings.TrimSpace(q) == "" {
				break
			}
			if time.Now().After(deadline) {
				info, _ := slurmCmd("scontrol", "show", "job", id)
				t.Fatalf("array job %s not done after 2 minutes:\n%s\n%s", id, q, info)
			}
			time.Sleep(200 * time.Millisecond)
		}
		info, err := slurmCmd("scontrol", "-o", "show", "job", id)
		if err != nil {
			t.Fatalf("scontrol: %v %s", err, info)
		}
		t.Logf("array job %s done in %s", id, time.Since(t0).Round(100*time.Millisecond))
		return info
	}

	info := submitAndWait(6)
	if c, f := strings.Count(info, "JobState=COMPLETED"), strings.Count(info, "JobState=FAILED"); c != 5 || f != 1 {
		t.Fatalf("first array: %d completed, %d failed, want 5 and 1:\n%s", c, f, info)
	}
	if _, err := os.Stat(filepath.Join(RunDir(out, "b", 95), runfiles.CheckpointFile)); err != nil {
		t.Fatalf("the failed task left no checkpoint: %v", err)
	}
	info = submitAndWait(1)
	if !strings.Contains(info, "JobState=COMPLETED") {
		t.Fatalf("second array:\n%s", info)
	}
	for _, j := range plan.Jobs {
		res, err := runfiles.ReadResult(filepath.Join(j.Dir, runfiles.ResultFile))
		if err != nil {
			t.Fatal(err)
		}
		if res.Seed != j.Seed || res.Name != j.Name {
			t.Errorf("%s: result of %s seed %d", j, res.Name, res.Seed)
		}
		if want := j.Name == "b" && j.Seed == 95; (res.Resumed == 1) != want {
			t.Errorf("%s: resumed %d", j, res.Resumed)
		}
	}
	logs, _ := filepath.Glob(filepath.Join(sl.Dir, SlurmLogs, "*.out"))
	if len(logs) != 7 {
		t.Errorf("%d task logs, want 7", len(logs))
	}
	if _, n, err := WriteSlurm(plan, sl, writeTestConfig); err != nil || n != 0 {
		t.Errorf("after both arrays: %d tasks left, %v", n, err)
	}
}
