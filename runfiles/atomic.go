package runfiles

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// FilePerm is the mode every file of a run directory is created with (config.yaml,
// metrics.jsonl, result.json, checkpoint.bin, predictions.bin, lock, train.log and the
// TensorBoard event files), before the umask: as with os.Create, the process's umask decides
// who may read them (0644 under the usual umask 022, 0640 under 027). One mode for all, so that
// a run folder is shared, copied or archived as one.
const FilePerm os.FileMode = 0o666

// WriteAtomic replaces path with data so that a reader sees either the old content or the
// whole new content, never a part: the data goes to a temporary file in the same folder (created
// if needed) made with mode perm less the process's umask (as os.WriteFile would make path),
// synced and renamed over path. On failure the temporary file is removed and path is left as
// it was.
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
	tmp, err := createTemp(dir, "."+filepath.Base(path)+".tmp", perm)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	name := tmp.Name()
	err = write(tmp)
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

// createTemp creates a new file prefix<random digits> in dir with mode perm less the umask.
// (os.CreateTemp makes its files 0600 whatever the umask, and a Chmod after it would ignore the
// umask: the kernel applies it only when a file is created.)
func createTemp(dir, prefix string, perm os.FileMode) (*os.File, error) {
	for range 1000 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("no unused temporary name %s* in %s after 1000 tries", prefix, dir)
}
