package rundir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

// Lock is the advisory lock that makes one process the only writer of a run directory: the
// file <dir>/lock (runfiles.LockFile), locked with flock where the system has it, holding its
// holder's PID, host and start time. The kernel drops a flock when its process dies, so a lock
// file left behind by a killed trainer is not held and is simply taken over.
//
// The lock file is written in place, not through runfiles.WriteAtomic: the lock belongs to the
// file's inode, which a rename would replace. Nothing reads it but LockDir.
type Lock struct {
	dir  string
	path string
	f    *os.File
}

// BusyError is LockDir's error when another process holds the run directory.
type BusyError struct {
	Dir    string
	Holder string // the lock file's record ("process 123 on host, started …"), or why it is unknown
	Hint   string // what to do besides waiting (the fallback without flock: delete the lock file)
}

func (e *BusyError) Error() string {
	s := fmt.Sprintf("%s is in use by %s; wait for it or stop it", e.Dir, e.Holder)
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// LockDir locks the existing run directory dir for this process, or fails at once with a
// *BusyError naming the holder. A lock file left by a dead process is taken over and said so on
// log (nil: discard).
func LockDir(dir string, log io.Writer) (*Lock, error) {
	if log == nil {
		log = io.Discard
	}
	if st, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no such run directory", dir)
	} else if err == nil && !st.IsDir() {
		return nil, fmt.Errorf("%s: not a run directory but a file", dir)
	}
	path := filepath.Join(dir, runfiles.LockFile)
	f, prev, err := acquire(path)
	var busy *BusyError
	if errors.As(err, &busy) {
		busy.Dir = dir
		return nil, busy
	}
	if err != nil {
		return nil, lockFailed(dir, fmt.Errorf("locking %s: %w", dir, err))
	}
	if len(prev) > 0 {
		fmt.Fprintf(log, "%s: stale lock of %s taken over (that process is gone)\n", dir, holderText(prev))
	}
	if err := writeHolder(f); err != nil {
		f.Close()
		return nil, lockFailed(dir, fmt.Errorf("locking %s: writing %s: %w", dir, path, err))
	}
	return &Lock{dir: dir, path: path, f: f}, nil
}

// Dir is the locked run directory.
func (l *Lock) Dir() string { return l.dir }

// Release removes the lock file and drops the lock (in that order, so that a process waiting on
// the old file finds it gone and opens a new one). Releasing a nil or released lock does nothing.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	rerr := os.Remove(l.path)
	cerr := l.f.Close()
	l.f = nil
	if err := errors.Join(rerr, cerr); err != nil {
		return fmt.Errorf("releasing the lock of %s: %w", l.dir, err)
	}
	return nil
}

// holderRecord is what the lock file says about its holder.
func holderRecord() string {
	host, err := os.Hostname()
	if err != nil {
		host = "an unknown host"
	}
	return fmt.Sprintf("process %d on %s, started %s\n", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
}

func writeHolder(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt([]byte(holderRecord()), 0); err != nil {
		return err
	}
	return f.Sync()
}

// holderText is a lock file's record for a message.
func holderText(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "another process (it has not written its PID yet)"
	}
	return s
}
