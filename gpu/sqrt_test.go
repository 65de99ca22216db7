package gpu

import (
	"testing"

	"github.com/rewiregnn/rewiregnn/nn"
)

// sqrtCase is a small network with a square root and its gradient (what PNA's std aggregator
// needs): h = input layer; m = sqrt(Σ over the in-edges of (h[src]·W)² + ε), the root of a sum
// of squares; the dataset's head on m alone (so that every gradient passes through the root).
// Built on ZINC's input layer and head.
// Gorgonia's gradient of the root, g ÷ (2 ⊙ m), is a ⊙ with the scalar constant 2 on the left
// and a ÷ of two tensors.
func sqrtCase(t *testing.T) modelCase {
	c := newCase(t, encodings[0], modelSet(t, "gatedgcn")...)
	io := c.io
	c.name = "zinc/sqrt"
	c.build = func(p *nn.Params, b nn.Bucket, train bool) (*nn.Net, error) {
		bd := nn.NewBuilder(p)
		in := nn.NewInputs(b, p.Dtype, io.InputSpec())
		const d = 16
		h := bd.NodeInput(in, io, d)
		msg := bd.LinearNoBias(bd.Gather(h, in.Src), "msg", d, d, nn.Uniform(nn.LinearBound(d)))
		m := bd.Sqrt(bd.AddConst(bd.ScatterAdd(bd.Mul(msg, msg), in.Dst, b.Nodes), 1e-5))
		pred, loss := bd.Head(in, io, m, d)
		return nn.Finish(bd, in, pred, loss, train)
	}
	return c
}

// TestSqrtStepMatchesCPU trains the square-root network on the emulated GPU and on the CPU:
// gradients, one update, a short run and evaluation agree (checkStep), so the square root and
// its gradient's ops run through the program and the dispatch table on both executors.
func TestSqrtStepMatchesCPU(t *testing.T) {
	checkStep(t, sqrtCase(t), emuExact(t))
}
