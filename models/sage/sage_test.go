package sage

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

// small is a 2-layer GraphSAGE of width 16 with aggregator agg on the reference's inputs.
func small(agg string, edges, bn bool) Config {
	return Config{Layers: 2, Hidden: 16, IO: reftest.IO(edges), End: nn.End{BatchNorm: bn, Residual: true}, Aggregator: agg}
}

// refLoss is the network's loss with plain loops: per layer, the messages m_uv (h_u or
// ReLU(h_u + e_uv) for mean, ReLU(P h_u + π [+ e_uv]) for max), their mean or element-wise max
// over v's in-edges (0 without any), y = W_self h + W_neigh agg + β, then BN, ReLU, residual.
func refLoss(c Config, p *nn.Params, bt *data.Batch) float64 {
	r, u, d := reftest.Ref{P: p, D: c.Hidden}, &bt.Union, c.Hidden
	deg := reftest.InDegrees(u)
	h, e := r.Inputs(c.IO, u)
	for l := 0; l < c.Layers; l++ {
		name := fmt.Sprintf("layer%d", l)
		src := h
		if c.Aggregator == Max {
			src = r.Lin(h, u.N, d, d, name+".pool")
		}
		agg := make([]float64, u.N*d)
		seen := make([]bool, u.N)
		for k := range u.Src {
			s, t := int(u.Src[k]), int(u.Dst[k])
			for j := 0; j < d; j++ {
				m := src[s*d+j]
				if e != nil {
					m += e[k*d+j]
				}
				if e != nil || c.Aggregator == Max {
					m = max(m, 0)
				}
				switch {
				case c.Aggregator == Mean:
					agg[t*d+j] += m / deg[t]
				case !seen[t]:
					agg[t*d+j] = m
				default:
					agg[t*d+j] = math.Max(agg[t*d+j], m)
				}
			}
			seen[t] = true
		}
		y := reftest.Add(r.LinNoBias(h, u.N, d, d, name+".self"), r.Lin(agg, u.N, d, d, name+".neigh"))
		h = r.End(c.End, y, h, u.N, name+".bn")
	}
	return r.HeadL1(bt, h)
}

// TestAgainstReference compares the loss and every gradient with the reference on graphs of
// unequal degrees (a node without in-edges among them), for both aggregators, with and without
// edge inputs and batch norm.
func TestAgainstReference(t *testing.T) {
	for _, agg := range []string{Mean, Max} {
		reftest.EachVariant(t, agg+"/", func(t *testing.T, bt *data.Batch, edges, bn bool) {
			c := small(agg, edges, bn)
			m := config.Model{Name: "sage", Layers: c.Layers, Hidden: c.Hidden, BatchNorm: bn, Residual: true, Own: map[string]any{"aggregator": agg}}
			reftest.CheckModel(t, New, m, c.IO, bt, func(p *nn.Params) float64 { return refLoss(c, p, bt) })
		})
	}
}

// TestTrainZINC trains the default GraphSAGE (max) and the mean variant on 64 molecules and
// checks that the loss falls.
func TestTrainZINC(t *testing.T) {
	testgraphs.ZINCFalls(t, "sage", New)
	testgraphs.ZINCFalls(t, "sage", New, "model.aggregator=mean")
}
