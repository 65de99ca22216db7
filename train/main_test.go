package train

import (
	"fmt"
	"os"
	"testing"
)

// TestMain points the default preprocessing cache (dataset.cache auto) at a temporary folder,
// so no test writes into the user's cache folder.
func TestMain(m *testing.M) {
	os.Exit(withTempCache(m))
}

func withTempCache(m *testing.M) int {
	dir, err := os.MkdirTemp("", "rewiregnn-test-cache")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	os.Setenv("XDG_CACHE_HOME", dir)
	return m.Run()
}
