package gpu

import (
	"testing"

	"github.com/rewiregnn/rewiregnn/cuda"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/prep"
)

// opCeiling is the most device operations (kernels, matrix products, fills, copies, uploads and
// the download, those inside a replayed graph included) one training step of the paper's ZINC
// GatedGCN (100K: 4 layers, width 70, batch norm, residuals) at r = 1 without CLS may queue. It
// is a ratchet: lower it with every change that removes operations, never raise it.
// docs/gpu.md §"Where the time goes" has the history; the target is 120.
const opCeiling = 109

// hostCallCeiling is the most calls into the driver that queue work, per replayed training
// step: the step's scalars, the batch's inputs, the graph, the results.
const hostCallCeiling = 4

// TestDeviceOperationsPerStep counts what one training step queues on the emulated GPU (the
// same launchers, executor and trainer as on a GPU; only the driver underneath differs), the
// second step, which replays the graph the first captured, and holds it under opCeiling and
// hostCallCeiling; queued launch by launch, the step runs the same operations.
func TestDeviceOperationsPerStep(t *testing.T) {
	c := newCase(t, encodingCase{"zinc", "adj", 1, false, false}, "model.name=gatedgcn")
	b := emuExact(t)
	zinc, spec := testdata.Load(t, "zinc", "train")
	gs, err := prep.Build(zinc[:128], spec, c.key, 1) // the benchmark's batch: 128 ZINC molecules
	if err != nil {
		t.Fatal(err)
	}
	bt := batchesOf(t, gs, 128)[0]
	bucket := nn.Bucket{Nodes: bt.Union.N, Edges: bt.Union.NumEdges(), Graphs: bt.NumGraphs}
	pr := newPair(t, c, b, bucket)
	step := func() cuda.Counts {
		before := b.Dev.Counts()
		if _, err := pr.g.Step(bt); err != nil {
			t.Fatal(err)
		}
		return b.Dev.Counts().Sub(before)
	}
	step() // the first step captures the graph and puts Adam's moments on the device
	n := step()
	t.Logf("%s: one training step: %d device operations, %d host calls (ceilings %d and %d; target 120 operations)", c.name, n.DeviceOps, n.HostCalls, opCeiling, hostCallCeiling)
	if n.DeviceOps > opCeiling {
		t.Errorf("one training step queued %d device operations; at most %d", n.DeviceOps, opCeiling)
	}
	if n.HostCalls > hostCallCeiling {
		t.Errorf("one training step took %d host calls; at most %d", n.HostCalls, hostCallCeiling)
	}
	pr.g.SetGraphs(false)
	if e := step(); e.DeviceOps != n.DeviceOps {
		t.Errorf("queued launch by launch, the step runs %d device operations; replayed, %d", e.DeviceOps, n.DeviceOps)
	}
}
