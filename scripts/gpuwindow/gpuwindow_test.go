package gpuwindow

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rewiregnn/rewiregnn/cuda/emu"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
)

// The parked run the window resumes: NeighborsMatch r_p = 3, seed 95, 6 epochs, capped at 2 s on
// the CPU and adopted into a results root in the test's folder, as a committed parked run would be.
const (
	grid  = "fig-neighborplot"
	long  = "neighborsmatch-3-gatedgcn-adj-r1"
	queue = grid + " neighborsmatch-3-gatedgcn-adj-r[1] 95 train.max_epochs=6\n"
)

// TestWindowEmulated builds a window (scripts/gpu-window.sh build, this commit as the base, a
// queue of one parked run) and runs it on the emulated GPU, as one device call would: the
// bundle leaves out the campaign's trainer and the parked run's folder, check refuses a window
// over its travel limit, the run writes at most 8 files with every step's summary, the campaign
// resumes the parked run from the results root (the tree) and collect finishes it. About two
// minutes on 2 cores; skipped under -short.
func TestWindowEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the window (three bundles) and runs it on the emulator: skipped under -short")
	}
	for _, tool := range []string{"bash", "tar", "xz", "gzip", "split", "sha256sum", "timeout", "go", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH: %v", tool, err)
		}
	}
	if err := emu.Skip(); err != nil {
		t.Skip(err)
	}
	dataDir := testdata.Dir(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	// The window's folder must be inside the checkout and ignored by git (.gpuwin is).
	rel := filepath.Join(".gpuwin", fmt.Sprintf("test-%d-%d", os.Getpid(), time.Now().UnixNano()))
	win := filepath.Join(root, rel)
	t.Cleanup(func() { os.RemoveAll(win) })
	results, qf := filepath.Join(tmp, "results"), filepath.Join(tmp, "queue.txt")
	if err := os.WriteFile(qf, []byte(queue), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "CAMPAIGN_RESULTS="+results, "CAMPAIGN_QUEUE="+qf, "TMPDIR="+tmp, "GOMAXPROCS=1",
		data.EnvDataDir+"="+dataDir, "GPU_WINDOW_XZ=-0", fmt.Sprintf("GPU_WINDOW_MAX_TRAVEL=%d", 1<<40),
		"CAMPAIGN_CPU_DIR="+filepath.Join(tmp, "cpu")) // not this checkout's CPU window, which may be running
	sh := func(extra []string, script string, args ...string) (string, error) {
		cmd := exec.Command("bash", append([]string{script}, args...)...)
		cmd.Env, cmd.Dir = append(env, extra...), root
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	script := filepath.Join(root, "scripts", "gpu-window.sh")
	campaign := filepath.Join(root, "scripts", "campaign.sh")

	// The parked run: capped on the CPU, adopted into the results root.
	trainer := filepath.Join(tmp, "train")
	build := exec.Command("go", "build", "-o", trainer, "./cmd/train")
	build.Dir, build.Env = root, env
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/train: %v\n%s", err, out)
	}
	cpuRuns := filepath.Join(tmp, "cpu-runs")
	capped := exec.Command(trainer, "-config", filepath.Join(root, "configs", "neighborsmatch-3", "gatedgcn-adj-r1.yaml"),
		"-seed", "95", "-out", cpuRuns, "-quiet", "-device", "cpu", "-max-time", "2s", "-set", "train.max_epochs=6")
	capped.Env = env
	if out, err := capped.CombinedOutput(); err != nil {
		t.Fatalf("capped CPU run: %v\n%s", err, out)
	}
	if out, err := sh(nil, campaign, "adopt", cpuRuns, grid); err != nil || !strings.Contains(out, "1 unfinished") {
		t.Fatalf("adopt: %v\n%s", err, out)
	}
	parked := filepath.Join(results, grid, "unfinished", long, "seed95")

	// build: a folder outside the checkout or not ignored is refused before anything is built.
	if out, err := sh(nil, script, "build", filepath.Join(tmp, "w")); err == nil || !strings.Contains(out, "not inside the checkout") {
		t.Errorf("build outside the checkout: %v\n%s", err, out)
	}
	// … and so is a build while a CPU window runs (it holds its lock).
	if _, err := exec.LookPath("flock"); err == nil {
		lockFile := filepath.Join(tmp, "cpu", "lock")
		if err := os.MkdirAll(filepath.Dir(lockFile), 0o755); err != nil {
			t.Fatal(err)
		}
		hold := exec.Command("flock", lockFile, "sleep", "120")
		hold.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // flock and its sleep share the lock: kill both
		if err := hold.Start(); err != nil {
			t.Fatal(err)
		}
		for end := time.Now().Add(10 * time.Second); exec.Command("flock", "-n", lockFile, "true").Run() == nil; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatal("flock never took the lock")
			}
		}
		out, err := sh(nil, script, "build", rel)
		syscall.Kill(-hold.Process.Pid, syscall.SIGKILL)
		hold.Wait()
		if err == nil || !strings.Contains(out, "the CPU campaign runs") {
			t.Errorf("build while a CPU window runs: %v\n%s", err, out)
		}
	}
	out, err := sh(nil, script, "build", rel, "-base", "HEAD")
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	if !strings.Contains(out, "carry [\""+rel+"\"]") || !strings.Contains(out, "travel: tree ") {
		t.Errorf("build does not print the travel bytes and the device call:\n%s", out)
	}
	list, err := exec.Command("tar", "-tJf", filepath.Join(win, "window.tar.xz")).CombinedOutput()
	if err != nil {
		t.Fatalf("tar -t: %v\n%s", err, list)
	}
	members := "\n" + string(list)
	for _, want := range []string{"./gpu-check/bin/train\n", "./gpu-check/bin/gpubench\n", "./gpu-speed/bin/gpubench-base\n",
		"./campaign/jobs.txt\n", "./campaign/campaign.sh\n", "./gpu-window.sh\n", "./BUILD-INFO\n"} {
		if !strings.Contains(members, "\n"+want) {
			t.Errorf("window.tar.xz lacks %s", strings.TrimSpace(want))
		}
	}
	for _, not := range []string{"./campaign/train\n", "./campaign/train.gz\n", "seed95/checkpoint.bin\n", "nvrtc-compute70"} {
		if strings.Contains(members, not) {
			t.Errorf("window.tar.xz holds %s (the tree or gpu-check brings it, or it is left out)", strings.TrimSpace(not))
		}
	}
	if out, err := sh([]string{"GPU_WINDOW_MAX_TRAVEL=1000"}, script, "check", rel); err == nil || !strings.Contains(out, "over 1000") {
		t.Errorf("check with a 1000-byte limit: %v\n%s", err, out)
	}

	// run, as the device call would: from the repository root, the window's own copy of the
	// script, a fresh OUT; a short gpu-check and the speed comparison's first step only.
	outDir := filepath.Join(tmp, "out")
	speedSkip := "eager,base,unroll1,nofold,nogate,gradw,torch,profile-graphs,profile-eager,concurrent,tf32,bf16,evalbig"
	// The emulated steps get generous limits (EXTRA_S, ZINC_S): this checks that each step runs
	// and succeeds, not how fast, and a loaded 2-core machine (the suite beside the CPU
	// campaign) took the zinc4 step past its default 15 s a build.
	out, err = sh([]string{"GPU_CHECK_ONLY=env", "SPEED_SKIP=" + speedSkip, "CAMPAIGN_K=1", "EXTRA_S=240", "ZINC_S=180"},
		filepath.Join(win, "gpu-window.sh"), "run", rel, outDir, "-emu", "-budget", "900")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	var files []string
	filepath.Walk(outDir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			files = append(files, strings.TrimPrefix(p, outDir+"/"))
		}
		return nil
	})
	if len(files) > 8 {
		t.Errorf("%d files in OUT, the device tool brings back 8: %v", len(files), files)
	}
	if _, err := os.Stat(filepath.Join(outDir, "campaign", "runner.pid")); err == nil {
		t.Error("OUT/campaign/runner.pid came back: one of the 8 files spent on a pid")
	}
	for _, want := range []string{"window.txt", "window-logs.tar.gz", "campaign/campaign.log", "campaign/summary.txt", "campaign/pack.tar.gz.0"} {
		if _, err := os.Stat(filepath.Join(outDir, want)); err != nil {
			t.Errorf("run wrote no %s: %v (files %v)", want, err, files)
		}
	}
	sum, _ := os.ReadFile(filepath.Join(outDir, "window.txt"))
	t.Logf("window.txt:\n%s", sum)
	for _, want := range []string{"gpu-check (quick, emulated GPU)", "RESULT: OK", "| zinc r = 1 |", "speed: exit 0",
		"zinc4 this: exit 0", "zinc4 base: exit 0", "zinc: exit 0", "1 parked, copied from the tree", "campaign: exit 0"} {
		if !strings.Contains(string(sum), want) {
			t.Errorf("window.txt lacks %q:\n%s", want, sum)
		}
	}
	logs, err := exec.Command("tar", "-tzf", filepath.Join(outDir, "window-logs.tar.gz")).CombinedOutput()
	if err != nil || !strings.Contains(string(logs), "logs/zinc4.jsonl") || !strings.Contains(string(logs), "logs/speed/summary.md") {
		t.Errorf("window-logs.tar.gz: %v\n%s", err, logs)
	}

	// collect: the parked run finished in the window.
	if out, err := sh(nil, campaign, "collect", filepath.Join(outDir, "campaign")); err != nil || !strings.Contains(out, "1 finished") {
		t.Fatalf("collect: %v\n%s", err, out)
	}
	res, err := os.ReadFile(filepath.Join(results, grid, "runs", long, "seed95", "result.json"))
	if err != nil || !strings.Contains(string(res), `"stopped_by": "max_epochs"`) {
		t.Errorf("the resumed run's result: %v\n%s", err, res)
	}
	if _, err := os.Stat(parked); !os.IsNotExist(err) {
		t.Errorf("the finished run is still parked in %s (%v)", parked, err)
	}
}
