package download

import (
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// LocalFile is a file of a dataset that the data folder holds but that cannot be fetched from
// these machines: it is listed with where it comes from and checked against its size and
// SHA-256, never downloaded (Fetch knows only the archives).
type LocalFile struct {
	Dataset string // the dataset it belongs to
	Name    string // file name under <data>/<Dest>/
	Dest    string // folder relative to the data folder, slash-separated (peptides-func)
	Kind    string // what the file is, in a few words
	Size    int64  // byte size
	SHA256  string // hex digest
	Origin  string // where it comes from and how to get it (one line)
}

// Path is where the file lies under the data folder dataDir.
func (f LocalFile) Path(dataDir string) string {
	return filepath.Join(dataDir, filepath.FromSlash(f.Dest), f.Name)
}

// validate rejects a file that cannot be checked: a name that is not a plain file name, a
// folder outside the data folder, no size, a sum that is not 64 hex digits.
func (f LocalFile) validate() error {
	switch {
	case f.Dataset == "":
		return errors.New("local file has no dataset name")
	case f.Name == "" || f.Name != filepath.Base(f.Name) || strings.ContainsAny(f.Name, `/\`):
		return fmt.Errorf("local file name %q: want a plain file name", f.Name)
	case !filepath.IsLocal(filepath.FromSlash(f.Dest)):
		return fmt.Errorf("local file folder %q: want a relative folder inside the data folder", f.Dest)
	case f.Size <= 0:
		return fmt.Errorf("local file %s: size %d, want a known size", f.Name, f.Size)
	}
	if b, err := hex.DecodeString(f.SHA256); err != nil || len(b) != 32 {
		return fmt.Errorf("local file %s: sha256 %q: want 64 hex digits", f.Name, f.SHA256)
	}
	return nil
}

// Origins of the registry's local files.
const (
	lrgbRaw   = "LRGB's raw file, byte for byte (its MD5 is the one LRGB's loader checks; a copy kept in github.com/benfinkelshtein/CoGNN at 2494bd77); LRGB's Dropbox link is not reachable from these machines"
	lrgbJSONL = "built from LRGB's raw CSV and split (raw/) with OGB's smiles2graph rules, RDKit 2022.09.3; not downloadable from these machines (the public source: LRGB's Dropbox, PyG's peptidesfunc.zip)"
	jsonlKind = "JSON Lines graphs, read before the archive's files"
)

// localFiles are the files of the shared data folder that have no public download here, with the
// sizes and sums its README records.
var localFiles = []LocalFile{
	{Dataset: "peptides-func", Name: "train.jsonl.gz", Dest: "peptides-func", Kind: jsonlKind, Origin: lrgbJSONL,
		Size: 6259048, SHA256: "9b89015830dfafe88952d67c2738cbeb53eee00ca18c860ef0b3f6ca843add8c"},
	{Dataset: "peptides-func", Name: "val.jsonl.gz", Dest: "peptides-func", Kind: jsonlKind, Origin: lrgbJSONL,
		Size: 1324327, SHA256: "d24a29283dd8a6e6f30c04ea7daac126aa98f9edaf1fdf14dd9d773f33611b53"},
	{Dataset: "peptides-func", Name: "test.jsonl.gz", Dest: "peptides-func", Kind: jsonlKind, Origin: lrgbJSONL,
		Size: 1327104, SHA256: "4dfd9ac18da8c00ceb277b4bf46d0a3056eeac9f1dd2c759c41a54735b1d8061"},
	{Dataset: "peptides-func", Name: "peptide_multi_class_dataset.csv.gz", Dest: "peptides-func/raw", Kind: "LRGB raw CSV", Origin: lrgbRaw,
		Size: 769970, SHA256: "e314f7dfb1ac46ef83fe5f5aa4fe502ad4527da633b64e6b997cb0c452511de3"},
	{Dataset: "peptides-func", Name: "splits_random_stratified_peptide.pickle", Dest: "peptides-func/raw", Kind: "LRGB split, a pickle", Origin: lrgbRaw,
		Size: 124533, SHA256: "4573079852cce8867ad2d734c5dd22d77538bbe9f628223a8d4b3b531f6fffd0"},
}

// LocalFiles returns the local files of a dataset (a copy; none for most datasets).
func LocalFiles(dataset string) []LocalFile {
	var out []LocalFile
	for _, f := range localFiles {
		if f.Dataset == dataset {
			out = append(out, f)
		}
	}
	return out
}

// InspectLocal reports what the data folder holds of a local file, hashing it when it is there.
// A missing file or folder is not an error: nothing is present.
func InspectLocal(dataDir string, f LocalFile) (Status, error) {
	st := Status{Path: f.Path(dataDir), Want: lower(f.SHA256)}
	if err := f.validate(); err != nil {
		return st, err
	}
	if err := st.hash(); err != nil || !st.Present {
		return st, err
	}
	st.Verified = st.SHA256 == st.Want && st.Size == f.Size
	return st, nil
}
