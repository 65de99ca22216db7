package train

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

// writeError is the error runfiles.WriteAtomic returns when the write of path's temporary file
// fails with errno.
func writeError(path string, errno syscall.Errno) error {
	return fmt.Errorf("writing %s: %w", path, &fs.PathError{Op: "write", Path: path + ".tmp123", Err: errno})
}

// failCheckpoints makes the checkpoint writes after the first ok ones fail with errno, as a full
// disk or a folder made read-only would, until the test ends.
func failCheckpoints(t *testing.T, ok int, errno syscall.Errno) {
	saved := writeCheckpointFile
	t.Cleanup(func() { writeCheckpointFile = saved })
	n := 0
	writeCheckpointFile = func(path string, state any) error {
		if n++; n > ok {
			return writeError(path, errno)
		}
		return saved(path, state)
	}
}

// TestCheckpointWriteFails: a checkpoint that cannot be written (disk full, read-only folder)
// stops the run with an error that names the file, what is kept and the way out; followed, the
// way out finishes the run: -resume from the last checkpoint, or the same command again when
// the run has none.
func TestCheckpointWriteFails(t *testing.T) {
	for _, c := range []struct {
		errno  syscall.Errno
		ok     int // checkpoints written before the failure
		want   []string
		resume bool // the way out resumes (else it runs the command again)
	}{
		{syscall.ENOSPC, 1, []string{"is full", "last checkpoint (end of epoch 0)", "`train -resume "}, true},
		{syscall.ENOSPC, 0, []string{"is full, and the run has no checkpoint yet", "run this command again"}, false},
		{syscall.EROFS, 1, []string{"is not writable", "last checkpoint (end of epoch 0)", "`train -resume "}, true},
	} {
		t.Run(fmt.Sprintf("%v after %d", c.errno, c.ok), func(t *testing.T) {
			cfg := nm2(t, "train.batch_size=32", "train.max_epochs=3")
			failCheckpoints(t, c.ok, c.errno)
			_, err := trainRun(t, cfg, 41, false, nil)
			if !errors.Is(err, c.errno) {
				t.Fatalf("error %v, want %v", err, c.errno)
			}
			for _, w := range append(c.want, filepath.Join(cfg.Dir(41), runfiles.CheckpointFile)) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q: %v", w, err)
				}
			}
			writeCheckpointFile = runfiles.WriteCheckpoint // space freed
			res, err := trainRun(t, cfg, 41, c.resume, nil)
			if err != nil || res.Epochs != 3 {
				t.Fatalf("following the way out: %+v, %v", res, err)
			}
		})
	}
}

// TestReadOnlyOut: a fresh run under an -out folder it may not write fails naming the folder and
// the way out, and creates nothing.
func TestReadOnlyOut(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes into a folder of mode 0500 all the same; TestWriteWayOut and TestCheckpointWriteFails check the messages")
	}
	cfg := nm2(t, "train.max_epochs=1")
	if err := os.Chmod(cfg.Out, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(cfg.Out, 0o700) })
	_, err := trainRun(t, cfg, 41, false, nil)
	if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "is not writable") || !strings.Contains(err.Error(), "`-out OTHER`") {
		t.Fatalf("error %v", err)
	}
}
