// Package reftest evaluates small networks with plain loops over float64 slices, independently
// of the Gorgonia graph, for the model tests: the input layer, linear maps, batch norm, the
// layer ends, the mean readout with the MLP head and L1 loss, and the check of a network's loss
// and every parameter gradient against the reference and its finite differences (Check). A
// model test writes its layer's formula with these and compares. Imported by tests only.
package reftest

import (
	"fmt"
	"math"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/tensor"
)

// Ref reads a network's parameters by name from P; D is its width.
type Ref struct {
	P *nn.Params
	D int
}

// Param is the parameter called name, row-major.
func (r Ref) Param(name string) []float64 { return r.P.T[name].Float64s() }

// Lin is x·W + β for x [rows, in] and W [in, out] named name.W, β name.b.
func (r Ref) Lin(x []float64, rows, in, out int, name string) []float64 {
	y := r.LinNoBias(x, rows, in, out, name)
	b := r.Param(name + ".b")
	for i := range y {
		y[i] += b[i%out]
	}
	return y
}

// LinNoBias is x·W for W [in, out] named name.W.
func (r Ref) LinNoBias(x []float64, rows, in, out int, name string) []float64 {
	w := r.Param(name + ".W")
	y := make([]float64, rows*out)
	for i := 0; i < rows; i++ {
		for o := 0; o < out; o++ {
			var s float64
			for k := 0; k < in; k++ {
				s += x[i*in+k] * w[k*out+o]
			}
			y[i*out+o] = s
		}
	}
	return y
}

// BN is training-mode batch norm over the rows of x [rows, d]: biased variance, ε = 1e-5,
// γ and β named name.gamma and name.beta.
func (r Ref) BN(x []float64, rows, d int, name string) []float64 {
	g, b := r.Param(name+".gamma"), r.Param(name+".beta")
	y := make([]float64, len(x))
	for c := 0; c < d; c++ {
		var mu, v float64
		for i := 0; i < rows; i++ {
			mu += x[i*d+c]
		}
		mu /= float64(rows)
		for i := 0; i < rows; i++ {
			v += (x[i*d+c] - mu) * (x[i*d+c] - mu)
		}
		v /= float64(rows)
		for i := 0; i < rows; i++ {
			y[i*d+c] = g[c]*(x[i*d+c]-mu)/math.Sqrt(v+1e-5) + b[c]
		}
	}
	return y
}

// End is a layer's end without dropout: [BN named bn] → ReLU → [+ res].
func (r Ref) End(e nn.End, y, res []float64, rows int, bn string) []float64 {
	if e.BatchNorm {
		y = r.BN(y, rows, len(y)/rows, bn)
	}
	out := Relu(y)
	if e.Residual {
		for i := range out {
			out[i] += res[i]
		}
	}
	return out
}

// Relu returns max(x, 0) element-wise (a new slice).
func Relu(x []float64) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = max(v, 0)
	}
	return y
}

// Add returns x + y element-wise (a new slice).
func Add(x, y []float64) []float64 {
	z := make([]float64, len(x))
	for i := range x {
		z[i] = x[i] + y[i]
	}
	return z
}

// Inputs is the input layer of io on graph u for the inputs the tests use: the node and edge
// type tables (one categorical column each) and the adjacency encoding. e is nil without edge
// inputs.
func (r Ref) Inputs(io nn.IO, u *data.Graph) (h, e []float64) {
	if io.NodeVocab == 0 || io.NodeCols > 1 || io.NodeVocabs != nil || io.NodeFloat > 0 || io.EdgeFloat > 0 || io.EdgeVocabs != nil ||
		io.SPRows > 0 || io.NodePE > 0 || io.InDropout > 0 {
		panic(fmt.Sprintf("reftest: input layer %+v not covered", io))
	}
	h = r.embed(u.Node.Cat, "node_emb")
	if io.EdgeVocab == 0 {
		return h, nil
	}
	e = r.embed(u.Edge.Cat, "edge_emb")
	if io.AdjDim > 0 {
		adj := make([]float64, len(u.Adj))
		for i, v := range u.Adj {
			adj[i] = float64(v)
		}
		e = Add(e, r.Lin(adj, u.NumEdges(), io.AdjDim, r.D, "adj_pe"))
	}
	return h, e
}

// embed looks ids up in the table name.W.
func (r Ref) embed(ids []int32, name string) []float64 {
	w, d := r.Param(name+".W"), r.D
	x := make([]float64, len(ids)*d)
	for i, id := range ids {
		copy(x[i*d:(i+1)*d], w[int(id)*d:(int(id)+1)*d])
	}
	return x
}

// HeadL1 is the mean readout of node states h, the MLP readout d → d/2 → d/4 → 1 and the L1
// loss against the batch's targets.
func (r Ref) HeadL1(bt *data.Batch, h []float64) float64 {
	return r.HeadL1Readout(bt, h, nn.ReadoutMean)
}

// HeadL1Readout is HeadL1 with the mean or the sum readout (nn.ReadoutMean, nn.ReadoutSum).
func (r Ref) HeadL1Readout(bt *data.Batch, h []float64, readout string) float64 {
	d, G := r.D, bt.NumGraphs
	hg := make([]float64, G*d)
	for g := 0; g < G; g++ {
		lo, hi := int(bt.NodeOff[g]), int(bt.NodeOff[g+1])
		n := float64(hi - lo)
		if readout == nn.ReadoutSum {
			n = 1
		}
		for v := lo; v < hi; v++ {
			for c := 0; c < d; c++ {
				hg[g*d+c] += h[v*d+c] / n
			}
		}
	}
	z := Relu(r.Lin(hg, G, d, d/2, "readout.0"))
	z = Relu(r.Lin(z, G, d/2, d/4, "readout.1"))
	z = r.Lin(z, G, d/4, 1, "readout.2")
	var loss float64
	for g := 0; g < G; g++ {
		loss += math.Abs(z[g]-float64(bt.Y[g])) / float64(G)
	}
	return loss
}

// InDegrees is the in-degree of every node of u.
func InDegrees(u *data.Graph) []float64 {
	deg := make([]float64, u.N)
	for _, v := range u.Dst {
		deg[v]++
	}
	return deg
}

// Check builds build's float64 training network for bt in a bucket with padding, compares its
// loss with ref to 1e-10 and every parameter's gradient with the central finite differences of
// ref (relative 1e-5), ref reading the same parameters. The parameters are drawn from seed 3
// and moved off their initial constants (jitter); where the head's ReLUs are all silent for
// every graph of bt, so that no gradient is nonzero and the comparison would be empty, the
// next seed is drawn (up to 4 more).
func Check(t *testing.T, build nn.BuildFunc, params int, bt *data.Batch, ref func(p *nn.Params) float64) {
	t.Helper()
	for seed := uint64(3); seed < 8; seed++ {
		if check(t, build, params, bt, ref, seed) {
			return
		}
		t.Logf("seed %d: every gradient is zero (silent head); drawing again", seed)
	}
	t.Fatal("every gradient is zero for 5 parameter draws")
}

// CheckModel is Check on the network that a model's registry constructor (its package's New)
// makes of m and io.
func CheckModel(t *testing.T, newModel func(config.Model, nn.IO) (nn.BuildFunc, int, error), m config.Model, io nn.IO,
	bt *data.Batch, ref func(p *nn.Params) float64) {
	t.Helper()
	build, params, err := newModel(m, io)
	if err != nil {
		t.Fatalf("%s: %v", m.Name, err)
	}
	Check(t, build, params, bt, ref)
}

// check is Check with the parameters drawn from seed; false when every gradient is zero.
func check(t *testing.T, build nn.BuildFunc, params int, bt *data.Batch, ref func(p *nn.Params) float64, seed uint64) bool {
	t.Helper()
	p, err := nn.NewParams(tensor.Float64, seed)
	if err != nil {
		t.Fatal(err)
	}
	u := &bt.Union
	net, err := build(p, nn.Bucket{Nodes: u.N + 3, Edges: u.NumEdges() + 5, Graphs: bt.NumGraphs + 1}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	if got := p.Count(); got != params {
		t.Errorf("built %d parameters, the formula says %d", got, params)
	}
	jitter(p)
	loss, err := net.Run(bt)
	if err != nil {
		t.Fatal(err)
	}
	if want := ref(p); math.Abs(loss-want) > 1e-10 {
		t.Fatalf("loss %.12f, reference %.12f", loss, want)
	}
	names, grads := net.Gradients()
	if len(names) == 0 {
		t.Fatal("the network has no gradients")
	}
	worst, biggest := 0.0, 0.0
	for i, name := range names {
		xs, g := p.T[name].Float64s(), ops.Values(grads[i])
		for j := range xs {
			orig := xs[j]
			const h = 1e-6
			xs[j] = orig + h
			up := ref(p)
			xs[j] = orig - h
			down := ref(p)
			xs[j] = orig
			num := (up - down) / (2 * h)
			err := math.Abs(g[j]-num) / max(math.Abs(g[j]), math.Abs(num), 1e-3)
			worst, biggest = max(worst, err), max(biggest, math.Abs(num), math.Abs(g[j]))
			if err > 1e-5 {
				t.Fatalf("d loss/d %s[%d] = %.9g, reference finite difference %.9g", name, j, g[j], num)
			}
		}
	}
	if biggest == 0 {
		return false
	}
	t.Logf("loss %.6f matches the reference; %d parameter tensors, worst relative gradient error %.2g", loss, len(names), worst)
	return true
}

// Irregular is a batch of two graphs whose nodes have different in-degrees (3, 1 and 0 among
// them: a node no edge reaches), for the degree-weighted aggregations: node types from a
// vocabulary of 5, edge types from 3, a 2-wide adjacency encoding and one target each.
func Irregular() (*data.Batch, error) {
	g1 := &data.Graph{N: 6, Src: []int32{0, 0, 0, 1, 2, 3, 5, 4}, Dst: []int32{1, 2, 3, 0, 0, 4, 0, 3},
		Node: data.Features{CatDim: 1, Cat: []int32{0, 1, 4, 2, 3, 1}},
		Edge: data.Features{CatDim: 1, Cat: []int32{1, 0, 2, 1, 0, 2, 2, 1}},
		Y:    []float32{0.8}, AdjDim: 2, Adj: []float32{1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1, 0}}
	g2 := &data.Graph{N: 3, Src: []int32{0, 1, 2, 0}, Dst: []int32{1, 0, 0, 2},
		Node: data.Features{CatDim: 1, Cat: []int32{3, 0, 2}},
		Edge: data.Features{CatDim: 1, Cat: []int32{0, 0, 1, 2}},
		Y:    []float32{-0.4}, AdjDim: 2, Adj: []float32{1, 0, 1, 0, 0, 1, 1, 0}}
	return data.NewBatch([]*data.Graph{g1, g2})
}

// jitter adds 0.05·sin(i+1) to the i-th entry of every parameter, so that no
// value starts on a constant such as a zero bias: a node whose pre-activation is a zero bias
// alone (no in-edges) would sit on ReLU's kink, where finite differences disagree with the
// derivative.
func jitter(p *nn.Params) {
	for _, name := range p.Names {
		xs := p.T[name].Float64s()
		for i := range xs {
			xs[i] += 0.05 * math.Sin(float64(i+1))
		}
	}
}

// IO is the input layer and head the references cover: node types from a vocabulary of 5 and,
// with edges, edge types from 3 and the adjacency encoding of width 2; the mean readout and the
// L1 loss of one target.
func IO(edges bool) nn.IO {
	io := nn.IO{NodeVocab: 5, Readout: nn.ReadoutMean, Loss: nn.LossL1, Out: 1}
	if edges {
		io.EdgeVocab, io.AdjDim = 3, 2
	}
	return io
}

// EachVariant runs check as subtests (prefix/edges=…/bn=…) on the Irregular batch for the four
// variants of a reference test: with and without edge inputs, with and without batch norm.
func EachVariant(t *testing.T, prefix string, check func(t *testing.T, bt *data.Batch, edges, bn bool)) {
	t.Helper()
	bt, err := Irregular()
	if err != nil {
		t.Fatal(err)
	}
	for _, edges := range []bool{false, true} {
		for _, bn := range []bool{false, true} {
			t.Run(fmt.Sprintf("%sedges=%t/bn=%t", prefix, edges, bn), func(t *testing.T) { check(t, bt, edges, bn) })
		}
	}
}
