package data_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
)

func TestLoadMolecules(t *testing.T) {
	dataDir := testdata.Dir(t)
	for _, tc := range []struct {
		name, split string
		n, nodes    int
	}{{"zinc", "val", 1000, 23083}, {"aqsol", "test", 996, 28396}, {"ZINC", "test", 1000, 23117}} {
		gs, spec, err := data.LoadSplit(dataDir, tc.name, tc.split)
		if err != nil {
			t.Fatal(err)
		}
		nodes := 0
		for _, g := range gs {
			nodes += g.N
		}
		if len(gs) != tc.n || nodes != tc.nodes {
			t.Errorf("%s %s: %d graphs, %d nodes; want %d, %d", tc.name, tc.split, len(gs), nodes, tc.n, tc.nodes)
		}
		if spec.Name != "zinc" && spec.Name != "aqsol" {
			t.Errorf("spec name %q", spec.Name)
		}
	}
}

func TestMoleculeFileErrors(t *testing.T) {
	dataDir := testdata.Dir(t)
	raw, err := os.ReadFile(filepath.Join(dataDir, "zinc", "val.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "val.jsonl.gz")
	if err := os.WriteFile(path, raw[:len(raw)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = data.ReadMolecules(path, 28, 4)
	wantErr(t, err, path, "truncated")

	if err := os.WriteFile(path, []byte("{\"x\":[1]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = data.ReadMolecules(path, 28, 4)
	wantErr(t, err, path, "not a gzip file")

	// a data folder without the dictionary
	_, _, err = data.LoadSplit(dir, "zinc", "val")
	wantErr(t, err, "atom_types.json", "not found")
	_, _, err = data.LoadSplit(dataDir, "zinc", "dev")
	wantErr(t, err, `unknown split "dev"`)
}

func TestNeedsFiles(t *testing.T) {
	for name, want := range map[string]bool{"zinc": true, "AQSOL": true, "mnist": true, "cifar10": true,
		"cluster": false, "pattern": false, "neighborsmatch-3": false, "erdosrenyi": false} {
		if got := data.NeedsFiles(name); got != want {
			t.Errorf("NeedsFiles(%q) = %v, want %v", name, got, want)
		}
	}
}
