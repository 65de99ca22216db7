//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package rundir

import (
	"errors"
	"io/fs"
	"os"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

// takesOverStale says whether acquire tells a dead holder's lock file from a live one's.
const takesOverStale = false

// acquire creates the lock file at path exclusively (systems without flock). A lock file that
// exists means a holder, alive or not: this fallback cannot tell a dead process's file from a
// live one's, so the *BusyError says to delete the file if its process is gone.
func acquire(path string) (*os.File, []byte, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, runfiles.FilePerm)
	if errors.Is(err, fs.ErrExist) {
		prev, _ := os.ReadFile(path)
		return nil, nil, &BusyError{Holder: holderText(prev), Hint: "if that process is gone, delete " + path}
	}
	if err != nil {
		return nil, nil, err
	}
	return f, nil, nil
}
