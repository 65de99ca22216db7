package config

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

// TestCommittedRunsKeepTheirHash loads the config.yaml of every run committed under
// docs/results and requires its hash to be the config_hash its result.json recorded: the
// serialisation Hash digests must not change for the models and keys those runs used.
func TestCommittedRunsKeepTheirHash(t *testing.T) {
	for _, k := range os.Environ() { // the runs' own files decide every key
		if name, _, _ := strings.Cut(k, "="); strings.HasPrefix(name, EnvPrefix) {
			t.Setenv(name, "")
		}
	}
	root := filepath.Join("..", "docs", "results")
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != runfiles.ResultFile {
			return err
		}
		res, err := runfiles.ReadResult(p)
		if err != nil {
			return err
		}
		if res.ConfigHash == "" {
			return nil
		}
		cfg := filepath.Join(filepath.Dir(p), runfiles.ConfigFile)
		r, err := Load(cfg, nil)
		if err != nil {
			t.Errorf("%s: %v", cfg, err)
			return nil
		}
		n++
		if got := r.Hash(); got != res.ConfigHash {
			t.Errorf("%s: hash %s, result.json has %s", cfg, got, res.ConfigHash)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 50 {
		t.Fatalf("checked %d committed runs, want the whole of docs/results (about 90)", n)
	}
	t.Logf("%d committed runs keep their config_hash", n)
}
