package campaign

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpuEnv is env with the CPU mode's folder in the test's temporary folder.
func cpuEnv(t *testing.T, queue string) (*env, string) {
	for _, tool := range []string{"flock", "setsid", "nice", "pkill"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH: %v", tool, err)
		}
	}
	e := newEnv(t)
	if err := os.WriteFile(e.qf, []byte(queue), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.tmp, "cpu")
	e.vars = append(e.vars, "CAMPAIGN_CPU_DIR="+dir)
	return e, dir
}

// try runs campaign.sh and returns its output and whether it succeeded.
func (e *env) try(args ...string) (string, bool) {
	cmd := exec.Command("bash", append([]string{e.script()}, args...)...)
	cmd.Env, cmd.Dir = e.vars, e.tmp
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

// running: whether the CPU window holds its lock (what start and collect look at).
func running(dir string) bool {
	return exec.Command("flock", "-n", filepath.Join(dir, "lock"), "true").Run() != nil
}

// waitIdle waits until the CPU window in dir has ended (its lock is free).
func waitIdle(t *testing.T, dir string, limit time.Duration) {
	t.Helper()
	for end := time.Now().Add(limit); running(dir); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the CPU window in %s still runs after %v", dir, limit)
		}
	}
}

// proc is one process of /proc: its pid, command name, session and nice value.
type proc struct {
	pid, sid, nice int
	comm           string
}

// procs reads every process's /proc/PID/stat (pid (comm) state ppid pgrp session … nice is
// field 19; comm may hold spaces).
func procs() []proc {
	var out []proc
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range dirs {
		st, err := os.ReadFile(filepath.Join(p, "stat"))
		i, j := bytes.IndexByte(st, '('), bytes.LastIndexByte(st, ')')
		if err != nil || i < 0 || j < i {
			continue
		}
		f := strings.Fields(string(st[j+2:]))
		if len(f) < 17 {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(p))
		sid, _ := strconv.Atoi(f[3])
		n, _ := strconv.Atoi(f[16])
		out = append(out, proc{pid: pid, sid: sid, nice: n, comm: string(st[i+1 : j])})
	}
	return out
}

// trainers lists the processes of the session sid whose command is the bundle's trainer, with
// each one's nice value and environment.
func trainers(t *testing.T, sid int) (pids []int, nice []int, environ []string) {
	t.Helper()
	for _, p := range procs() {
		if p.sid != sid || p.comm != "train" {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.pid), "environ"))
		pids, nice, environ = append(pids, p.pid), append(nice, p.nice), append(environ, string(env))
	}
	return pids, nice, environ
}

// killSession kills every process of session sid at once with SIGKILL: the machine stops.
func killSession(t *testing.T, sid int) {
	t.Helper()
	for _, p := range procs() {
		if p.sid == sid {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
}

func runnerPid(t *testing.T, dir string) int {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		b, err := os.ReadFile(filepath.Join(dir, "out", "runner.pid"))
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil {
			return pid
		}
		if time.Now().After(end) {
			t.Fatalf("no runner.pid in %s/out: %v", dir, err)
		}
	}
}

func lines(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("\n"))
}

// TestCampaignCPUMode: the CPU mode end to end. Window 1 starts in the background (a second
// start is refused while it runs; its trainers run at nice 19 on one thread each), reaches its
// budget (SIGTERM: the long run checkpoints), packs, and is collected: the quick run finished,
// the long one parked. Window 1b resumes it and is stopped by cpu stop: it packs by itself. Window 2 resumes the long run and is killed without a word (SIGKILL to
// every process: the machine stopped); start is refused until collect has packed the run
// folders from their last checkpoints and parked the run again. Window 3 resumes it and
// finishes; the result equals an uninterrupted run of the same config bit for bit.
func TestCampaignCPUMode(t *testing.T) {
	if testing.Short() {
		t.Skip("three background windows of CPU training (about a minute): skipped under -short")
	}
	const longEps = 10
	e, dir := cpuEnv(t, grid+" "+quick+" 41 train.max_epochs=3\n"+
		grid+" "+long+" 41 train.max_epochs="+strconv.Itoa(longEps)+"\n")
	logDir := filepath.Join(dir, "campaign", "runs", grid, long, "seed41")

	// Window 1: 8 s of training, SIGTERM 2 s before its end.
	start := e.sh(e.script(), "cpu", "start", "-b", "8", "-m", "2", "-s", "1")
	if !strings.Contains(start, "2 jobs, 2 trainers (nice 19, one thread each)") {
		t.Errorf("cpu start:\n%s", start)
	}
	if out, ok := e.try("cpu", "start", "-b", "60"); ok || !strings.Contains(out, "a CPU campaign is running") {
		t.Errorf("a second start while the window runs: ok=%v, want refused:\n%s", ok, out)
	}
	sid := runnerPid(t, dir)
	var pids, nice []int
	var environ []string
	for end := time.Now().Add(10 * time.Second); len(pids) == 0 && time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		pids, nice, environ = trainers(t, sid)
	}
	if len(pids) == 0 {
		t.Errorf("no trainer of the window's session %d found", sid)
	}
	for i := range pids {
		if nice[i] != 19 || !strings.Contains("\x00"+environ[i], "\x00GOMAXPROCS=1\x00") {
			t.Errorf("trainer %d: nice %d, GOMAXPROCS=1 in its environment %v; want nice 19, one thread",
				pids[i], nice[i], strings.Contains(environ[i], "GOMAXPROCS=1"))
		}
	}
	if st := e.sh(e.script(), "cpu", "status"); !strings.Contains(st, "running: runner started") {
		t.Errorf("cpu status while running:\n%s", st)
	}
	waitIdle(t, dir, 60*time.Second)
	if out, ok := e.try("cpu", "start", "-b", "60"); ok || !strings.Contains(out, "not collected") {
		t.Errorf("start before the last window is collected: ok=%v, want refused:\n%s", ok, out)
	}
	col := e.sh(e.script(), "cpu", "collect")
	t.Logf("window 1:\n%s", col)
	// the quick run (3 epochs) finishes here unless the machine is very slow; then window 3 does
	if !(strings.Contains(col, "collected: 1 finished, 1 unfinished") || strings.Contains(col, "collected: 0 finished, 2 unfinished")) ||
		!strings.Contains(col, "what changed under") {
		t.Fatalf("window 1's collect: want the long run parked (and the quick one finished or parked):\n%s", col)
	}
	parked := e.runDir("unfinished", long)
	if r := result(t, parked); r["stopped_by"] != "signal" {
		t.Fatalf("long run after window 1: stopped_by %v, want signal (the budget's SIGTERM)", r["stopped_by"])
	}
	eps1 := lines(t, filepath.Join(parked, "metrics.jsonl"))

	// Window 1b: stopped by cpu stop once the long run has trained one more epoch: the runner
	// waits for its trainers' checkpoints, packs, and the collect finds the window's own pack.
	e.sh(e.script(), "cpu", "start", "-b", "300", "-m", "2", "-s", "1")
	runnerPid(t, dir)
	for end := time.Now().Add(60 * time.Second); lines(t, filepath.Join(logDir, "metrics.jsonl")) < eps1+1; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(end) || !running(dir) {
			t.Fatalf("window 1b: the long run did not reach epoch %d (running %v)", eps1+1, running(dir))
		}
	}
	if out := e.sh(e.script(), "cpu", "stop"); !strings.Contains(out, "stopped;") {
		t.Errorf("cpu stop:\n%s", out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out", "campaign.log")); err != nil || !strings.Contains(string(b), "trainers done") || !strings.Contains(string(b), "packed at") {
		t.Errorf("window 1b: the runner did not pack after cpu stop (%v):\n%s", err, b)
	}
	col = e.sh(e.script(), "cpu", "collect")
	t.Logf("window 1b:\n%s", col)
	if strings.Contains(col, "without its pack") || !strings.Contains(col, "unfinished: "+parked) {
		t.Fatalf("window 1b's collect: want the window's own pack and the long run parked again:\n%s", col)
	}
	eps1 = lines(t, filepath.Join(parked, "metrics.jsonl"))

	// Window 2: killed without a word once the long run has trained two more epochs.
	e.sh(e.script(), "cpu", "start", "-b", "300", "-m", "2", "-s", "1")
	sid = runnerPid(t, dir)
	for end := time.Now().Add(60 * time.Second); lines(t, filepath.Join(logDir, "metrics.jsonl")) < eps1+2; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(end) || !running(dir) {
			t.Fatalf("window 2: the long run did not reach epoch %d (running %v)", eps1+2, running(dir))
		}
	}
	killSession(t, sid)
	waitIdle(t, dir, 20*time.Second)
	if _, err := os.Stat(filepath.Join(dir, "out", "pack.tar.gz.0")); err == nil {
		t.Fatal("window 2 packed: it was not killed in time")
	}
	col = e.sh(e.script(), "cpu", "collect")
	t.Logf("window 2:\n%s", col)
	eps2 := lines(t, filepath.Join(parked, "metrics.jsonl"))
	if !strings.Contains(col, "unfinished: "+parked) || eps2 < eps1+2 || eps2 >= longEps {
		t.Fatalf("window 2's collect: want the long run parked with %d to %d epochs, has %d:\n%s", eps1+2, longEps-1, eps2, col)
	}

	// Window 3 finishes it; meanwhile the uninterrupted reference trains with the bundle's trainer.
	e.sh(e.script(), "cpu", "start", "-b", "300", "-m", "2", "-s", "1")
	ref := filepath.Join(e.tmp, "ref")
	runnerPid(t, dir) // the runner has unpacked the trainer
	cmd := exec.Command(filepath.Join(dir, "campaign", "train"), "-config",
		filepath.Join(dir, "campaign", "runs", grid, ".sweep", "configs", long+".yaml"),
		"-seed", "41", "-out", ref, "-quiet", "-device", "cpu", "-set", fmt.Sprintf("train.max_epochs=%d", longEps))
	cmd.Env = e.vars
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	waitIdle(t, dir, 120*time.Second)
	col = e.sh(e.script(), "cpu", "collect")
	t.Logf("window 3:\n%s", col)
	if r := result(t, e.runDir("runs", quick)); r["stopped_by"] != "max_epochs" {
		t.Errorf("quick run: stopped_by %v, want max_epochs", r["stopped_by"])
	}
	fin := e.runDir("runs", long)
	if r := result(t, fin); r["stopped_by"] != "max_epochs" || r["epochs"] != float64(longEps) || r["resumed"] != float64(3) {
		t.Fatalf("long run after window 3: stopped_by %v, epochs %v, resumed %v; want max_epochs, %d, three times",
			r["stopped_by"], r["epochs"], r["resumed"], longEps)
	}
	if _, err := os.Stat(parked); !os.IsNotExist(err) {
		t.Errorf("the finished run is still parked (%v)", err)
	}
	want := epochs(t, filepath.Join(ref, long, "seed41", "metrics.jsonl"))
	got := epochs(t, filepath.Join(fin, "metrics.jsonl"))
	if len(want) != longEps || !reflect.DeepEqual(got, want) {
		t.Errorf("stopped at a budget, by cpu stop, killed, resumed three times: differs from the uninterrupted run:\n got %v\nwant %v", got, want)
	}
	if st := e.sh(e.script(), "cpu", "status"); !strings.Contains(st, "the last window is collected") {
		t.Errorf("cpu status after the collect:\n%s", st)
	}
}
