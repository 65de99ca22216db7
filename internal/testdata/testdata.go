// Package testdata finds the shared benchmark data folder for tests and benchmarks, which run
// with the package folder as working directory.
package testdata

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
)

// Dir returns the benchmark data folder: $REWIREGNN_DATA if set, else the shared folder beside
// the repository root found by walking up from the working directory. It skips the test if
// there is none.
func Dir(tb testing.TB) string {
	tb.Helper()
	if d := os.Getenv(data.EnvDataDir); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			cand := filepath.Join(d, "..", "shared", "data")
			if st, err := os.Stat(cand); err == nil && st.IsDir() {
				return cand
			}
			tb.Skipf("no benchmark data: %s does not exist (set %s)", cand, data.EnvDataDir)
		}
		if filepath.Dir(d) == d {
			tb.Skipf("no benchmark data: no go.mod above %s (set %s)", wd, data.EnvDataDir)
		}
	}
}

// Load loads a split of a dataset from the shared data folder, failing the test on error.
func Load(tb testing.TB, dataset, split string) ([]*data.Graph, *data.Spec) {
	tb.Helper()
	gs, spec, err := data.LoadSplit(Dir(tb), dataset, split)
	if err != nil {
		tb.Fatal(err)
	}
	return gs, spec
}

// MainWithTempCache runs m with XDG_CACHE_HOME pointing at a fresh temporary folder, removed
// afterwards, so that runs with the default preprocessing cache (dataset.cache auto) never
// write into the user's cache folder. A package's TestMain calls os.Exit on its result.
func MainWithTempCache(m *testing.M) int {
	keepGoBuildCache()
	dir, err := os.MkdirTemp("", "rewiregnn-test-cache")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	os.Setenv("XDG_CACHE_HOME", dir)
	return m.Run()
}

// keepGoBuildCache pins GOCACHE to the go command's build cache before XDG_CACHE_HOME moves:
// Go's default build cache lies under XDG_CACHE_HOME, so without it every go build or go tool
// a test runs would start from an empty cache and compile everything (a minute on 2 cores).
// Without a go command on PATH nothing changes.
func keepGoBuildCache() {
	if os.Getenv("GOCACHE") != "" {
		return
	}
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if dir := strings.TrimSpace(string(out)); err == nil && dir != "" && dir != "off" {
		os.Setenv("GOCACHE", dir)
	}
}
