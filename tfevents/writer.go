package tfevents

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// FilePrefix starts the name of every event file (TensorBoard loads the files whose name
// holds "tfevents").
const FilePrefix = "events.out.tfevents."

// FileName is TensorBoard's name for an event file started at t on host:
// events.out.tfevents.<Unix seconds, 10 digits>.<host>, so that names sort by start time.
func FileName(t time.Time, host string) string {
	return fmt.Sprintf("%s%010d.%s", FilePrefix, t.Unix(), cleanHost(host))
}

// cleanHost makes a host name usable in a file name.
func cleanHost(host string) string {
	host = strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r <= ' ' {
			return '_'
		}
		return r
	}, host)
	if host == "" {
		return "localhost"
	}
	return host
}

// FilePerm is the mode the event files are created with, before the umask: that of a run's
// other files (runfiles.FilePerm), so that the umask decides who may read them.
const FilePerm os.FileMode = 0o666

// Writer appends events to one event file. Each event is one write to the file, unbuffered,
// so a process killed at any point leaves whole records and at most one torn last record.
type Writer struct {
	f *os.File
}

// Create makes dir if needed and creates a new event file in it, named FileName(now, host) (with
// .2, .3, … appended when a file of that name exists: two sessions in one second), whose first
// event is the version event.
func Create(dir string, now time.Time, host string) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("event folder: %w", err)
	}
	base := filepath.Join(dir, FileName(now, host))
	for i := 1; i <= 100; i++ {
		path := base
		if i > 1 {
			path = fmt.Sprintf("%s.%d", base, i)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, FilePerm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err // names the file
		}
		w := &Writer{f: f}
		if err := w.Write(VersionEvent(unixSeconds(now))); err != nil {
			f.Close()
			return nil, err
		}
		return w, nil
	}
	return nil, fmt.Errorf("%s and .2 … .100 all exist", base)
}

// unixSeconds is t as TensorBoard's wall_time: seconds since the Unix epoch.
func unixSeconds(t time.Time) float64 { return float64(t.Unix()) + float64(t.Nanosecond())/1e9 }

// Wall is t as an event's wall_time.
func Wall(t time.Time) float64 { return unixSeconds(t) }

// Path is the file's path.
func (w *Writer) Path() string { return w.f.Name() }

// Write appends one serialized event as a record, in one write.
func (w *Writer) Write(event []byte) error {
	_, err := w.f.Write(AppendRecord(nil, event))
	return err // an *fs.PathError, naming the file
}

// Close closes the file.
func (w *Writer) Close() error {
	return w.f.Close() // an *fs.PathError, naming the file
}
