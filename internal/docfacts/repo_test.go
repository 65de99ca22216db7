package docfacts

import (
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the repository root, two folders up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// The figures the docs quote from the repository's files equal those files.
func TestRepositoryDocFacts(t *testing.T) {
	ms, err := Check(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		t.Error(m)
	}
	if len(ms) > 0 {
		t.Log("`go run ./cmd/docfacts -w` rewrites them")
	}
}

// Every relative link in README.md and docs/ names a file that exists, and an anchor a heading.
func TestRepositoryDocLinks(t *testing.T) {
	bad, err := BrokenLinks(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Errorf("%d broken links:\n%s", len(bad), strings.Join(bad, "\n"))
	}
}
