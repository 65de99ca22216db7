package rundir

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

// holdLockEnv names the directory TestHelperHoldLock locks when the test binary re-runs itself.
const holdLockEnv = "REWIREGNN_TEST_HOLD_LOCK"

// TestHelperHoldLock is not a test: re-run by TestLockOfAnotherProcess with holdLockEnv set, it
// locks that directory, prints "locked" and waits until killed.
func TestHelperHoldLock(t *testing.T) {
	dir := os.Getenv(holdLockEnv)
	if dir == "" {
		t.Skip("helper process of TestLockOfAnotherProcess")
	}
	if _, err := LockDir(dir, nil); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("locked")
	select {}
}

// TestLockIsExclusive: a second lock on a directory fails at once naming this process; after the
// release the lock file is gone and the directory can be locked again.
func TestLockIsExclusive(t *testing.T) {
	dir := t.TempDir()
	a, err := LockDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = LockDir(dir, nil)
	var busy *BusyError
	want := fmt.Sprintf("%s is in use by process %d on ", dir, os.Getpid())
	if !errors.As(err, &busy) || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "wait for it or stop it") {
		t.Fatalf("second lock: %v, want a BusyError starting %q", err, want)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, runfiles.LockFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the lock file is left after the release: %v", err)
	}
	var log bytes.Buffer
	b, err := LockDir(dir, &log)
	if err != nil {
		t.Fatalf("lock after the release: %v", err)
	}
	defer b.Release()
	if log.Len() != 0 {
		t.Errorf("a clean takeover logged %q", log.String())
	}
}

// TestLockOfAnotherProcess: while another process holds the lock, LockDir fails naming its PID;
// once that process is killed (no release, its lock file left behind), the stale lock is taken
// over and the log says whose it was.
func TestLockOfAnotherProcess(t *testing.T) {
	if testing.Short() || !takesOverStale {
		t.Skip("runs a second process; needs flock")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldLock$")
	cmd.Env = append(os.Environ(), holdLockEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("helper: %q, %v", line, err)
	}
	pid := cmd.Process.Pid
	_, err = LockDir(dir, nil)
	if want := fmt.Sprintf("in use by process %d on ", pid); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("lock held by the helper: %v, want %q", err, want)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := os.Stat(filepath.Join(dir, runfiles.LockFile)); err != nil {
		t.Fatalf("the killed helper's lock file: %v", err)
	}
	var log bytes.Buffer
	l, err := LockDir(dir, &log)
	if err != nil {
		t.Fatalf("lock after the holder died: %v", err)
	}
	defer l.Release()
	if want := fmt.Sprintf("stale lock of process %d on ", pid); !strings.Contains(log.String(), want) {
		t.Fatalf("log %q, want %q", log.String(), want)
	}
	b, _ := os.ReadFile(filepath.Join(dir, runfiles.LockFile))
	if !strings.HasPrefix(string(b), fmt.Sprintf("process %d on ", os.Getpid())) {
		t.Fatalf("lock file %q does not name this process", b)
	}
}

// TestLockStaleFile: a lock file nobody holds (written by hand, as a crash leaves it) is taken
// over.
func TestLockStaleFile(t *testing.T) {
	if !takesOverStale {
		t.Skip("without flock a lock file is never taken over")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, runfiles.LockFile), []byte("process 999999 on elsewhere, started 2020-01-01T00:00:00Z\n"), 0o644)
	var log bytes.Buffer
	l, err := LockDir(dir, &log)
	if err != nil {
		t.Fatalf("a stale lock file was not taken over: %v", err)
	}
	defer l.Release()
	if !strings.Contains(log.String(), "stale lock of process 999999 on elsewhere") {
		t.Fatalf("log %q", log.String())
	}
}
