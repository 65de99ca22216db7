package configs_test

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
)

// runNamesFile lists the run name of every run of every config under configs/ ("<file>: <out>/<name>"),
// as the names stood before the run name took dataset.rw_steps (#69): the names of committed
// configs must not change, or their runs' folders would be lost.
const runNamesFile = "testdata/run-names.txt"

// committedRuns loads every config under configs/ (grids expanded, defaults skipped) and returns
// each run with the file it came from.
func committedRuns(t *testing.T) map[string][]*config.Run {
	t.Helper()
	out := map[string][]*config.Run{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (p == "defaults" || p == "testdata") {
			return fs.SkipDir
		}
		if d.IsDir() || filepath.Ext(p) != ".yaml" {
			return nil
		}
		p = filepath.ToSlash(p)
		if strings.HasPrefix(p, "grids/") {
			g, err := config.LoadGrid(p, nil)
			if err != nil {
				return err
			}
			runs, err := g.Expand()
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			out[p] = runs
			return nil
		}
		r, err := config.Load(p, nil)
		if err != nil {
			return err
		}
		out[p] = []*config.Run{r}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// nameLine is a run's line of runNamesFile.
func nameLine(file string, r *config.Run) string {
	return file + ": " + filepath.ToSlash(filepath.Join(r.Out, r.RunName()))
}

// TestCommittedRunNames: every run of a committed config at the default dataset.rw_steps keeps
// the name runNamesFile records, and no two runs of different configs share a run folder.
func TestCommittedRunNames(t *testing.T) {
	for _, k := range os.Environ() { // the files alone decide every key
		if name, _, _ := strings.Cut(k, "="); strings.HasPrefix(name, config.EnvPrefix) {
			t.Setenv(name, "")
		}
	}
	all := committedRuns(t)
	var got []string
	folder := map[string]string{} // run folder → config hash
	for file, runs := range all {
		for _, r := range runs {
			if r.Dataset.RWSteps == config.DefaultRWSteps {
				got = append(got, nameLine(file, r))
			}
			dir := filepath.Join(r.Out, r.RunName())
			if h, ok := folder[dir]; ok && h != r.Hash() {
				t.Errorf("%s: run folder %s holds two different configs", file, dir)
			}
			folder[dir] = r.Hash()
		}
	}
	want := readLines(t, runNamesFile)
	if len(want) < 900 {
		t.Fatalf("%s: %d names, want every run of configs/", runNamesFile, len(want))
	}
	gotSet := map[string]bool{}
	for _, g := range got {
		gotSet[g] = true
	}
	wantSet := map[string]bool{}
	for _, w := range want {
		wantSet[w] = true
		if !gotSet[w] {
			t.Errorf("run name gone: %s", w)
		}
	}
	for _, g := range got {
		if !wantSet[g] {
			t.Errorf("new run name: %s", g)
		}
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		out = append(out, s.Text())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
