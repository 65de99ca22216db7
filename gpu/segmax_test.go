package gpu

import (
	"testing"

	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/gorgonia"
)

// segMaxCase is a small network with a max aggregation (what GraphSAGE-max and PNA need):
// h = input layer; m = max over the in-edges of h[src]·W; h' = ReLU(h + m); the dataset's head.
// Built on ZINC's input layer and head, with the edges' own features left out.
func segMaxCase(t *testing.T) modelCase {
	c := newCase(t, encodings[0], modelSet(t, "gatedgcn")...)
	io := c.io
	c.name = "zinc/segment-max"
	c.build = func(p *nn.Params, b nn.Bucket, train bool) (*nn.Net, error) {
		bd := nn.NewBuilder(p)
		in := nn.NewInputs(b, p.Dtype, io.InputSpec())
		const d = 16
		h := bd.NodeInput(in, io, d)
		msg := bd.LinearNoBias(bd.Gather(h, in.Src), "msg", d, d, nn.Uniform(nn.LinearBound(d)))
		m := bd.Apply("segment max", func() (*gorgonia.Node, error) { return ops.SegmentMax(msg, in.Dst, b.Nodes) })
		h = bd.Relu(bd.Add(h, m))
		pred, loss := bd.Head(in, io, h, d)
		return nn.Finish(bd, in, pred, loss, train)
	}
	return c
}

// TestSegmentMaxStepMatchesCPU trains the segment-max network on the emulated GPU and on the
// CPU: gradients, one update, a short run and evaluation agree (checkStep), so the new op runs
// through the program and the dispatch table like every other.
func TestSegmentMaxStepMatchesCPU(t *testing.T) {
	c := segMaxCase(t)
	checkStep(t, c, emuExact(t))
}
