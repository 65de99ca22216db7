package campaign

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestLeftAtLeastIsALowerBound: cpu status's estimate of a training run's epochs left
// (campaign.sh's left_at_least), given each prefix of a committed run's metrics (AQSOL GatedGCN
// r = 2, seed 41, stopped by min_lr), is never more than the epochs the run went on to train,
// and equals them at the end (the schedule replayed from the epochs logged).
func TestLeftAtLeastIsALowerBound(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(root, "scripts", "campaign.sh"))
	if err != nil {
		t.Fatal(err)
	}
	fn := regexp.MustCompile(`(?ms)^left_at_least\(\) \{.*?^\}`).Find(script)
	if fn == nil {
		t.Fatal("no left_at_least in campaign.sh")
	}
	run := filepath.Join(root, "docs", "results", "table-aqsol", "runs", "aqsol-gatedgcn-adj-r2", "seed41")
	cfg, err := os.ReadFile(filepath.Join(run, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := os.ReadFile(filepath.Join(run, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(metrics), "\n"), "\n")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	est := regexp.MustCompile(`at least (\d+) epochs? left`)
	for n := 1; n < len(lines); n++ {
		if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(strings.Join(lines[:n], "")), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("bash", "-c", string(fn)+"\nleft_at_least \"$1\"", "bash", dir).CombinedOutput()
		if err != nil {
			t.Fatalf("after %d epochs: %v\n%s", n, err, out)
		}
		m := est.FindSubmatch(out)
		if m == nil {
			t.Fatalf("after %d epochs: no estimate in %q", n, out)
		}
		e, _ := strconv.Atoi(string(m[1]))
		if left := len(lines) - n; e > left || n == len(lines)-1 && e != left {
			t.Errorf("after %d epochs: at least %d left, the run trained %d more", n, e, left)
		}
	}
}
