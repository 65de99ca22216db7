package memplan

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/internal/memlimit"
)

// TestPlanReport: the table names the run, the largest nets, the bytes per edge and layer, and
// whether each column fits the budget (at the batch size, at a smaller one, or at none).
func TestPlanReport(t *testing.T) {
	cpu := Estimate{BatchSize: 128, Arena: 64 << 20, ArenaEdges: 1 << 16, ArenaTrain: true, Params: 1 << 20, Runtime: 40 << 20, Buckets: 4, TrainBuckets: 3}
	pl := &Plan{Name: "zinc-gatedgcn-adj-r4", BatchSize: 128, Budget: 1 << 30, Layers: 16,
		CPU: cpu, CPURecompute: cpu, FitsCPU: 128, FitsCPURecompute: 32,
		GPU: GPUEstimate{Activations: 32 << 20, Params: 1 << 20}, FitsGPU: 0}
	var b bytes.Buffer
	pl.Report(&b)
	out := b.String()
	for _, want := range []string{"zinc-gatedgcn-adj-r4, batch size 128: 4 buckets, 3 used for training",
		"training, 65536 edges", "64 B", "fits " + memlimit.Format(1<<30), "yes (batch 128)", "no; batch 32", "no batch size", "evaluation, 0 edges"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, " -\n") { // the GPU's per-edge figure without edges
		t.Errorf("the GPU's bytes per edge without edges are not -:\n%s", out)
	}
	pl.CPU.Buckets, pl.CPU.EvalFitted = 6, 2
	b.Reset()
	pl.Report(&b)
	if want := "batch size 128: 6 buckets (2 fitted to the evaluation batches), 3 used for training"; !strings.Contains(b.String(), want) {
		t.Errorf("the report lacks %q:\n%s", want, b.String())
	}
}
