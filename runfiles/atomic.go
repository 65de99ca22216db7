package runfiles

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteAtomic replaces path with data so that a reader sees either the old content or the
// whole new content, never a part: the data goes to a temporary file in the same folder (created
// if needed), which is given perm, synced and renamed over path. On failure the temporary file
// is removed and path is left as it was.
func WriteAtomic(path string, data []byte, perm os.FileMode) error {
	return WriteAtomicFunc(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteAtomicFunc is WriteAtomic with the content written by write, as it is made (a large file
// need not be held in memory first).
func WriteAtomicFunc(path string, perm os.FileMode, write func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	name := tmp.Name()
	err = write(tmp)
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
