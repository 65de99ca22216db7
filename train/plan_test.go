package train

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
	"github.com/rewiregnn/rewiregnn/memplan"
)

// TestPlanMemory: the plan of a ZINC subset run has the guard's estimate, recomputation plans
// fewer activation bytes, and with a budget between the needs of two batch sizes the largest
// batch size that fits is the largest whose estimate is within it (checked one above).
func TestPlanMemory(t *testing.T) {
	dir := testdata.Dir(t)
	c, err := config.Load("", []string{"dataset.name=zinc", "dataset.dir=" + dir, "dataset.subset=300", "dataset.encoding=adj",
		"dataset.r=3", "train.batch_size=64", "train.buckets=2", "out=" + t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := PlanMemory(Options{Run: c, Seed: 41, Workers: 1}, 64<<30)
	if err != nil {
		t.Fatal(err)
	}
	if pl.FitsCPU != 64 || pl.FitsCPURecompute != 64 || pl.FitsGPU != 64 {
		t.Fatalf("64 GiB: fits %d / %d / %d, want the batch size 64", pl.FitsCPU, pl.FitsCPURecompute, pl.FitsGPU)
	}
	if pl.CPURecompute.Arena >= pl.CPU.Arena || pl.GPU.Activations <= 0 || pl.CPU.ArenaEdges <= 0 || !pl.CPU.ArenaTrain {
		t.Fatalf("activations %d normal, %d recomputed, GPU %d; the largest net: %d edges, training %v",
			pl.CPU.Arena, pl.CPURecompute.Arena, pl.GPU.Activations, pl.CPU.ArenaEdges, pl.CPU.ArenaTrain)
	}
	// The GPU plan holds the net of the large evaluation batches (300 graphs per split, 4
	// protocol batches of 64 at a time with -eval-batch 256): its holders beside the others'
	// (its activations, without gradients, stay below the training net's here).
	perBatch, err := PlanMemory(Options{Run: c, Seed: 41, Workers: 1, EvalBatch: 64}, 64<<30)
	if err != nil {
		t.Fatal(err)
	}
	large, err := PlanMemory(Options{Run: c, Seed: 41, Workers: 1, EvalBatch: 256}, 64<<30)
	if err != nil {
		t.Fatal(err)
	}
	if large.GPU.Holders <= perBatch.GPU.Holders || large.GPU.Activations < perBatch.GPU.Activations {
		t.Fatalf("GPU plan with large evaluation batches %+v, batch by batch %+v", large.GPU, perBatch.GPU)
	}
	r := &run{o: Options{Run: c, Seed: 41, Workers: 1}, cfg: c, log: nil}
	r.log = &bytes.Buffer{}
	if err := r.loadData(); err != nil {
		t.Fatal(err)
	}
	build, err := r.model()
	if err != nil {
		t.Fatal(err)
	}
	need := func(bs int) int64 {
		e, err := r.mem().Estimate(build, bs, false)
		if err != nil {
			t.Fatal(err)
		}
		return e.Need()
	}
	if need(64) != pl.CPU.Need() {
		t.Fatalf("plan %d, guard %d", pl.CPU.Need(), need(64))
	}
	budget := (need(20) + need(21)) / 2
	small, err := PlanMemory(Options{Run: c, Seed: 41, Workers: 1}, budget)
	if err != nil {
		t.Fatal(err)
	}
	if small.FitsCPU < 1 || small.FitsCPU >= 64 || need(small.FitsCPU) > budget || need(small.FitsCPU+1) <= budget {
		t.Fatalf("budget %d: fits batch %d (needs %d; one more %d)", budget, small.FitsCPU, need(small.FitsCPU), need(small.FitsCPU+1))
	}
	var out bytes.Buffer
	small.Report(&out)
	for _, want := range []string{"CPU recompute", "GPU", "per edge per layer", "fits", "batch size 64"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestPresizedPlan: with a cache folder, the plan reads only the graphs' sizes from the cache
// files (building them where missing), and plans exactly what the guard estimates from the
// loaded graphs; a run whose graphs do not fit is refused before they are loaded.
func TestPresizedPlan(t *testing.T) {
	cache := t.TempDir()
	c := nm2(t, "dataset.cache="+cache, "train.batch_size=16")
	var log bytes.Buffer
	pl, err := PlanMemory(Options{Run: c, Seed: 41, Workers: 1, Log: &log}, 64<<30)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "cache: built ") || strings.Contains(log.String(), "cache: read ") {
		t.Fatalf("the plan should build the cache files and read no graphs into memory:\n%s", log.String())
	}
	c2 := nm2(t, "dataset.cache="+cache, "train.batch_size=16")
	if err := Resolve(c2); err != nil {
		t.Fatal(err)
	}
	if est := estimateOf(t, c2); est.Need() != pl.CPU.Need() || est.Data != pl.CPU.Data {
		t.Fatalf("presized plan: need %d, data %d; from the loaded graphs: need %d, data %d", pl.CPU.Need(), pl.CPU.Data, est.Need(), est.Data)
	}
	log.Reset()
	o := Options{Run: c2, Seed: 41, Dir: c2.Dir(41), Workers: 1, Memory: pl.CPU.Data, Log: &log}
	_, err = Train(context.Background(), o)
	var me *memplan.MemoryError
	if !errors.As(err, &me) {
		t.Fatalf("got %v, want a MemoryError", err)
	}
	if strings.Contains(log.String(), "cache: read ") {
		t.Errorf("the refused run loaded its graphs first:\n%s", log.String())
	}
}
