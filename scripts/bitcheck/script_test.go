package bitcheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
	"github.com/rewiregnn/rewiregnn/runfiles"
	"github.com/rewiregnn/rewiregnn/train"
)

// repoRoot returns the repository root, skipping the test where the tools the script needs are
// missing or the repository is not a git checkout.
func repoRoot(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"bash", "git", "go", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH: %v", tool, err)
		}
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", root, "rev-parse", "--verify", "HEAD").CombinedOutput(); err != nil {
		t.Skipf("%s is not a git checkout with a commit: %v %s", root, err, out)
	}
	return root
}

// zincData returns the data folder, skipping the test without ZINC in it.
func zincData(t *testing.T) string {
	t.Helper()
	dir := testdata.Dir(t)
	if _, err := os.Stat(filepath.Join(dir, "zinc")); err != nil {
		t.Skipf("no ZINC data: %v", err)
	}
	return dir
}

// script returns the command running scripts/bitcheck.sh with args, its temporary folders in tmp.
func script(root, dataDir, tmp string, args ...string) *exec.Cmd {
	cmd := exec.Command("bash", append([]string{filepath.Join(root, "scripts", "bitcheck.sh")}, args...)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, data.EnvDataDir+"="+dataDir)
	cmd.WaitDelay = time.Minute
	return cmd
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

// leftovers lists what the script left in its TMPDIR.
func leftovers(t *testing.T, tmp string) []string {
	t.Helper()
	es, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range es {
		if strings.HasPrefix(e.Name(), "bitcheck.") {
			left = append(left, e.Name())
		}
	}
	return left
}

// TestScriptRefuses: an unknown revision, a filter that matches nothing and a missing revision
// stop the script before it builds anything, with status 2 and a message.
func TestScriptRefuses(t *testing.T) {
	root := repoRoot(t)
	tmp := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"no-such-revision-here"}, "no-such-revision-here names no commit"},
		{[]string{"HEAD", "no-such-revision-here"}, "no-such-revision-here names no commit"},
		{[]string{"-f", "^nothing$", "HEAD"}, "matches no run"},
		{nil, "usage: bitcheck.sh"},
	} {
		out, err := script(root, filepath.Join(tmp, "data"), tmp, c.args...).CombinedOutput()
		if code := exitCode(t, err); code != 2 || !strings.Contains(string(out), c.want) || strings.Contains(string(out), "go build") {
			t.Errorf("%q: exit %d, want 2 and %q before any build:\n%s", c.args, code, c.want, out)
		}
	}
	if left := leftovers(t, tmp); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestScriptSameRevision runs the script on one setting with BASE = HEAD = the last commit
// (both exported with git archive and built), which must pass, leave no temporary folder and
// keep the run folders asked for (-o); then alters those real runs and expects the comparer to
// name each change: one metrics value, one parameter, one byte of a checkpoint. About 20 s with
// the builds cached (the first -trimpath build of the trainer takes a minute or two); skipped
// under -short.
func TestScriptSameRevision(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the trainer twice and trains 4 short runs: skipped under -short")
	}
	root := repoRoot(t)
	dataDir := zincData(t)
	tmp, keep := t.TempDir(), filepath.Join(t.TempDir(), "runs")
	start := time.Now()
	out, err := script(root, dataDir, tmp, "-f", "^zinc-r1-gatedgcn$", "-o", keep, "HEAD", "HEAD").CombinedOutput()
	t.Logf("bitcheck.sh in %s:\n%s", time.Since(start).Round(time.Second), out)
	if code := exitCode(t, err); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"bitcheck: identical: base (HEAD = ", "1 run × GOMAXPROCS 1 2 × 2 revisions = 4 trainings"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if n := strings.Count(string(out), ": 1 run, 4 files identical\n"); n != 4 {
		t.Errorf("%d comparisons of 1 run and 4 files, want 4", n)
	}
	if left := leftovers(t, tmp); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}

	// The real runs, head at GOMAXPROCS=2 against base at 1: identical less the thread count.
	rel := filepath.Join("zinc-r1-gatedgcn", "out", "zinc-gatedgcn-adj-r1", "seed41")
	a, b := filepath.Join(keep, "base", "gomaxprocs1"), filepath.Join(keep, "head", "gomaxprocs2")
	o := Options{A: "base", B: "head", Threads: true}
	rep, err := CompareTrees(a, b, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Runs != 1 || rep.Files != 4 || len(rep.Diffs) > 0 {
		t.Fatalf("kept runs: %d runs, %d files, differences %+v", rep.Runs, rep.Files, rep.Diffs)
	}
	run := filepath.Join(b, rel)
	expect := func(what string, want ...string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := Main([]string{"-threads", "-a", "base", "-b", "head", a, b}, &stdout, &stderr)
		if code != 1 || strings.Count(stdout.String(), "DIFFERS ") != 1 {
			t.Errorf("%s: exit %d, want 1 with one difference:\n%s%s", what, code, stdout.String(), stderr.String())
		}
		for _, w := range want {
			if !strings.Contains(stdout.String(), w) {
				t.Errorf("%s: output lacks %q:\n%s", what, w, stdout.String())
			}
		}
	}

	// one value of one metrics line, by one ulp
	metrics := filepath.Join(run, runfiles.MetricsFile)
	orig, err := os.ReadFile(metrics)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(orig), "\n")
	dec := json.NewDecoder(strings.NewReader(lines[1]))
	dec.UseNumber()
	var line map[string]any
	if err := dec.Decode(&line); err != nil {
		t.Fatal(err)
	}
	was, err := strconv.ParseFloat(string(line["val_loss"].(json.Number)), 64)
	if err != nil {
		t.Fatal(err)
	}
	now := math.Nextafter(was, math.Inf(1))
	line["val_loss"] = now
	changed, err := json.Marshal(line)
	if err != nil {
		t.Fatal(err)
	}
	lines[1] = string(changed) + "\n"
	writeFile(t, metrics, []byte(strings.Join(lines, "")))
	expect("metrics", filepath.ToSlash(rel)+": metrics.jsonl: epoch 1 (line 2): val_loss: base "+
		strconv.FormatFloat(was, 'g', -1, 64)+", head "+strconv.FormatFloat(now, 'g', -1, 64)+"\n")
	writeFile(t, metrics, orig)

	// one parameter value, by one ulp, in a valid checkpoint
	ckPath := filepath.Join(run, runfiles.CheckpointFile)
	orig, err = os.ReadFile(ckPath)
	if err != nil {
		t.Fatal(err)
	}
	var ck train.Checkpoint
	if err := runfiles.DecodeCheckpoint(orig, &ck); err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range ck.Params {
		names = append(names, n)
	}
	slices.Sort(names)
	p := ck.Params[names[0]]
	was, now = p[1], math.Nextafter(p[1], math.Inf(1))
	p[1] = now
	if err := runfiles.WriteCheckpoint(ckPath, &ck); err != nil {
		t.Fatal(err)
	}
	expect("parameter", filepath.ToSlash(rel)+": checkpoint.bin: Params["+strconv.Quote(names[0])+"][1]: base "+
		strconv.FormatFloat(was, 'g', -1, 64)+", head "+strconv.FormatFloat(now, 'g', -1, 64)+"\n")

	// one byte of the file
	bad := slices.Clone(orig)
	bad[len(bad)/2] ^= 0x10
	writeFile(t, ckPath, bad)
	expect("checkpoint byte", filepath.ToSlash(rel)+": checkpoint.bin: unreadable: base readable, head unreadable (checksum mismatch")
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestScriptInterrupted: SIGTERM while a trainer runs (HEAD against the working tree) stops the
// trainer and removes the temporary folder; the status is 143. Skipped under -short.
func TestScriptInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the trainer twice and starts a training: skipped under -short")
	}
	root := repoRoot(t)
	dataDir := zincData(t)
	tmp := t.TempDir()
	cmd := script(root, dataDir, tmp, "-f", "^zinc-r4cls-gatedgcn$", "HEAD")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var log strings.Builder
	sc := bufio.NewScanner(r)
	signalled := false
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if !signalled && strings.HasPrefix(sc.Text(), "trained ") {
			// the next training has started, or is about to
			time.Sleep(500 * time.Millisecond)
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			signalled = true
		}
	}
	code := exitCode(t, cmd.Wait())
	t.Logf("bitcheck.sh:\n%s", log.String())
	if !signalled {
		t.Fatal("no training finished")
	}
	if code != 143 {
		t.Errorf("exit %d, want 143", code)
	}
	if left := leftovers(t, tmp); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	// no process runs a binary from the temporary folder any more
	if procs, err := filepath.Glob("/proc/[0-9]*/cmdline"); err == nil {
		for _, p := range procs {
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(tmp)) {
				t.Errorf("%s still runs: %s", filepath.Dir(p), bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
			}
		}
	}
}
