package campaign

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rewiregnn/rewiregnn/cuda/emu"
	"github.com/rewiregnn/rewiregnn/scripts/bitcheck"
)

// The tiny queue: a run that finishes in the first window, and one that the first window
// interrupts (SIGTERM) and the second resumes and finishes.
const (
	quick   = "neighborsmatch-2-gatedgcn-adj-r2"
	long    = "neighborsmatch-3-gatedgcn-adj-r1"
	grid    = "fig-neighborplot"
	longEps = 16
	queue   = "# test queue\n" +
		grid + " " + quick + " 41 train.max_epochs=8\n" +
		grid + " neighborsmatch-3-gatedgcn-adj-r[1] 41,95 train.max_epochs=16 # a comment\n" +
		"table-cluster cluster-gatedgcn-lp-r1 41 dataset.subset=20 train.max_epochs=12\n" // seldom finishes in window 1
)

type env struct {
	t                      *testing.T
	root, tmp, results, qf string
	vars                   []string
}

func newEnv(t *testing.T) *env {
	for _, tool := range []string{"bash", "tar", "gzip", "split", "sha256sum", "timeout", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH: %v", tool, err)
		}
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	e := &env{t: t, root: root, tmp: tmp, results: filepath.Join(tmp, "results"), qf: filepath.Join(tmp, "queue.txt")}
	if err := os.WriteFile(e.qf, []byte(queue), 0o644); err != nil {
		t.Fatal(err)
	}
	e.vars = append(os.Environ(), "CAMPAIGN_RESULTS="+e.results, "CAMPAIGN_QUEUE="+e.qf, "TMPDIR="+tmp, "GOMAXPROCS=1")
	return e
}

// sh runs the repository's campaign.sh (or a bundle's copy of it) and returns its output.
func (e *env) sh(script string, args ...string) string {
	e.t.Helper()
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Env = e.vars
	cmd.Dir = e.tmp
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("campaign.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (e *env) script() string { return filepath.Join(e.root, "scripts", "campaign.sh") }

// window bundles the queue's next jobs, runs them for budget seconds (SIGTERM margin seconds
// before the end) and collects the pack; it returns the run's and the collect's output.
func (e *env) window(name, device string, budget, margin string) (string, string) {
	e.t.Helper()
	dir := filepath.Join(e.tmp, name)
	e.sh(e.script(), "bundle", dir)
	b := filepath.Join(dir, "campaign")
	if fi, err := os.Stat(filepath.Join(b, "train.gz")); err != nil || fi.Size() > 60<<20 {
		e.t.Fatalf("bundle: train.gz %v (size over 60 MiB?)", err)
	}
	out := filepath.Join(dir, "out")
	run := e.sh(filepath.Join(b, "campaign.sh"), "run", b, out, "-b", budget, "-k", "3", "-m", margin, "-s", "1", "-d", device)
	for _, f := range []string{"campaign.log", "summary.txt", "pack.tar.gz.0"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			e.t.Fatalf("run wrote no %s: %v\n%s", f, err, run)
		}
	}
	return run, e.sh(e.script(), "collect", out)
}

func (e *env) runDir(kind, name string) string { return e.seedDir(kind, name, 41) }

func (e *env) seedDir(kind, name string, seed int) string {
	return filepath.Join(e.results, grid, kind, name, fmt.Sprintf("seed%d", seed))
}

func result(t *testing.T, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// epochs reads metrics.jsonl without its clock fields (the rest must match bit for bit).
func epochs(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, k := range bitcheck.EpochTiming { // the measurements: wall times and peak memory
			delete(m, k)
		}
		out = append(out, m)
	}
	return out
}

// TestCampaignTwoWindowsCPU: a CPU run stopped at a short wall-clock cap is adopted into the
// queue (parked); window 1 finishes the quick run and interrupts the long one and the adopted
// one, which are parked with their checkpoints; window 2 resumes them first and finishes them;
// the resumed run equals an uninterrupted run of the same config bit for bit (CPU), and the
// adopted one ends under the protocol's cap; a CLUSTER run that finishes brings its test
// predictions back; collecting a pack again changes nothing; the tables are made from the
// collected runs. About two minutes on 2 cores.
func TestCampaignTwoWindowsCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the trainer twice and trains for about a minute: skipped under -short")
	}
	e := newEnv(t)

	// A CPU run of seed 95 capped at 2 s (-max-time), adopted: parked for the queue.
	trainer := filepath.Join(e.tmp, "train")
	build := exec.Command("go", "build", "-o", trainer, "./cmd/train")
	build.Dir, build.Env = e.root, e.vars
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/train: %v\n%s", err, out)
	}
	cpuRuns := filepath.Join(e.tmp, "cpu-runs")
	capped := exec.Command(trainer, "-config", filepath.Join(e.root, "configs", "neighborsmatch-3", "gatedgcn-adj-r1.yaml"),
		"-seed", "95", "-out", cpuRuns, "-quiet", "-device", "cpu", "-max-time", "2s", "-set", "train.max_epochs=16")
	capped.Env = e.vars
	if out, err := capped.CombinedOutput(); err != nil {
		t.Fatalf("capped CPU run: %v\n%s", err, out)
	}
	adopt := e.sh(e.script(), "adopt", cpuRuns, grid)
	if !strings.Contains(adopt, "capped") || !strings.Contains(adopt, "adopted: 0 finished, 1 unfinished") {
		t.Fatalf("adopt: want the capped run parked:\n%s", adopt)
	}

	// the parked copy names no path of this machine (out, data and cache folders)
	if b, err := os.ReadFile(filepath.Join(e.seedDir("unfinished", long, 95), "config.yaml")); err != nil ||
		strings.Contains(string(b), cpuRuns) || strings.Contains(string(b), "out: /") {
		t.Errorf("the adopted run's config.yaml names a local path (%v):\n%s", err, b)
	}

	jobs := e.sh(e.script(), "jobs")
	if !strings.Contains(jobs, "new       "+grid+" "+quick+" seed 41") || !strings.Contains(jobs, long) ||
		strings.Contains(jobs, "neighborsmatch-3-gatedgcn-adj-r2") {
		t.Fatalf("jobs: want the queued runs only:\n%s", jobs)
	}
	if !strings.Contains(jobs, "resume    "+grid+" "+long+" seed 95") || !strings.Contains(jobs, "extended to 6h") {
		t.Fatalf("jobs: want the adopted run resumed first, its cap extended to the protocol's 6h:\n%s", jobs)
	}

	// Window 1: SIGTERM 8 s in: the long run (16 epochs of 1-2 s here) cannot finish.
	run1, col1 := e.window("w1", "cpu", "10", "2")
	t.Logf("window 1:\n%s\n%s", run1, col1)
	if r := result(t, e.runDir("runs", quick)); r["stopped_by"] != "max_epochs" || r["epochs"] != float64(8) {
		t.Errorf("quick run: stopped_by %v after %v epochs, want max_epochs after 8", r["stopped_by"], r["epochs"])
	}
	parked := e.runDir("unfinished", long)
	if r := result(t, parked); r["stopped_by"] != "signal" {
		t.Fatalf("long run after window 1: stopped_by %v, want signal (parked)", r["stopped_by"])
	}
	if _, err := os.Stat(filepath.Join(parked, "checkpoint.bin")); err != nil {
		t.Fatalf("parked run has no checkpoint: %v", err)
	}
	if !strings.Contains(run1, "rc 3") {
		t.Errorf("window 1: no trainer exited with status 3 (SIGTERM, checkpointed):\n%s", run1)
	}

	jobs = e.sh(e.script(), "jobs")
	if !strings.Contains(jobs, "done      "+grid+" "+quick) || !strings.Contains(jobs, "resume    "+grid+" "+long) {
		t.Fatalf("jobs after window 1: want the quick run done and the long one to resume:\n%s", jobs)
	}

	// Window 2: long enough to finish.
	run2, col2 := e.window("w2", "cpu", "300", "5")
	t.Logf("window 2:\n%s\n%s", run2, col2)
	fin := e.runDir("runs", long)
	if r := result(t, fin); r["stopped_by"] != "max_epochs" || r["epochs"] != float64(longEps) || r["resumed"] != float64(1) {
		t.Fatalf("long run after window 2: stopped_by %v, epochs %v, resumed %v; want max_epochs, %d, once",
			r["stopped_by"], r["epochs"], r["resumed"], longEps)
	}
	if _, err := os.Stat(parked); !os.IsNotExist(err) {
		t.Errorf("the finished run is still parked in %s (%v)", parked, err)
	}
	if _, err := os.Stat(filepath.Join(fin, "checkpoint.bin")); !os.IsNotExist(err) {
		t.Errorf("a finished run's checkpoint was collected into runs/ (%v)", err)
	}

	ad := result(t, e.seedDir("runs", long, 95))
	if ad["stopped_by"] != "max_epochs" || ad["epochs"] != float64(longEps) {
		t.Errorf("adopted run: stopped_by %v after %v epochs, want max_epochs after %d", ad["stopped_by"], ad["epochs"], longEps)
	}
	if deps, _ := json.Marshal(ad["departures"]); strings.Contains(string(deps), "max_time") {
		t.Errorf("adopted run still departs on max_time after its extension: %s", deps)
	}

	// A CLUSTER run that finished writes its test predictions there; they come back with it.
	cl := filepath.Join(e.results, "table-cluster", "runs", "cluster-gatedgcn-lp-r1", "seed41")
	if r := result(t, cl); r["stopped_by"] != "max_epochs" {
		t.Errorf("CLUSTER run: stopped_by %v, want max_epochs", r["stopped_by"])
	}
	// On a fast machine it can finish in window 1 too close to the budget for train -predict:
	// then its checkpoint comes back instead, and train -predict on it writes the predictions here.
	if _, err := os.Stat(filepath.Join(cl, "predictions.bin")); os.IsNotExist(err) {
		if _, err := os.Stat(filepath.Join(cl, "checkpoint.bin")); err != nil {
			t.Fatalf("the finished CLUSTER run came back with neither predictions.bin nor its checkpoint: %v", err)
		}
		if !strings.Contains(run1, "predict table-cluster/cluster-gatedgcn-lp-r1/seed41: no time left") {
			t.Errorf("window 1's log does not say why the CLUSTER run has no predictions:\n%s", run1)
		}
		t.Logf("the CLUSTER run finished too late in its window to predict; predicting from its checkpoint here")
		pred := exec.Command(trainer, "-predict", cl)
		pred.Env = e.vars
		if out, err := pred.CombinedOutput(); err != nil {
			t.Fatalf("train -predict %s: %v\n%s", cl, err, out)
		}
	}
	if fi, err := os.Stat(filepath.Join(cl, "predictions.bin")); err != nil || fi.Size() == 0 {
		t.Errorf("the finished CLUSTER run has no predictions.bin: %v", err)
	}

	// The reference: the same config trained without interruption.
	cfg := filepath.Join(e.tmp, "w2", "campaign", "runs", grid, ".sweep", "configs", long+".yaml")
	ref := filepath.Join(e.tmp, "ref")
	cmd := exec.Command(trainer, "-config", cfg, "-seed", "41", "-out", ref, "-quiet", "-device", "cpu",
		"-set", "train.max_epochs=16")
	cmd.Env = e.vars
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	want := epochs(t, filepath.Join(ref, long, "seed41", "metrics.jsonl"))
	got := epochs(t, filepath.Join(fin, "metrics.jsonl"))
	if len(want) != longEps || !reflect.DeepEqual(got, want) {
		t.Errorf("interrupted and resumed across two windows differs from the uninterrupted run:\n got %v\nwant %v", got, want)
	}
	if rr, rw := result(t, fin), result(t, filepath.Join(ref, long, "seed41")); rr["test_metric"] != rw["test_metric"] {
		t.Errorf("test metric %v, uninterrupted %v", rr["test_metric"], rw["test_metric"])
	}

	// Collecting a pack twice only ever adds: the second time changes nothing, its window's
	// log included (the folder is named for the window's start, not for the time of collecting).
	before := tree(t, e.results)
	again := e.sh(e.script(), "collect", filepath.Join(e.tmp, "w2", "out"))
	if !strings.Contains(again, "already collected") {
		t.Errorf("second collect: %s", again)
	}
	after := tree(t, e.results)
	if !reflect.DeepEqual(before, after) {
		for k, v := range after {
			if before[k] != v {
				t.Errorf("second collect changed or added %s", k)
			}
		}
	}
	wins, _ := filepath.Glob(filepath.Join(e.results, "campaign", "windows", "*", "summary.txt"))
	if len(wins) != 2 {
		t.Errorf("window summaries kept: %v, want one per window", wins)
	}
	for _, w := range wins {
		head, err := os.ReadFile(w)
		if err != nil {
			t.Fatal(err)
		}
		start, _ := time.Parse("20060102T150405Z", filepath.Base(filepath.Dir(w)))
		if !strings.HasPrefix(string(head), "campaign window "+start.Format("2006-01-02T15:04:05Z")+",") {
			t.Errorf("%s: the folder is not named for the window's start:\n%.80s", w, head)
		}
	}

	// Tables from the collected runs (reduced budget: max_epochs was set, so -R).
	tables := exec.Command("bash", filepath.Join(e.root, "scripts", "tables.sh"), "-R",
		"-r", filepath.Join(e.results, grid, "runs"), "-o", filepath.Join(e.tmp, "tables"), grid)
	tables.Env = e.vars
	if out, err := tables.CombinedOutput(); err != nil {
		t.Fatalf("tables: %v\n%s", err, out)
	}
	md, err := os.ReadFile(filepath.Join(e.tmp, "tables", "tables.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "§") {
		t.Errorf("tables.md does not mark the reduced-budget runs:\n%s", md)
	}
}

// TestCampaignEmulatedGPU runs one window with -d emu, the trainers' -device emu: the trainers
// open the emulated GPU, train, and the run is collected.
func TestCampaignEmulatedGPU(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the trainer and the emulated kernels: skipped under -short")
	}
	if err := emu.Skip(); err != nil {
		t.Skip(err)
	}
	e := newEnv(t)
	if err := os.WriteFile(e.qf, []byte(grid+" "+quick+" 41 train.max_epochs=2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run, col := e.window("emu", "emu", "600", "5")
	t.Logf("%s\n%s", run, col)
	r := result(t, e.runDir("runs", quick))
	dev, _ := r["device"].(string)
	if r["stopped_by"] != "max_epochs" || dev == "" || strings.HasPrefix(dev, "cpu") {
		t.Fatalf("emulated-GPU run: stopped_by %v, device %q; want max_epochs on the (emulated) GPU", r["stopped_by"], dev)
	}
}

// tree maps each file under root to its content.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		m[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
