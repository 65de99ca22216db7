package rundir

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

// TestMoveAside: a restart moves every file and folder of the run directory into a new
// .old-<UTC time> folder, except the lock and the .old-* folders of earlier restarts, deletes
// nothing and says what it moved; a directory holding nothing else is left as it is.
func TestMoveAside(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	if err := os.WriteFile(filepath.Join(dir, runfiles.LockFile), []byte("process 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := MoveAside(dir, &log); err != nil || log.Len() != 0 {
		t.Fatalf("a directory holding only its lock: %v, log %q", err, log.String())
	}
	earlier := filepath.Join(dir, runfiles.OldPrefix+"20200101T000000Z")
	for _, d := range []string{earlier, filepath.Join(dir, runfiles.TBDir)} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := []string{runfiles.ConfigFile, runfiles.MetricsFile, runfiles.CheckpointFile, "train.log"}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := MoveAside(dir, &log); err != nil {
		t.Fatal(err)
	}
	olds, _ := filepath.Glob(filepath.Join(dir, runfiles.OldPrefix+"*"))
	if len(olds) != 2 {
		t.Fatalf(".old folders %v, want the earlier one and a new one", olds)
	}
	old := olds[slices.IndexFunc(olds, func(p string) bool { return p != earlier })]
	for _, f := range files {
		if b, err := os.ReadFile(filepath.Join(old, f)); err != nil || string(b) != f {
			t.Errorf("%s in %s: %q, %v", f, old, b, err)
		}
	}
	if st, err := os.Stat(filepath.Join(old, runfiles.TBDir)); err != nil || !st.IsDir() {
		t.Errorf("the tb folder was not moved: %v", err)
	}
	left, _ := os.ReadDir(dir)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if want := []string{filepath.Base(earlier), filepath.Base(old), runfiles.LockFile}; !slices.Equal(names, want) {
		t.Errorf("left in the run directory %v, want %v", names, want)
	}
	if !strings.Contains(log.String(), "restart: ") || !strings.Contains(log.String(), old) {
		t.Errorf("log %q does not say where the files went", log.String())
	}
}

// TestMakeOldDir: a second restart in the same second gets the suffix -2, a third -3.
func TestMakeOldDir(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 12, 2, 4, 5, 6, 0, time.UTC)
	base := filepath.Join(dir, runfiles.OldPrefix+"20261202T040506Z")
	for _, want := range []string{base, base + "-2", base + "-3"} {
		got, err := MakeOldDir(dir, now)
		if err != nil || got != want {
			t.Fatalf("MakeOldDir = %q, %v; want %q", got, err, want)
		}
	}
}

// TestAdvice: the ways out name a command in backquotes and where a restart keeps the old files.
func TestAdvice(t *testing.T) {
	dir := filepath.Join("runs", "x", "seed41")
	if got, want := Suggest("-resume", dir), "`train -resume "+dir+"`"; got != want {
		t.Errorf("Suggest = %q, want %q", got, want)
	}
	note := filepath.Join(dir, runfiles.OldPrefix+"<UTC time>") + "/"
	for _, s := range []string{RestartAdvice(dir), FreshRestartAdvice(dir)} {
		if !strings.Contains(s, "`-restart`") || !strings.Contains(s, note) {
			t.Errorf("%q lacks `-restart` or %q", s, note)
		}
	}
}
