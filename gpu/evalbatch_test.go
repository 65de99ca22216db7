package gpu

import (
	"slices"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/nn"
)

// TestEvalOutputsIgnoreTheBatch: in evaluation mode a graph's outputs (graph- or node-level)
// do not depend on the batch it is computed in: for every registered model, on graph
// regression with CLS and on node classification, twelve graphs evaluated in one batch give,
// graph by graph, the predictions of the same graphs evaluated in three batches of four (each
// padded to a smaller bucket), bit for bit on the CPU and within the GPU tests' tolerance on the
// emulated GPU (its float atomics add in another order). This is what lets an evaluation run in
// batches as large as memory allows and still give the protocol's per-batch metrics, which are
// functions of the per-graph outputs and the protocol's batching alone (docs/protocol.md
// §"Losses and metrics").
func TestEvalOutputsIgnoreTheBatch(t *testing.T) {
	for _, e := range []encodingCase{encodings[1], encodings[5]} { // zinc adj r=2 CLS; cluster adj r=2
		for _, ms := range modelSets {
			c := newCase(t, e, ms...)
			t.Run(c.name, func(t *testing.T) {
				gs := synthetic(t, c.spec, c.key, 12, 17)
				whole := batchesOf(t, gs, 12)[0]
				parts := batchesOf(t, gs, 4)
				buckets := []nn.Bucket{bucketOf(parts...), bucketOf(whole)}
				pr := newPairBuckets(t, c, emuExact(t), buckets)
				for _, bt := range parts { // trained a little, so the running statistics are not the initial ones
					if _, err := pr.cpu.Step(bt); err != nil {
						t.Fatal(err)
					}
					if _, err := pr.g.Step(bt); err != nil {
						t.Fatal(err)
					}
				}
				for _, side := range []struct {
					name string
					eval func(*data.Batch) (float64, []float64, error)
					tl   tol
				}{{"cpu", pr.cpu.Eval, tol{}}, {"emulated GPU", pr.g.Eval, tol{rel: 1e-4}}} {
					_, p, err := side.eval(whole)
					if err != nil {
						t.Fatal(err)
					}
					want := slices.Clone(p)
					var got []float64
					for _, bt := range parts {
						_, p, err := side.eval(bt)
						if err != nil {
							t.Fatal(err)
						}
						got = append(got, p...)
					}
					if side.tl.rel == 0 {
						if !slices.Equal(got, want) {
							t.Errorf("%s: the predictions of three batches of four differ from those of one batch of twelve", side.name)
						}
						continue
					}
					near(t, side.name+": three batches of four against one of twelve", f32s(got), want, side.tl)
				}
			})
		}
	}
}

// bucketOf is the smallest bucket the batches fit.
func bucketOf(bs ...*data.Batch) nn.Bucket {
	var b nn.Bucket
	for _, bt := range bs {
		b.Nodes, b.Edges, b.Graphs = max(b.Nodes, bt.Union.N), max(b.Edges, bt.Union.NumEdges()), max(b.Graphs, bt.NumGraphs)
	}
	return b
}
