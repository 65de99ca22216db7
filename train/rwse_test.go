package train

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/rewiregnn/rewiregnn/internal/testdata"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// TestRWSETrains trains a GatedGCN on ZINC molecules with the random-walk encoding (k = 8,
// r = 2, CLS node; batches of 128 molecules, large enough that the parallel kernels split
// their work) for two epochs with GOMAXPROCS 1 and 4, and requires a training loss that falls
// and both runs equal bit for bit (metrics, results, parameters).
func TestRWSETrains(t *testing.T) {
	dir := testdata.Dir(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var first string
	for _, procs := range []int{1, 4} {
		runtime.GOMAXPROCS(procs)
		c := load(t, "dataset.name=zinc", "dataset.dir="+dir, "dataset.subset=256", "dataset.r=2", "dataset.encoding=rwse",
			"dataset.rw_steps=8", "dataset.cls=true", "model.name=gatedgcn", "model.layers=2", "model.hidden=16",
			"train.batch_size=128", "train.max_epochs=2", fmt.Sprintf("name=rwse%d", procs))
		res, err := trainRun(t, c, 41, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		eps, err := runfiles.ReadMetrics(c.Dir(41) + "/" + runfiles.MetricsFile)
		if err != nil {
			t.Fatal(err)
		}
		if len(eps) != 2 || !(eps[1].TrainLoss < eps[0].TrainLoss) || res.Encoding != "rwse" {
			t.Fatalf("GOMAXPROCS %d: %d epochs, training losses %v → %v, encoding %q", procs, len(eps), eps[0].TrainLoss, eps[len(eps)-1].TrainLoss, res.Encoding)
		}
		if first == "" {
			first = c.Dir(41)
			continue
		}
		sameRuns(t, first, c.Dir(41))
	}
}

// TestRWSEHasNoSigns: a run with the random-walk encoding reads it through rwse_pe, width k,
// and neither draws nor applies Laplacian signs.
func TestRWSEHasNoSigns(t *testing.T) {
	c := nm2(t, "train.batch_size=8", "dataset.encoding=rwse", "dataset.rw_steps=5")
	r := &run{o: Options{Run: c, Seed: 41, Dir: c.Dir(41), Workers: 1}, cfg: c, start: time.Now(), log: io.Discard}
	defer r.closeDevice()
	if err := prepareInPlace(r); err != nil {
		t.Fatal(err)
	}
	defer r.tr.Close()
	if r.io.NodeEnc != "rwse" || r.io.NodePE != 5 {
		t.Fatalf("the model reads the %d-wide %q encoding, want the 5-wide random walk", r.io.NodePE, r.io.NodeEnc)
	}
	if !slices.Contains(r.p.Names, "rwse_pe.W") || !slices.Contains(r.p.Names, "rwse_pe.b") || slices.Contains(r.p.Names, "lap_pe.W") {
		t.Fatalf("want the parameters rwse_pe.W and rwse_pe.b and no lap_pe, have %v", r.p.Names)
	}
	if w := r.p.T["rwse_pe.W"].Shape(); w[0] != 5 || w[1] != c.Model.Hidden {
		t.Fatalf("rwse_pe.W has shape %v, want [5 %d]", w, c.Model.Hidden)
	}
	if g := r.train[0]; g.NodePEDim != 5 || len(g.NodePE) != 5*g.N {
		t.Fatalf("training graph: node encoding width %d, %d values for %d nodes", g.NodePEDim, len(g.NodePE), g.N)
	}
	r.loop.Perm = make([]int32, len(r.train))
	for i := range r.loop.Perm {
		r.loop.Perm[i] = int32(i)
	}
	if _, err := r.trainBatch(0); err != nil {
		t.Fatal(err)
	}
	if r.tr.LapSign != nil {
		t.Fatalf("Laplacian signs drawn for rwse: %v", r.tr.LapSign)
	}
}
