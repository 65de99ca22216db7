// Package download fetches the public archives of the benchmark datasets (as PyTorch Geometric
// distributes them) into the data folder, checks them and unpacks the zip files.
//
// An archive a lands in <data>/<a.Dest>/<a.Name>. The folder also holds:
//
//	<Name>.part      an unfinished download, resumed by the next Fetch (HTTP Range)
//	<Name>.unpacked  the SHA-256 of the archive last extracted there
//	SHA256SUMS       sums recorded on first download when none is published (sha256sum -c reads it)
//	.lock            held by the Fetch running in that folder
package download

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// File names the downloader keeps beside the archives.
const (
	// SumsFile records, in sha256sum format, the sums of the archives that have no published
	// one (trust on first use).
	SumsFile       = "SHA256SUMS"
	lockName       = ".lock"
	partSuffix     = ".part"
	unpackedSuffix = ".unpacked"
	unpackPrefix   = ".unpack-"
)

// Archive is one file to fetch for a dataset.
type Archive struct {
	Dataset string // the dataset it belongs to (zinc, aqsol, …)
	Name    string // file name under <data>/<Dest>/
	URL     string // where it is published (http or https)
	Size    int64  // byte size; 0 when not known
	SHA256  string // hex digest; "" when not known (recorded on first download)
	Unzip   bool   // extract the zip into <data>/<Dest>/ after verification
	Dest    string // folder relative to the data folder, slash-separated (zinc/pyg)
	Manual  string // one-line instruction for fetching it by hand (default: from its URL)
}

// Path is where the archive is saved under the data folder dataDir.
func (a Archive) Path(dataDir string) string {
	return filepath.Join(a.dir(dataDir), a.Name)
}

// dir is the destination folder of the archive.
func (a Archive) dir(dataDir string) string {
	return filepath.Join(dataDir, filepath.FromSlash(a.Dest))
}

// validate rejects an archive whose fields could not be fetched safely: a name that is not a
// plain file name, a destination outside the data folder, a URL that is not http(s), a sum that
// is not 64 hex digits.
func (a Archive) validate() error {
	switch {
	case a.Dataset == "":
		return errors.New("archive has no dataset name")
	case a.Name == "" || a.Name != filepath.Base(a.Name) || strings.ContainsAny(a.Name, `/\`) || strings.HasPrefix(a.Name, "."):
		return fmt.Errorf("archive name %q: want a plain file name", a.Name)
	case a.Name == SumsFile || strings.HasSuffix(a.Name, partSuffix) || strings.HasSuffix(a.Name, unpackedSuffix):
		return fmt.Errorf("archive name %q: reserved for the downloader's own files", a.Name)
	case !filepath.IsLocal(filepath.FromSlash(a.Dest)):
		return fmt.Errorf("destination folder %q: want a relative folder inside the data folder", a.Dest)
	case a.Size < 0:
		return fmt.Errorf("size %d: want 0 (unknown) or more", a.Size)
	}
	if a.SHA256 != "" {
		if b, err := hex.DecodeString(a.SHA256); err != nil || len(b) != 32 {
			return fmt.Errorf("sha256 %q: want 64 hex digits", a.SHA256)
		}
	}
	u, err := url.Parse(a.URL)
	if err != nil {
		return fmt.Errorf("bad URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("URL %q: want an http or https address", a.URL)
	}
	return nil
}

// manual is the instruction for fetching the archive by hand.
func (a Archive) manual() string {
	if a.Manual != "" {
		return a.Manual
	}
	return manualPlain
}

// Error is a failure of Fetch. Its message names the dataset, the URL and the destination file;
// when the network is unavailable it also says what to download by hand and where to put it.
type Error struct {
	Dataset, URL, Path string
	// Unreachable reports a network failure: name resolution, a refused connection, a timeout.
	Unreachable bool
	// Manual is the instruction for fetching the file by hand (used when Unreachable).
	Manual string
	Err    error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Unreachable {
		return fmt.Sprintf("%s: cannot reach %s: %v; %s and save it as %s, then run the command again",
			e.Dataset, e.URL, e.Err, e.Manual, e.Path)
	}
	return fmt.Sprintf("%s: fetching %s into %s: %v", e.Dataset, e.URL, e.Path, e.Err)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }
