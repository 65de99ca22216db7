// Package rundir provides a run directory's housekeeping: its one-writer lock (LockDir), a
// restart's .old-<UTC time> folder (MoveAside, MakeOldDir), and the way out that an error
// writing into it or a refusal to use it names (WayOut, Suggest, RestartAdvice).
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

// Every refusal names the way out as a command in backquotes: a whole trainer command
// ("`train -resume DIR`") or flags to add to the refused command ("add `-restart`"); the tests
// follow each one.

// Suggest is a trainer command line for a message.
func Suggest(args ...string) string { return "`train " + strings.Join(args, " ") + "`" }

// OldDirNote says where a restart keeps the old run's files.
func OldDirNote(dir string) string {
	return "the old files go to " + filepath.Join(dir, runfiles.OldPrefix+"<UTC time>") + "/"
}

// RestartAdvice is the way out of a run directory that cannot be continued, for a command that
// names it with -resume: the same command with -restart starts it afresh.
func RestartAdvice(dir string) string {
	return fmt.Sprintf("add `-restart` to start it afresh (%s)", OldDirNote(dir))
}

// FreshRestartAdvice is the way out of a run directory that a fresh start finds occupied.
func FreshRestartAdvice(dir string) string {
	return fmt.Sprintf("add `-restart` to this command to replace it (%s), or choose another -out", OldDirNote(dir))
}

// MoveAside moves everything in the run directory dir (config.yaml, metrics.jsonl, result.json,
// checkpoint.bin, predictions.bin, train.log and whatever else is there) into a new folder
// <dir>/.old-<UTC time>, except the lock, which this process holds, and the .old-* folders of
// earlier restarts; it deletes nothing, and says on log what it moved. A directory holding
// nothing else is left as it is.
func MoveAside(dir string, log io.Writer) error {
	present, err := oldRunFiles(dir)
	if err != nil {
		return err
	}
	if len(present) == 0 {
		return nil
	}
	old, err := MakeOldDir(dir, time.Now())
	if err != nil {
		return err
	}
	for _, f := range present {
		if err := os.Rename(filepath.Join(dir, f), filepath.Join(old, f)); err != nil {
			return WayOut(fmt.Errorf("restart %s: %w", dir, err), dir, "")
		}
	}
	fmt.Fprintf(log, "restart: %v of %s moved into %s\n", present, dir, old)
	return nil
}

// oldRunFiles are the names in the run directory dir that a restart moves aside: all but the
// lock and the .old-* folders.
func oldRunFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("restart %s: %w", dir, err)
	}
	var names []string
	for _, e := range ents {
		if n := e.Name(); n != runfiles.LockFile && !strings.HasPrefix(n, runfiles.OldPrefix) {
			names = append(names, n)
		}
	}
	return names, nil
}

// MakeOldDir creates <dir>/.old-<UTC time>, with a suffix -2, -3, … if that exists already.
func MakeOldDir(dir string, now time.Time) (string, error) {
	base := filepath.Join(dir, runfiles.OldPrefix+now.UTC().Format("20060102T150405Z"))
	for i := 1; i <= 100; i++ {
		p := base
		if i > 1 {
			p = fmt.Sprintf("%s-%d", base, i)
		}
		err := os.Mkdir(p, 0o755)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("restart %s: %w", dir, err)
		}
	}
	return "", fmt.Errorf("restart %s: %s-2 … -100 all exist", dir, base)
}
