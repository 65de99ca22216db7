package download

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

// unpack extracts the verified archive (of SHA-256 sum) into the destination folder, unless
// its marker says this very archive was extracted there already. The entries are extracted
// into a temporary folder first; each top-level entry then replaces the previous one.
func (f *fetcher) unpack(sum string) error {
	marker := f.path + unpackedSuffix
	if b, err := os.ReadFile(marker); err == nil && strings.TrimSpace(string(b)) == sum {
		f.res.UnpackSkipped = true
		return nil
	}
	removeStaleTemps(f.dest)
	tmp, err := os.MkdirTemp(f.dest, unpackPrefix)
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	root := filepath.Join(tmp, "new")
	if err := extract(f.path, root); err != nil {
		return fmt.Errorf("extracting %s: %w", f.path, err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if reserved(e.Name(), f.a.Name) {
			return fmt.Errorf("extracting %s: top-level entry %q would replace a file of the downloader", f.path, e.Name())
		}
	}
	if err := os.Remove(marker); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		if err := replace(root, filepath.Join(tmp, "old"), f.dest, e.Name()); err != nil {
			return fmt.Errorf("moving the extracted %s into place: %w", e.Name(), err)
		}
	}
	if err := runfiles.WriteAtomic(marker, []byte(sum+"\n"), 0o644); err != nil {
		return err
	}
	f.res.Unpacked = true
	return nil
}

// removeStaleTemps deletes the temporary folders an interrupted extraction left in dir (the
// caller holds dir's lock).
func removeStaleTemps(dir string) {
	old, _ := filepath.Glob(filepath.Join(dir, unpackPrefix+"*"))
	for _, p := range old {
		os.RemoveAll(p)
	}
}

// reserved reports a top-level name that belongs to the downloader's own files.
func reserved(name, archive string) bool {
	return name == archive || name == SumsFile || name == lockName || strings.HasPrefix(name, unpackPrefix) ||
		strings.HasSuffix(name, partSuffix) || strings.HasSuffix(name, unpackedSuffix)
}

// replace moves from/name to dest/name. A file replaces a file atomically; otherwise the old
// entry is first moved aside into oldDir (a folder cannot be renamed over).
func replace(from, oldDir, dest, name string) error {
	src, dst := filepath.Join(from, name), filepath.Join(dest, name)
	di, err := os.Lstat(dst)
	if errors.Is(err, fs.ErrNotExist) {
		return os.Rename(src, dst)
	}
	if err != nil {
		return err
	}
	si, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if di.Mode().IsRegular() && si.Mode().IsRegular() {
		return os.Rename(src, dst)
	}
	if err := os.MkdirAll(oldDir, 0o755); err != nil {
		return err
	}
	aside := filepath.Join(oldDir, name)
	if err := os.Rename(dst, aside); err != nil {
		return err
	}
	if err := os.Rename(src, dst); err != nil {
		return errors.Join(err, os.Rename(aside, dst))
	}
	return nil
}

// extract writes the zip's entries under root, refusing entries that would land outside it
// (zip slip), links and special files; archive/zip checks each file's CRC-32 as it is read.
func extract(zipPath, root string) error {
	zr, err := zip.OpenReader(zipPath)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return err
	}
	defer zr.Close()
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	for _, zf := range zr.File {
		if err := extractEntry(zf, root); err != nil {
			return fmt.Errorf("entry %q: %w", zf.Name, err)
		}
	}
	return nil
}

// extractEntry writes one entry of a zip under root.
func extractEntry(zf *zip.File, root string) error {
	rel := filepath.FromSlash(zf.Name)
	if !filepath.IsLocal(rel) {
		return errors.New("refused: its path leads outside the destination folder (zip slip)")
	}
	target := filepath.Join(root, rel)
	mode := zf.Mode()
	switch {
	case mode&fs.ModeSymlink != 0:
		return errors.New("refused: a symbolic link")
	case mode.IsDir():
		return os.MkdirAll(target, 0o755)
	case !mode.IsRegular():
		return fmt.Errorf("refused: not a regular file (mode %v)", mode)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	r, err := zf.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644|mode.Perm()&0o111)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, r)
	if err == nil {
		err = out.Sync()
	}
	return errors.Join(err, out.Close())
}
