package gcn

import (
	"fmt"
	"math"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/reftest"
	"github.com/rewiregnn/rewiregnn/internal/testgraphs"
	"github.com/rewiregnn/rewiregnn/nn"
)

// small is a 2-layer GCN of width 16 on the reference's inputs.
func small(edges, bn bool) Config {
	return Config{Layers: 2, Hidden: 16, IO: reftest.IO(edges), End: nn.End{BatchNorm: bn, Residual: true}}
}

// refLoss is the network's loss with plain loops: per layer, x = W h + β,
// y_v = Σ_{u→v} (x_u + e_uv)/√((d_u+1)(d_v+1)) + x_v/(d_v+1), then BN, ReLU, residual.
func refLoss(c Config, p *nn.Params, bt *data.Batch) float64 {
	r, u, d := reftest.Ref{P: p, D: c.Hidden}, &bt.Union, c.Hidden
	deg := reftest.InDegrees(u)
	h, e := r.Inputs(c.IO, u)
	for l := 0; l < c.Layers; l++ {
		name := fmt.Sprintf("layer%d", l)
		x := r.Lin(h, u.N, d, d, name+".W")
		y := make([]float64, u.N*d)
		for v := 0; v < u.N; v++ {
			for j := 0; j < d; j++ {
				y[v*d+j] = x[v*d+j] / (deg[v] + 1)
			}
		}
		for k := range u.Src {
			s, t := int(u.Src[k]), int(u.Dst[k])
			w := 1 / math.Sqrt((deg[s]+1)*(deg[t]+1))
			for j := 0; j < d; j++ {
				m := x[s*d+j]
				if e != nil {
					m += e[k*d+j]
				}
				y[t*d+j] += w * m
			}
		}
		h = r.End(c.End, y, h, u.N, name+".bn")
	}
	return r.HeadL1Readout(bt, h, c.IO.Readout)
}

// TestAgainstReference compares the loss and every gradient with the reference on graphs of
// unequal degrees, with and without edge inputs and batch norm.
func TestAgainstReference(t *testing.T) {
	reftest.EachVariant(t, "", func(t *testing.T, bt *data.Batch, edges, bn bool) {
		c := small(edges, bn)
		m := config.Model{Name: "gcn", Layers: c.Layers, Hidden: c.Hidden, BatchNorm: bn, Residual: true}
		reftest.CheckModel(t, New, m, c.IO, bt, func(p *nn.Params) float64 { return refLoss(c, p, bt) })
	})
}

// TestSumReadoutAgainstReference: the same with the sum readout (model.readout: sum), which
// weighs every node 1 where the mean weighs it 1/size.
func TestSumReadoutAgainstReference(t *testing.T) {
	reftest.EachVariant(t, "", func(t *testing.T, bt *data.Batch, edges, bn bool) {
		c := small(edges, bn)
		c.IO.Readout = nn.ReadoutSum
		m := config.Model{Name: "gcn", Layers: c.Layers, Hidden: c.Hidden, BatchNorm: bn, Residual: true}
		reftest.CheckModel(t, New, m, c.IO, bt, func(p *nn.Params) float64 { return refLoss(c, p, bt) })
	})
}

// TestTrainZINC trains the default model on 64 molecules and checks that the loss falls.
func TestTrainZINC(t *testing.T) { testgraphs.ZINCFalls(t, "gcn", New) }
