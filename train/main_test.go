package train

import (
	"os"
	"testing"

	"github.com/rewiregnn/rewiregnn/internal/testdata"
)

// TestMain points the default preprocessing cache (dataset.cache auto) at a temporary folder,
// so no test writes into the user's cache folder.
func TestMain(m *testing.M) {
	os.Exit(testdata.MainWithTempCache(m))
}
