package pna

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/reftest"
	"github.com/rewiregnn/rewiregnn/internal/testgraphs"
	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/tensor"
)

// small is a 2-layer PNA of width 12 on the reference's inputs, with δ delta.
func small(edges, bn bool, delta float64) Config {
	io := reftest.IO(edges)
	io.AvgLogDeg = delta
	return Config{Layers: 2, Hidden: 12, IO: io, End: nn.End{BatchNorm: bn, Residual: true}}
}

// refLoss is the network's loss with plain loops: per layer, m_uv = U h_u + V h_v [+ E e_uv] + μ;
// per node the mean, max, min and std of its in-messages (0 without any; std with ε = 1e-5);
// h' = W h + β + Σ_agg Σ_s scaler_s(v)·(a_agg W_agg,s), scalers 1, log(d+1)/δ and δ/log(d+1)
// with d clamped at 1; then BN, ReLU, residual.
func refLoss(c Config, p *nn.Params, bt *data.Batch) float64 {
	r, u, d := reftest.Ref{P: p, D: c.Hidden}, &bt.Union, c.Hidden
	deg := reftest.InDegrees(u)
	h, e := r.Inputs(c.IO, u)
	for l := 0; l < c.Layers; l++ {
		name := fmt.Sprintf("layer%d", l)
		src, dst := r.LinNoBias(h, u.N, d, d, name+".pre_src"), r.LinNoBias(h, u.N, d, d, name+".pre_dst")
		var pe []float64
		if e != nil {
			pe = r.LinNoBias(e, len(u.Src), d, d, name+".pre_edge")
		}
		mu := r.Param(name + ".pre.b")
		msgs := make([][]float64, u.N*d) // per node and feature, the in-messages
		for k := range u.Src {
			s, t := int(u.Src[k]), int(u.Dst[k])
			for j := 0; j < d; j++ {
				m := src[s*d+j] + dst[t*d+j] + mu[j]
				if pe != nil {
					m += pe[k*d+j]
				}
				msgs[t*d+j] = append(msgs[t*d+j], m)
			}
		}
		aggs := map[string][]float64{}
		for _, a := range aggregators {
			aggs[a] = make([]float64, u.N*d)
		}
		for i, ms := range msgs {
			if len(ms) == 0 {
				aggs["std"][i] = math.Sqrt(StdEps)
				continue
			}
			var sum, sq float64
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, m := range ms {
				sum, sq, lo, hi = sum+m, sq+m*m, math.Min(lo, m), math.Max(hi, m)
			}
			mean := sum / float64(len(ms))
			aggs["mean"][i], aggs["max"][i], aggs["min"][i] = mean, hi, lo
			aggs["std"][i] = math.Sqrt(max(sq/float64(len(ms))-mean*mean, 0) + StdEps)
		}
		y := r.LinNoBias(h, u.N, d, d, name+".post_self")
		beta := r.Param(name + ".post.b")
		for _, a := range aggregators {
			x := r.LinNoBias(aggs[a], u.N, d, Scalers*d, name+".post_"+a)
			for v := 0; v < u.N; v++ {
				ld := math.Log(max(deg[v], 1) + 1)
				s := []float64{1, ld / c.AvgLogDeg, c.AvgLogDeg / ld}
				for j := 0; j < d; j++ {
					for k := 0; k < Scalers; k++ {
						y[v*d+j] += s[k] * x[v*Scalers*d+k*d+j]
					}
				}
			}
		}
		for i := range y {
			y[i] += beta[i%d]
		}
		h = r.End(c.End, y, h, u.N, name+".bn")
	}
	return r.HeadL1(bt, h)
}

// TestAgainstReference compares the loss and every gradient with the reference on graphs of
// unequal degrees (a node without in-edges among them), with and without edge inputs and
// batch norm, δ the batch's own mean log(d+1).
func TestAgainstReference(t *testing.T) {
	reftest.EachVariant(t, "", func(t *testing.T, bt *data.Batch, edges, bn bool) {
		var delta float64
		for _, dg := range reftest.InDegrees(&bt.Union) {
			delta += math.Log(dg+1) / float64(bt.Union.N)
		}
		c := small(edges, bn, delta)
		m := config.Model{Name: "pna", Layers: c.Layers, Hidden: c.Hidden, BatchNorm: bn, Residual: true}
		reftest.CheckModel(t, New, m, c.IO, bt, func(p *nn.Params) float64 { return refLoss(c, p, bt) })
	})
}

// TestNeedsDelta checks that a network built without the training split's δ refuses a batch
// rather than divide by zero.
func TestNeedsDelta(t *testing.T) {
	bt, err := reftest.Irregular()
	if err != nil {
		t.Fatal(err)
	}
	c := small(false, true, 0)
	build, _, err := New(config.Model{Name: "pna", Layers: 1, Hidden: 8}, c.IO)
	if err != nil {
		t.Fatal(err)
	}
	p, err := nn.NewParams(tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	net, err := build(p, nn.Bucket{Nodes: 16, Edges: 16, Graphs: 2}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	if err := net.In.Load(bt); err == nil || !strings.Contains(err.Error(), "δ") {
		t.Fatalf("loading a batch without δ: %v, want an error naming δ", err)
	}
}

// TestTrainZINC trains the default model on 64 molecules and checks that the loss falls.
func TestTrainZINC(t *testing.T) { testgraphs.ZINCFalls(t, "pna", New) }
