package tablescript

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tablesSh runs scripts/tables.sh with args and returns its exit status and output.
func tablesSh(t *testing.T, args ...string) (int, string) {
	t.Helper()
	for _, tool := range []string{"bash", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH: %v", tool, err)
		}
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", append([]string{filepath.Join(root, "scripts", "tables.sh")}, args...)...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, string(out)
}

// TestGridTablesKeepCommittedResults: a grid's tables from a runs folder that does not exist
// (a fresh clone) do not replace a results folder's tables of more runs; the script fails and
// says why, and the files stay as they were.
func TestGridTablesKeepCommittedResults(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "zinc-cpu")
	os.MkdirAll(out, 0o755)
	committed := map[string][]byte{}
	for _, f := range []string{"summary.json", "tables.md", "zinc.md", "zinc.tex", "zinc-stats.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "docs", "results", "zinc-cpu", f))
		if err != nil {
			t.Fatal(err)
		}
		committed[f] = b
		os.WriteFile(filepath.Join(out, f), b, 0o644)
	}
	code, log := tablesSh(t, "-r", filepath.Join(dir, "runs"), "-o", out, "zinc-cpu")
	if code == 0 || !strings.Contains(log, "holds tables of 4 runs") || !strings.Contains(log, "refusing to replace them") {
		t.Errorf("exit %d:\n%s", code, log)
	}
	for f, b := range committed {
		if got, _ := os.ReadFile(filepath.Join(out, f)); !bytes.Equal(got, b) {
			t.Errorf("%s was rewritten", f)
		}
	}
}

// TestAllTablesWithoutRuns: tables.sh -a without a runs folder stops with a message naming the
// folder and what to do, before running anything.
func TestAllTablesWithoutRuns(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "runs")
	code, log := tablesSh(t, "-a", "-r", missing, "-o", filepath.Join(dir, "out"))
	if code != 2 || !strings.Contains(log, "no runs folder "+missing) || strings.Contains(log, "go run") {
		t.Errorf("exit %d:\n%s", code, log)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Errorf("-a wrote %s", filepath.Join(dir, "out"))
	}
}
