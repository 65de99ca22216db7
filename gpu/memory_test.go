package gpu

import (
	"github.com/rewiregnn/rewiregnn/models"
	"testing"

	"github.com/rewiregnn/rewiregnn/nn"
)

// TestPlanMatchesAllocatorPeak: the device memory the plan predicts for a training step (the
// activation slots of Plan.Bytes, the net's input holders, the parameters with Adam's moments;
// what train -plan reports) is within 15% of the emulated device allocator's high-water mark
// over two steps, for each model on a rewired graph batch where the activations dominate.
func TestPlanMatchesAllocatorPeak(t *testing.T) {
	for _, name := range models.Names() { // every registered model
		ms := append(modelSet(t, name), "model.layers=4", "model.hidden=32")
		if name == "transformer" {
			ms = append(ms, "model.norm=post_bn")
		}
		c := newCase(t, encodings[1], ms...)
		t.Run(c.name, func(t *testing.T) {
			b := emuExact(t)
			gs := synthetic(t, c.spec, c.key, 64, 5)
			bt := batchesOf(t, gs, 64)[0]
			bucket := nn.Bucket{Nodes: bt.Union.N, Edges: bt.Union.NumEdges(), Graphs: bt.NumGraphs}
			pr := newPair(t, c, b, bucket)
			for range 2 {
				if _, err := pr.g.Step(bt); err != nil {
					t.Fatal(err)
				}
			}
			peak, _, _, ok := b.Memory()
			if !ok {
				t.Skip("the backend reports no memory")
			}
			net, err := pr.dev.Net(0)
			if err != nil {
				t.Fatal(err)
			}
			pl, err := Compile(net, pr.dev.P)
			if err != nil {
				t.Fatal(err)
			}
			want := pl.Bytes() + net.In.Bytes() + 12*int64(pr.dev.P.Count())
			r := float64(want) / float64(peak)
			t.Logf("planned %d bytes (activations %d), allocator peak %d: ratio %.3f", want, pl.Bytes(), peak, r)
			if r < 0.85 || r > 1.15 {
				t.Errorf("planned %d bytes, the allocator's peak is %d (ratio %.2f)", want, peak, r)
			}
		})
	}
}
