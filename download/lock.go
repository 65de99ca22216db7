package download

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"
)

// touchEvery is how often a running download refreshes its lock's time, so that a lock older
// than Options.LockStale belongs to a run that stopped.
const touchEvery = time.Minute

// lock is a folder's lock file, created exclusively; it holds the owner's process id, host and
// start time.
type lock struct {
	path, token string
	touched     time.Time
}

// acquireLock creates the lock file at path. A lock left by a process that is gone (same
// host) or untouched for longer than stale is taken over with a warning; any other is an
// error.
func acquireLock(path string, stale time.Duration, warn func(string)) (*lock, error) {
	host, _ := os.Hostname()
	now := time.Now()
	token := fmt.Sprintf("pid=%d host=%s since=%s\n", os.Getpid(), host, now.UTC().Format(time.RFC3339))
	err := createExclusive(path, token)
	if errors.Is(err, fs.ErrExist) {
		holder, why, serr := staleLock(path, stale, host)
		if serr != nil {
			return nil, serr
		}
		if why == "" {
			return nil, fmt.Errorf("%s is held by %s: another download into this folder is running; "+
				"wait for it to finish, or delete the lock file if that process is gone", path, holder)
		}
		warn(fmt.Sprintf("taking over the lock %s of %s: %s", path, holder, why))
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return nil, rerr
		}
		err = createExclusive(path, token)
	}
	if err != nil {
		return nil, fmt.Errorf("taking the lock %s: %w", path, err)
	}
	return &lock{path: path, token: token, touched: now}, nil
}

// createExclusive creates path with the content token, failing when it exists.
func createExclusive(path, token string) error {
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = file.WriteString(token)
	if err = errors.Join(err, file.Close()); err != nil {
		os.Remove(path)
	}
	return err
}

// staleLock describes the holder of an existing lock and, when the lock may be taken over,
// why: it is older than stale, or its process (on this host) is gone.
func staleLock(path string, stale time.Duration, host string) (holder, why string, err error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "a run that just finished", "it was released", nil
	}
	if err != nil {
		return "", "", err
	}
	b, _ := os.ReadFile(path) // unreadable or empty: judged by its age alone
	pid, lockHost, since := parseToken(string(b))
	holder = "an unknown process"
	if pid > 0 {
		holder = fmt.Sprintf("process %d on %s since %s", pid, lockHost, since)
	}
	if age := time.Since(fi.ModTime()); age > stale {
		return holder, fmt.Sprintf("last refreshed %v ago (more than %v)", age.Round(time.Second), stale), nil
	}
	if pid > 0 && lockHost == host && !processAlive(pid) {
		return holder, fmt.Sprintf("process %d is gone", pid), nil
	}
	return holder, "", nil
}

// parseToken reads the fields of a lock file's content.
func parseToken(s string) (pid int, host, since string) {
	for _, field := range strings.Fields(s) {
		k, v, _ := strings.Cut(field, "=")
		switch k {
		case "pid":
			fmt.Sscan(v, &pid)
		case "host":
			host = v
		case "since":
			since = v
		}
	}
	return pid, host, since
}

// touch refreshes the lock's time (at most once per touchEvery) while a download runs.
func (l *lock) touch() {
	if l == nil || time.Since(l.touched) < touchEvery {
		return
	}
	l.touched = time.Now()
	os.Chtimes(l.path, l.touched, l.touched)
}

// release removes the lock file if it is still this run's.
func (l *lock) release() {
	if b, err := os.ReadFile(l.path); err == nil && string(b) == l.token {
		os.Remove(l.path)
	}
}
