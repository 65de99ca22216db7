// Package runlog provides a run's logs beside its checkpoint: metrics.jsonl cut back to the
// epochs a resumed checkpoint covers (ResumeMetrics), and the TensorBoard folder, written epoch
// by epoch and at the run's end (Board), repaired on resume and rebuilt from the run's files
// (RebuildBoard).
package runlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/rewiregnn/rewiregnn/internal/plural"
	"github.com/rewiregnn/rewiregnn/rundir"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// ResumeMetrics reads the metrics.jsonl of the run directory dir to resume a checkpoint taken
// after epochs finished epochs: its first epochs lines, which the checkpoint covers. Whatever
// follows them (epochs recorded after the checkpoint was written, or a line torn by a crash
// during a write) is dropped, and log says so; a line the checkpoint covers that is missing,
// torn or unreadable is an error naming the file and -restart.
func ResumeMetrics(dir string, epochs int, log io.Writer) ([]runfiles.Epoch, error) {
	path := filepath.Join(dir, runfiles.MetricsFile)
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("resume %s: %w", dir, err)
	}
	head, rest := coveredLines(b, epochs)
	eps, err := runfiles.ParseMetrics(path, bytes.NewReader(head))
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w; %s", dir, err, rundir.RestartAdvice(dir))
	}
	if len(eps) < epochs {
		return nil, fmt.Errorf("resume %s: %s holds the lines of %s, the checkpoint covers %d: the metrics of epochs %d to %d are lost; %s",
			dir, path, plural.Count(len(eps), "epoch"), epochs, len(eps), epochs-1, rundir.RestartAdvice(dir))
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		fmt.Fprintf(log, "resume %s: %s: kept the lines of the %s the checkpoint covers, dropped %s after them\n",
			dir, path, plural.Count(epochs, "epoch"), describeDropped(rest))
	}
	return eps, nil
}

// coveredLines splits b after its first n complete (newline-ended) lines that are not blank; a
// last line without its newline, torn by a crash, is never complete.
func coveredLines(b []byte, n int) (head, rest []byte) {
	off := 0
	for n > 0 {
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			break
		}
		if len(bytes.TrimSpace(b[off:off+i])) > 0 {
			n--
		}
		off += i + 1
	}
	return b[:off], b[off:]
}

// describeDropped says what ResumeMetrics drops: complete lines, a torn last line, or both.
func describeDropped(rest []byte) string {
	complete := bytes.Count(rest, []byte{'\n'})
	torn := len(bytes.TrimSpace(rest[bytes.LastIndexByte(rest, '\n')+1:])) > 0
	switch {
	case torn && complete == 0:
		return "a torn last line (no newline: a write that did not finish)"
	case torn:
		return plural.Count(complete, "complete line") + " and a torn last line (no newline: a write that did not finish)"
	}
	return plural.Count(complete, "line")
}
