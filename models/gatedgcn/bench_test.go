package gatedgcn

import (
	"testing"
	"time"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/rewire"
	"gorgonia.org/tensor"
)

// rewired loads n ZINC test molecules rewired at radius r with the CLS node and the
// adjacency-power encoding.
func rewired(b testing.TB, n, r int) ([]*data.Graph, *data.Spec) {
	b.Helper()
	gs, spec := testdata.Load(b, "zinc", "test")
	gs = gs[:min(n, len(gs))]
	opt := rewire.Defaults(spec, r)
	opt.CLS = true
	var rw rewire.Rewirer
	out := make([]*data.Graph, len(gs))
	for i, g := range gs {
		var err error
		if out[i], err = rw.Rewire(g, opt); err != nil {
			b.Fatal(err)
		}
	}
	return out, spec
}

// benchZINC times training steps (forward, backward, Adam) of the 100K ZINC GatedGCN with the
// adjacency encoding and CLS readout on batches of 128 rewired test molecules, float32, with
// activation recomputation if recompute.
func benchZINC(b *testing.B, r int, recompute bool) {
	const batch = 128
	gs, spec := rewired(b, 1000, r)
	var bs []*data.Batch
	for i := 0; i+batch <= len(gs); i += batch {
		bt, err := data.NewBatch(gs[i : i+batch])
		if err != nil {
			b.Fatal(err)
		}
		bs = append(bs, bt)
	}
	cfg := ZINC()
	cfg.NodeVocab = spec.NodeVocab + 1 // the CLS id
	cfg.AdjDim = r
	cfg.Readout = "cls"
	buckets, err := nn.MakeBuckets(gs, batch, 3)
	if err != nil {
		b.Fatal(err)
	}
	p, err := nn.NewParams(tensor.Float32, 1)
	if err != nil {
		b.Fatal(err)
	}
	tr, err := nn.NewTrainer(p, nn.BuildOf(cfg, Build), buckets, 1e-3)
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	tr.Recompute = recompute
	for _, bt := range bs { // build every bucket's graph before timing
		if _, err := tr.Step(bt); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := time.Now()
	graphs := 0
	for i := 0; i < b.N; i++ {
		bt := bs[i%len(bs)]
		if _, err := tr.Step(bt); err != nil {
			b.Fatal(err)
		}
		graphs += bt.NumGraphs
	}
	b.ReportMetric(time.Since(start).Seconds()/float64(graphs)*1000, "s/1000graphs")
	nodes, edges := 0, 0
	for _, bt := range bs {
		nodes += bt.Union.N
		edges += bt.Union.NumEdges()
	}
	b.ReportMetric(float64(nodes)/float64(len(bs)), "nodes/batch")
	b.ReportMetric(float64(edges)/float64(len(bs)), "edges/batch")
}

func BenchmarkTrainZINCr1(b *testing.B)          { benchZINC(b, 1, false) }
func BenchmarkTrainZINCr4(b *testing.B)          { benchZINC(b, 4, false) }
func BenchmarkTrainZINCr1Recompute(b *testing.B) { benchZINC(b, 1, true) }
func BenchmarkTrainZINCr4Recompute(b *testing.B) { benchZINC(b, 4, true) }
