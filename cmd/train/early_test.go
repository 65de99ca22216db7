package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

// fixtures is the data package's test data: small copies of the public distributions (pyg/) and
// of Peptides-func's JSON Lines files (jsonl/).
const fixtures = "../../data/testdata"

// copyFixture copies the folder fixtures/from to to.
func copyFixture(t *testing.T, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(filepath.Join(fixtures, from))); err != nil {
		t.Fatal(err)
	}
}

// getCommand is the command that fetches a dataset into the data folder dir, as a way out names it.
func getCommand(dir, name string) string {
	return "`go run ./cmd/data get -data " + dir + " " + name + "`"
}

// wantNoRunDirectory fails if out holds anything: a run that cannot train fails before it
// creates its run directory (not even <out>/<run name>).
func wantNoRunDirectory(t *testing.T, out string) {
	t.Helper()
	ents, err := os.ReadDir(out)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(ents) > 0 {
		t.Fatalf("the failed run left %s in %s", ents[0].Name(), out)
	}
}

// TestEarlyFailuresLeaveNoRunDirectory: every check that can be made before training (the
// radius against the graphs, the data's presence and validity, the memory guard) fails with a
// message naming what is wrong and the way out (a missing or damaged data file: the command
// that fetches it), and leaves no run directory under -out.
func TestEarlyFailuresLeaveNoRunDirectory(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, data string) []string // the command's arguments but -out
		parts func(data string) []string               // what the message must name
	}{
		{"dataset.r=1000 with the adjacency encoding",
			func(t *testing.T, data string) []string {
				copyFixture(t, "pyg/zinc", filepath.Join(data, "zinc"))
				return []string{"-set", "dataset.name=zinc", "-set", "dataset.encoding=adj", "-set", "dataset.r=1000", "-data", data, "-cache", t.TempDir()}
			},
			func(string) []string { return []string{"dataset.r", "r must be at most"} }},
		{"a missing Peptides-func file",
			func(t *testing.T, data string) []string {
				dir := filepath.Join(data, "peptides-func")
				copyFixture(t, "jsonl/peptides-func", dir)
				if err := os.Remove(filepath.Join(dir, "val.jsonl.gz")); err != nil {
					t.Fatal(err)
				}
				return []string{"-set", "dataset.name=peptides-func", "-data", data, "-cache", "off"}
			},
			func(data string) []string {
				return []string{filepath.Join(data, "peptides-func", "val.jsonl.gz") + " not found", getCommand(data, "peptides-func")}
			}},
		{"a missing dataset folder",
			func(t *testing.T, data string) []string {
				return []string{"-set", "dataset.name=zinc", "-data", data}
			},
			func(data string) []string {
				return []string{"has no folder " + filepath.Join(data, "zinc"), getCommand(data, "zinc")}
			}},
		{"a damaged .pt file",
			func(t *testing.T, data string) []string {
				copyFixture(t, "pyg/peptides-func", filepath.Join(data, "peptides-func"))
				path := filepath.Join(data, "peptides-func", "pyg", "peptidesfunc", "train.pt")
				edit(t, path, func(s string) string { return s[:len(s)/2] })
				return []string{"-set", "dataset.name=peptides-func", "-data", data, "-cache", "off"}
			},
			func(data string) []string {
				return []string{filepath.Join(data, "peptides-func", "pyg", "peptidesfunc", "train.pt"), "damaged",
					"delete the folder " + filepath.Join(data, "peptides-func", "pyg"), getCommand(data, "peptides-func")}
			}},
		{"a run the memory guard refuses",
			func(t *testing.T, data string) []string {
				return []string{"-set", "dataset.name=neighborsmatch-2", "-memory", "1MiB"}
			},
			func(string) []string { return []string{"memory: this run needs", "(-memory)"} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			data, out := t.TempDir(), filepath.Join(t.TempDir(), "runs")
			args := append(c.setup(t, data), "-seed", "41", "-epochs", "1", "-quiet", "-out", out)
			wantRun(t, 1, c.parts(data), args...)
			wantNoRunDirectory(t, out)
		})
	}
}

// TestFailedRestartKeepsTheRun: a -restart that cannot train (here the memory guard refuses it)
// fails before it moves the old run's files aside: they stay where they were.
func TestFailedRestartKeepsTheRun(t *testing.T) {
	out := t.TempDir()
	trained(t, append(nm2Base(out), "-epochs", "1")...)
	wantRun(t, 1, []string{"memory: this run needs"}, append(nm2Base(out), "-epochs", "1", "-restart", "-memory", "1MiB")...)
	ents, err := os.ReadDir(nm2Dir(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), runfiles.OldPrefix) {
			t.Fatalf("the failed restart moved the run into %s", e.Name())
		}
	}
	if _, err := runfiles.ReadResult(filepath.Join(nm2Dir(out), runfiles.ResultFile)); err != nil {
		t.Fatalf("the run's result is gone: %v", err)
	}
}
