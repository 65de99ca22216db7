package runfiles

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "f.txt")
	for _, s := range []string{"one", "two"} {
		if err := WriteAtomic(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil || string(b) != s {
			t.Fatalf("got %q %v, want %q", b, err, s)
		}
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Errorf("%d entries left in the folder, want 1", len(ents))
	}
}
