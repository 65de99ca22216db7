package data

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The ways out of a data folder that lacks a dataset or holds a damaged file name the command
// that fetches the dataset's public distribution (cmd/data get), in backquotes.

// GetCommand is the command that fetches a dataset's public distribution into the data folder
// dir.
func GetCommand(dir, name string) string {
	return fmt.Sprintf("`go run ./cmd/data get -data %s %s`", dir, strings.ToLower(name))
}

// CheckFolder refuses a data folder dir without the folder of a dataset read from files,
// naming the command that fetches it; a generated dataset needs none.
func CheckFolder(dir, name string) error {
	if !NeedsFiles(name) {
		return nil
	}
	sub := filepath.Join(dir, strings.ToLower(name))
	if st, err := os.Stat(sub); err == nil && st.IsDir() {
		return nil
	}
	return fmt.Errorf("%s: the data folder %s has no folder %s: fetch the dataset with %s (or pass -data DIR naming a folder that holds it)",
		strings.ToLower(name), dir, sub, GetCommand(dir, name))
}

// readFailed adds the way out to err, an error reading a file of dataset name in the data folder
// dir: a file that cannot be read for its permissions is to be made readable, a damaged one
// (present, but it does not parse or check) to be deleted and fetched again. A missing file's
// error names its own way out and is left as it is, as is every error of a generated dataset.
func readFailed(dir, name string, err error) error {
	switch {
	case err == nil, !NeedsFiles(name), errors.Is(err, fs.ErrNotExist):
		return err
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: make the data folder's files readable by this user", err)
	}
	return fmt.Errorf("%w; the file is damaged or not the one expected: %s", err, refetch(dir, name))
}

// refetch is how to replace the damaged files of a dataset, by the source they were read from.
func refetch(dir, name string) string {
	name = strings.ToLower(name)
	get := GetCommand(dir, name)
	switch SourceOf(dir, name) {
	case SourcePyG:
		return fmt.Sprintf("delete the folder %s (the archive, its unpacked files and their recorded sums) and fetch it again with %s", PyGDir(dir, name), get)
	case SourceJSONL:
		if _, ok := peptides[name]; ok {
			return fmt.Sprintf("copy it again from the shared data folder (`go run ./cmd/data list -data %s` checks the copies' SHA-256), or delete train.jsonl.gz, val.jsonl.gz and test.jsonl.gz in %s and fetch the public distribution, read in their place, with %s",
				dir, filepath.Join(dir, name), get)
		}
	}
	return fmt.Sprintf("delete it and fetch the public distribution, read in place of the folder's other files, with %s", get)
}
