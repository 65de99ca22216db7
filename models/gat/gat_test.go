package gat

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

// small is a 2-layer GATv2 of width 16 with heads heads on the reference's inputs.
func small(heads int, edges, bn bool) Config {
	return Config{Layers: 2, Hidden: 16, IO: reftest.IO(edges), End: nn.End{BatchNorm: bn, Residual: true}, Heads: heads}
}

// refLoss is the network's loss with plain loops: per layer and head k (features
// [k·w, (k+1)·w)), z_uv = S h_u + T h_v [+ E e_uv], s_uv,k = Σ_j a_j LeakyReLU(z_uv,j),
// α = softmax over v's in-edges, y_v = Σ α_uv,k (S h_u) + β, then BN, ReLU, residual.
func refLoss(c Config, p *nn.Params, bt *data.Batch) float64 {
	r, u, d := reftest.Ref{P: p, D: c.Hidden}, &bt.Union, c.Hidden
	w := d / c.Heads
	h, e := r.Inputs(c.IO, u)
	for l := 0; l < c.Layers; l++ {
		name := fmt.Sprintf("layer%d", l)
		xs, xt := r.Lin(h, u.N, d, d, name+".src"), r.Lin(h, u.N, d, d, name+".dst")
		var xe []float64
		if e != nil {
			xe = r.LinNoBias(e, len(u.Src), d, d, name+".edge")
		}
		a := r.Param(name + ".att")
		score := make([]float64, len(u.Src)*c.Heads)
		for k := range u.Src {
			s, t := int(u.Src[k]), int(u.Dst[k])
			for j := 0; j < d; j++ {
				z := xs[s*d+j] + xt[t*d+j]
				if xe != nil {
					z += xe[k*d+j]
				}
				if z < 0 {
					z *= Slope
				}
				score[k*c.Heads+j/w] += a[j] * z
			}
		}
		// softmax per destination and head
		alpha := make([]float64, len(score))
		for v := 0; v < u.N; v++ {
			for hd := 0; hd < c.Heads; hd++ {
				top, sum := math.Inf(-1), 0.0
				for k, t := range u.Dst {
					if int(t) == v {
						top = math.Max(top, score[k*c.Heads+hd])
					}
				}
				for k, t := range u.Dst {
					if int(t) == v {
						sum += math.Exp(score[k*c.Heads+hd] - top)
					}
				}
				for k, t := range u.Dst {
					if int(t) == v {
						alpha[k*c.Heads+hd] = math.Exp(score[k*c.Heads+hd]-top) / sum
					}
				}
			}
		}
		bias := r.Param(name + ".bias")
		y := make([]float64, u.N*d)
		for i := range y {
			y[i] = bias[i%d]
		}
		for k := range u.Src {
			s, t := int(u.Src[k]), int(u.Dst[k])
			for j := 0; j < d; j++ {
				y[t*d+j] += alpha[k*c.Heads+j/w] * xs[s*d+j]
			}
		}
		h = r.End(c.End, y, h, u.N, name+".bn")
	}
	return r.HeadL1(bt, h)
}

// TestAgainstReference compares the loss and every gradient with the reference on graphs of
// unequal degrees (a node without in-edges among them), with 1 and 4 heads, with and without
// edge inputs and batch norm.
func TestAgainstReference(t *testing.T) {
	for _, heads := range []int{1, 4} {
		reftest.EachVariant(t, fmt.Sprintf("heads=%d/", heads), func(t *testing.T, bt *data.Batch, edges, bn bool) {
			c := small(heads, edges, bn)
			m := config.Model{Name: "gat", Layers: c.Layers, Hidden: c.Hidden, BatchNorm: bn, Residual: true, Own: map[string]any{"heads": heads}}
			reftest.CheckModel(t, New, m, c.IO, bt, func(p *nn.Params) float64 { return refLoss(c, p, bt) })
		})
	}
}

// TestTrainZINC trains the default model on 64 molecules and checks that the loss falls.
func TestTrainZINC(t *testing.T) { testgraphs.ZINCFalls(t, "gat", New) }
