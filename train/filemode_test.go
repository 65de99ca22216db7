//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package train

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

// withUmask runs f with the process's umask set to mask, and restores the old one. The umask
// belongs to the whole process: the test that calls it must not run in parallel.
func withUmask(mask int, f func()) {
	old := syscall.Umask(mask)
	defer syscall.Umask(old)
	f()
}

// TestRunFilesShareOneMode: under an umask of 027, every file of a run directory (config.yaml,
// metrics.jsonl, result.json, checkpoint.bin, the lock, the event files, predictions.bin) is
// created 0666 less the umask, 0640: one mode, the one os.Create would give.
func TestRunFilesShareOneMode(t *testing.T) {
	const mask = 0o027
	want := fs.FileMode(0o666 &^ mask)
	c := nm2(t, "train.max_epochs=2")
	dir := c.Dir(41)
	withUmask(mask, func() {
		if _, err := trainRun(t, c, 41, false, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := WritePredictions(dir, 1, nil); err != nil {
			t.Fatal(err)
		}
	})
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n++
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s: mode %04o, want %04o (0666 less the umask %04o)", path, got, want, mask)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{runfiles.ConfigFile, runfiles.MetricsFile, runfiles.ResultFile, runfiles.CheckpointFile, runfiles.PredictionsFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the run wrote no %s: %v", f, err)
		}
	}
	if n < 6 {
		t.Fatalf("%d files in %s, want config, metrics, result, checkpoint, predictions and an event file", n, dir)
	}
}
