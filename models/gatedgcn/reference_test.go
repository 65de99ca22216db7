package gatedgcn

import (
	"math"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/gradcheck"
	"github.com/rewiregnn/rewiregnn/internal/testgraphs"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// tinyConfig exercises every input path: node/edge types, shortest-path table, adjacency and
// Laplacian encoders, two layers with batch norm and residuals.
func tinyConfig(readout string) Config {
	return Config{Layers: 2, Hidden: 12, IO: nn.IO{NodeVocab: 5, EdgeVocab: 3, SPRows: 3, AdjDim: 2, NodeEnc: "lp", NodePE: 2,
		Readout: readout, Loss: nn.LossL1, Out: 1}, BatchNorm: true, Residual: true}
}

// tinyColumnsConfig is tinyConfig with per-column vocabularies, as OGB's atom and bond
// features have: three node columns and two edge columns, each its own table, summed.
func tinyColumnsConfig(readout string) Config {
	cfg := tinyConfig(readout)
	cfg.NodeVocab, cfg.NodeVocabs = 0, []int{5, 3, 2}
	cfg.EdgeVocab, cfg.EdgeVocabs = 0, []int{3, 2}
	return cfg
}

// tinyColumnsBatch is tinyBatch with the columns tinyColumnsConfig reads: node v of the union
// gets the extra ids ((2v+1) mod 3, v mod 2), edge k the extra id (k+1) mod 2.
func tinyColumnsBatch(t testing.TB) *data.Batch {
	t.Helper()
	b := tinyBatch(t)
	u := &b.Union
	node := make([]int32, 0, 3*u.N)
	for v := 0; v < u.N; v++ {
		node = append(node, u.Node.Cat[v], int32((2*v+1)%3), int32(v%2))
	}
	edge := make([]int32, 0, 2*u.NumEdges())
	for k := 0; k < u.NumEdges(); k++ {
		edge = append(edge, u.Edge.Cat[k], int32((k+1)%2))
	}
	u.Node = data.Features{CatDim: 3, Cat: node}
	u.Edge = data.Features{CatDim: 2, Cat: edge}
	return b
}

func tinyBatch(t testing.TB) *data.Batch {
	t.Helper()
	b, err := testgraphs.Tiny()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// refLoss computes the network's training-mode loss on bt with plain loops over dense arrays,
// reading the parameters from p by name (independent of the Gorgonia graph).
func refLoss(cfg Config, p *nn.Params, bt *data.Batch) float64 {
	P := func(name string) []float64 { return p.T[name].Float64s() }
	d := cfg.Hidden
	u := &bt.Union
	n, m := u.N, u.NumEdges()
	// x·W + b for W stored [in, out].
	lin := func(x []float64, rows, in, out int, name string) []float64 {
		w, b := P(name+".W"), P(name+".b")
		y := make([]float64, rows*out)
		for r := 0; r < rows; r++ {
			for o := 0; o < out; o++ {
				s := b[o]
				for i := 0; i < in; i++ {
					s += x[r*in+i] * w[i*out+o]
				}
				y[r*out+o] = s
			}
		}
		return y
	}
	bn := func(x []float64, rows int, name string) []float64 {
		g, be := P(name+".gamma"), P(name+".beta")
		y := make([]float64, len(x))
		for c := 0; c < d; c++ {
			mu, v := 0.0, 0.0
			for r := 0; r < rows; r++ {
				mu += x[r*d+c]
			}
			mu /= float64(rows)
			for r := 0; r < rows; r++ {
				v += (x[r*d+c] - mu) * (x[r*d+c] - mu)
			}
			v /= float64(rows)
			for r := 0; r < rows; r++ {
				y[r*d+c] = g[c]*(x[r*d+c]-mu)/math.Sqrt(v+1e-5) + be[c]
			}
		}
		return y
	}
	f64 := func(xs []float32) []float64 {
		out := make([]float64, len(xs))
		for i, v := range xs {
			out[i] = float64(v)
		}
		return out
	}
	// Σ_c table_c[id_c] over the categorical columns, table c named prefix, prefix1, prefix2, …
	embed := func(f *data.Features, rows int, prefix string, tables []int) []float64 {
		x := make([]float64, rows*d)
		for col := range tables {
			name := prefix
			if col > 0 {
				name += string(rune('0' + col))
			}
			W := P(name + ".W")
			for r := 0; r < rows; r++ {
				id := int(f.Cat[r*f.CatDim+col])
				for c := 0; c < d; c++ {
					x[r*d+c] += W[id*d+c]
				}
			}
		}
		return x
	}
	h := embed(&u.Node, n, "node_emb", cfg.NodeTables())
	lap := lin(f64(u.NodePE), n, cfg.NodePE, d, "lap_pe")
	for i := range h {
		h[i] += lap[i]
	}
	e := embed(&u.Edge, m, "edge_emb", cfg.EdgeTables())
	adj := lin(f64(u.Adj), m, cfg.AdjDim, d, "adj_pe")
	for k := 0; k < m; k++ {
		for c := 0; c < d; c++ {
			e[k*d+c] += P("sp_pe.W")[int(u.SP[k])*d+c] + adj[k*d+c]
		}
	}
	for l := 0; l < cfg.Layers; l++ {
		name := "layer" + string(rune('0'+l))
		A, B := lin(h, n, d, d, name+".A"), lin(h, n, d, d, name+".B")
		D, E := lin(h, n, d, d, name+".D"), lin(h, n, d, d, name+".E")
		C := lin(e, m, d, d, name+".C")
		ehat := make([]float64, m*d)
		num := make([]float64, n*d)
		den := make([]float64, n*d)
		for k := 0; k < m; k++ {
			s, t := int(u.Src[k]), int(u.Dst[k])
			for c := 0; c < d; c++ {
				x := C[k*d+c] + D[s*d+c] + E[t*d+c]
				ehat[k*d+c] = x
				eta := 1 / (1 + math.Exp(-x))
				num[t*d+c] += eta * B[s*d+c]
				den[t*d+c] += eta
			}
		}
		hhat := make([]float64, n*d)
		for i := range hhat {
			hhat[i] = A[i] + num[i]/(den[i]+1e-6)
		}
		hhat, ehat = bn(hhat, n, name+".bn_h"), bn(ehat, m, name+".bn_e")
		for i := range hhat {
			h[i] += max(hhat[i], 0)
		}
		for i := range ehat {
			e[i] += max(ehat[i], 0)
		}
	}
	G := bt.NumGraphs
	hg := make([]float64, G*d)
	for g := 0; g < G; g++ {
		lo, hi := int(bt.NodeOff[g]), int(bt.NodeOff[g+1])
		if cfg.Readout == "cls" {
			copy(hg[g*d:(g+1)*d], h[int(bt.CLS[g])*d:int(bt.CLS[g]+1)*d])
			continue
		}
		for v := lo; v < hi; v++ {
			for c := 0; c < d; c++ {
				hg[g*d+c] += h[v*d+c] / float64(hi-lo)
			}
		}
	}
	relu := func(x []float64) []float64 {
		for i := range x {
			x[i] = max(x[i], 0)
		}
		return x
	}
	z := relu(lin(hg, G, d, d/2, "readout.0"))
	z = relu(lin(z, G, d/2, d/4, "readout.1"))
	z = lin(z, G, d/4, 1, "readout.2")
	loss := 0.0
	for g := 0; g < G; g++ {
		loss += math.Abs(z[g]-float64(bt.Y[g])) / float64(G)
	}
	return loss
}

// TestAgainstReference checks the loss and every parameter gradient of the Gorgonia network
// (in a padded bucket) against the dense reference and its central finite differences, with
// one vocabulary per input and with a table per categorical column.
func TestAgainstReference(t *testing.T) {
	for _, c := range []struct {
		readout string
		cfg     func(string) Config
		batch   func(testing.TB) *data.Batch
	}{{"mean", tinyConfig, tinyBatch}, {"cls", tinyConfig, tinyBatch}, {"mean", tinyColumnsConfig, tinyColumnsBatch}} {
		readout := c.readout
		cfg := c.cfg(readout)
		bt := c.batch(t)
		if cfg.NodeVocabs != nil {
			readout += " per-column"
		}
		p, err := nn.NewParams(tensor.Float64, 3)
		if err != nil {
			t.Fatal(err)
		}
		net, err := Build(cfg, p, nn.Bucket{Nodes: 9, Edges: 17, Graphs: 3}, true)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := p.Count(), cfg.Params(); got != want {
			t.Errorf("%s: %d parameters, formula says %d", readout, got, want)
		}
		loss, err := net.Run(bt)
		if err != nil {
			t.Fatal(err)
		}
		want := refLoss(cfg, p, bt)
		if math.Abs(loss-want) > 1e-10 {
			t.Fatalf("%s: loss %.12f, reference %.12f", readout, loss, want)
		}
		names, grads := net.Gradients()
		worst, biggest := 0.0, 0.0
		for i, name := range names {
			xs := p.T[name].Float64s()
			g := ops.Values(grads[i])
			for j := range xs {
				orig := xs[j]
				const h = 1e-6
				xs[j] = orig + h
				up := refLoss(cfg, p, bt)
				xs[j] = orig - h
				down := refLoss(cfg, p, bt)
				xs[j] = orig
				num := (up - down) / (2 * h)
				err := math.Abs(g[j]-num) / max(math.Abs(g[j]), math.Abs(num), 1e-3)
				worst = max(worst, err)
				biggest = max(biggest, math.Abs(num))
				if err > 1e-5 {
					t.Fatalf("%s: d loss/d %s[%d] = %.9g, reference finite difference %.9g", readout, name, j, g[j], num)
				}
			}
		}
		if biggest == 0 {
			t.Fatalf("%s: every gradient is zero", readout)
		}
		t.Logf("%s readout: loss %.6f matches; %d parameter tensors, worst relative gradient error %.2g", readout, loss, len(names), worst)
		net.Close()
	}
}

// TestGradCheck runs the finite-difference check of nn on the whole Gorgonia network.
func TestGradCheck(t *testing.T) {
	cfg := tinyConfig("mean")
	p, err := nn.NewParams(tensor.Float64, 5)
	if err != nil {
		t.Fatal(err)
	}
	net, err := Build(cfg, p, nn.Bucket{Nodes: 8, Edges: 16, Graphs: 2}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	if err := net.In.Load(tinyBatch(t)); err != nil {
		t.Fatal(err)
	}
	var wrt []*gorgonia.Node
	for _, n := range net.B.Learn {
		if !strings.HasPrefix(n.Name(), "layer1.bn_e") { // the last edge batch norm does not reach the loss
			wrt = append(wrt, n)
		}
	}
	res, err := gradcheck.Run(net.B.G, net.Loss, wrt, 1e-6, 12)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("checked %d entries: max rel %.2g", res.Checked, res.MaxRel)
	if res.MaxGrad == 0 {
		t.Fatal("every gradient is zero")
	}
	if res.MaxRel > 1e-5 {
		t.Fatalf("max relative error %.3g at %s", res.MaxRel, res.Worst)
	}
}
