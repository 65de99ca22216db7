package rundir

import (
	"errors"
	"fmt"
	"io/fs"
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

// TestWriteWayOut: an error writing into a run directory for want of space or permission names
// the file and the way out: free space or make the folder writable, then -resume DIR from the
// last checkpoint, or, with none yet, the same command again or another -out. Other errors are
// left as they are.
func TestWriteWayOut(t *testing.T) {
	dir := filepath.Join("runs", "zinc-gatedgcn-adj-r4", "seed41")
	path := filepath.Join(dir, runfiles.CheckpointFile)
	for _, c := range []struct {
		errno   syscall.Errno
		savedAt string
		want    []string
	}{
		{syscall.ENOSPC, "end of epoch 3", []string{"no space left on device", "the disk holding " + dir + " is full", "free space on it",
			"move " + dir + " to a disk with room", "last checkpoint (end of epoch 3)", "`train -resume " + dir + "`"}},
		{syscall.EDQUOT, "", []string{"quota", "is full, and the run has no checkpoint yet", "run this command again", "add `-out OTHER`"}},
		{syscall.EACCES, "epoch 2 before batch 7", []string{"permission denied", dir + " (or a folder above it) is not writable", "chmod u+w",
			"last checkpoint (epoch 2 before batch 7)", "`train -resume " + dir + "`"}},
		{syscall.EROFS, "", []string{"read-only file system", "is not writable", "run this command again", "add `-out OTHER`"}},
	} {
		err := WayOut(writeError(path, c.errno), dir, c.savedAt)
		if !errors.Is(err, c.errno) {
			t.Errorf("%v: the error no longer wraps its cause: %v", c.errno, err)
		}
		for _, w := range append(c.want, "writing "+path) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: the error does not say %q: %v", c.errno, w, err)
			}
		}
	}
	other := writeError(path, syscall.EIO)
	if got := WayOut(other, dir, "end of epoch 0"); got != other {
		t.Errorf("an I/O error was changed: %v", got)
	}
}
