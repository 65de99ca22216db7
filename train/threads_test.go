package train

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/rewiregnn/rewiregnn/internal/testdata"
	"github.com/rewiregnn/rewiregnn/models"
)

// TestThreadCountDoesNotChangeTraining trains the same seed of each registered model (two steps of 128
// ZINC molecules rewired at r = 2 with the adjacency encoding, batches with about 13,000
// edges, so that every parallel kernel splits its work) with GOMAXPROCS 1, 2 and 4, and with
// activation recomputation at 2, and requires every epoch's metrics, the results and every
// parameter to be equal bit for bit.
func TestThreadCountDoesNotChangeTraining(t *testing.T) {
	dir := testdata.Dir(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, model := range models.Names() {
		t.Run(model, func(t *testing.T) {
			var first string
			for _, run := range []struct {
				procs     int
				recompute bool
			}{{1, false}, {2, false}, {4, false}, {2, true}} {
				runtime.GOMAXPROCS(run.procs)
				c := load(t, "dataset.name=zinc", "dataset.dir="+dir, "dataset.subset=256", "dataset.r=2", "dataset.encoding=adj",
					"model.name="+model, "model.dropout=0.1", "train.batch_size=128", "train.max_epochs=1",
					fmt.Sprintf("model.recompute=%v", run.recompute), fmt.Sprintf("name=threads%d-%v", run.procs, run.recompute))
				if _, err := trainRun(t, c, 41, false, nil); err != nil {
					t.Fatal(err)
				}
				if first == "" {
					first = c.Dir(41)
					continue
				}
				sameRuns(t, first, c.Dir(41))
			}
		})
	}
}
