//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package rundir

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

// takesOverStale says whether acquire tells a dead holder's lock file from a live one's.
const takesOverStale = true

// acquire opens and flocks the lock file at path without waiting. It returns the open file and
// what an earlier holder left in it (a dead process's record), or a *BusyError with the live
// holder's record. A file removed or replaced between the open and the lock (its holder was
// releasing it) is opened again.
func acquire(path string) (*os.File, []byte, error) {
	for range 100 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, runfiles.FilePerm)
		if err != nil {
			return nil, nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			prev, _ := io.ReadAll(f)
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, nil, &BusyError{Holder: holderText(prev)}
			}
			return nil, nil, fmt.Errorf("flock %s: %w", path, err)
		}
		if current(f, path) {
			prev, err := io.ReadAll(f)
			if err != nil {
				f.Close()
				return nil, nil, err
			}
			return f, prev, nil
		}
		f.Close()
	}
	return nil, nil, fmt.Errorf("%s keeps being replaced while it is locked", path)
}

// current reports whether path still names the open file f.
func current(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}
