package gpu

import (
	"testing"

	"github.com/rewiregnn/rewiregnn/nn"
)

// geluCase is a small network with GELU and its gradient (the Transformer's feed-forward
// activation under model.ffn_activation gelu): h = input layer; m = gelu(Σ over the in-edges of
// h[src]·W); the dataset's head on m alone (so that every gradient passes through GELU). Built
// on ZINC's input layer and head.
func geluCase(t *testing.T) modelCase {
	c := newCase(t, encodings[0], modelSet(t, "gatedgcn")...)
	io := c.io
	c.name = "zinc/gelu"
	c.build = func(p *nn.Params, b nn.Bucket, train bool) (*nn.Net, error) {
		bd := nn.NewBuilder(p)
		in := nn.NewInputs(b, p.Dtype, io.InputSpec())
		const d = 16
		h := bd.NodeInput(in, io, d)
		msg := bd.LinearNoBias(bd.Gather(h, in.Src), "msg", d, d, nn.Uniform(nn.LinearBound(d)))
		m := bd.Gelu(bd.ScatterAdd(msg, in.Dst, b.Nodes))
		pred, loss := bd.Head(in, io, m, d)
		return nn.Finish(bd, in, pred, loss, train)
	}
	return c
}

// TestGeluStepMatchesCPU trains the GELU network on the emulated GPU and on the CPU:
// gradients, one update, a short run and evaluation agree (checkStep), so ew_gelu and
// ew_gelu_grad match their CPU twins, kern.Gelu and kern.GeluGrad.
func TestGeluStepMatchesCPU(t *testing.T) {
	checkStep(t, geluCase(t), emuExact(t))
}
