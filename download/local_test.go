package download

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLocalFiles: the registry's local files are Peptides-func's three JSON Lines files and
// LRGB's two raw files, each valid, with the README's sizes; a file is verified only with the
// right sum and size, and a missing one is not an error.
func TestLocalFiles(t *testing.T) {
	fs := LocalFiles("peptides-func")
	var names []string
	for _, f := range fs {
		if err := f.validate(); err != nil || f.Kind == "" || f.Origin == "" {
			t.Errorf("%+v: %v", f, err)
		}
		names = append(names, filepath.ToSlash(filepath.Join(f.Dest, f.Name)))
	}
	want := "peptides-func/train.jsonl.gz peptides-func/val.jsonl.gz peptides-func/test.jsonl.gz " +
		"peptides-func/raw/peptide_multi_class_dataset.csv.gz peptides-func/raw/splits_random_stratified_peptide.pickle"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("local files %q, want %q", got, want)
	}
	if fs[0].Size != 6259048 || len(LocalFiles("peptides-struct")) != 0 || len(LocalFiles("zinc")) != 0 {
		t.Errorf("train %d bytes; struct %d, zinc %d local files", fs[0].Size, len(LocalFiles("peptides-struct")), len(LocalFiles("zinc")))
	}

	dir := t.TempDir()
	content := []byte("graphs\n")
	f := LocalFile{Dataset: "d", Name: "a.jsonl.gz", Dest: "d", Kind: "k", Origin: "o", Size: int64(len(content)),
		SHA256: "0b2ebd7e3ca0d0cd8ac8bc0a5b51e0a7e5e8d3c5b70d2ed6f1ad4ba52d3f4ed1"}
	if st, err := InspectLocal(dir, f); err != nil || st.Present || st.Path != filepath.Join(dir, "d", "a.jsonl.gz") {
		t.Errorf("missing: %+v %v", st, err)
	}
	os.MkdirAll(filepath.Join(dir, "d"), 0o755)
	os.WriteFile(f.Path(dir), content, 0o644)
	_, sum, _ := hashFile(f.Path(dir))
	if st, err := InspectLocal(dir, f); err != nil || !st.Present || st.Verified || st.SHA256 != sum {
		t.Errorf("wrong sum: %+v %v", st, err)
	}
	f.SHA256 = strings.ToUpper(sum)
	if st, err := InspectLocal(dir, f); err != nil || !st.Verified {
		t.Errorf("right sum: %+v %v", st, err)
	}
	f.Size++
	if st, _ := InspectLocal(dir, f); st.Verified {
		t.Error("verified with the wrong size")
	}
	for _, bad := range []LocalFile{{Dataset: "d", Name: "../x", Dest: "d", Size: 1, SHA256: sum}, {Dataset: "d", Name: "x", Dest: "../d", Size: 1, SHA256: sum},
		{Dataset: "d", Name: "x", Dest: "d", Size: 1, SHA256: "abc"}, {Dataset: "d", Name: "x", Dest: "d", SHA256: sum}} {
		if _, err := InspectLocal(dir, bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
