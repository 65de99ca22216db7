package nn_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/ops"
	"github.com/rewiregnn/rewiregnn/prog"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The in-edges of 6 nodes (source → destination) for the std aggregation: node 0 and node 5
// have none, the others two or three distinct sources, so E[z²] − E[z]² is 0 exactly or clear
// of 0 (finite differences do not cross ReLU's kink).
var (
	stdSrc = []int32{1, 2, 0, 3, 4, 0, 2, 5, 1, 3}
	stdDst = []int32{1, 1, 2, 2, 2, 3, 3, 4, 4, 4}
)

const stdNodes, stdIn, stdOut, stdEps = 6, 3, 4, 1e-5

// stdNet is PNA's std aggregator on a float64 net: z = x·W + b, std_v = sqrt(relu(E[z²] −
// E[z]²) + ε) over v's in-edges (E a mean: a scatter weighted 1/in-degree), prediction std and
// loss Σ std² (ops.HeadDot of std with itself, summed by ops.MaskedL1 against zeros). The
// difference is E[z²] + (−1)·E[z]², the same bits as E[z²] − E[z]²: Gorgonia's gradient of a
// Sub takes its second operand's through a neg, which the program has no op for.
func stdNet(t *testing.T) (*nn.Net, *nn.Params, []float64) {
	t.Helper()
	p, err := nn.NewParams(tensor.Float64, 17)
	if err != nil {
		t.Fatal(err)
	}
	b := nn.NewBuilder(p)
	rng := rand.New(rand.NewPCG(41, 42))
	xs := make([]float64, stdNodes*stdIn)
	for i := range xs {
		xs[i] = rng.NormFloat64()
	}
	src := &ops.Index{Name: "src", Idx: stdSrc}
	dst := &ops.Index{Name: "dst", Idx: stdDst, W: make([]float64, len(stdDst))}
	deg := map[int32]int{}
	for _, d := range stdDst {
		deg[d]++
	}
	for i, d := range stdDst {
		dst.W[i] = 1 / float64(deg[d])
	}
	mean := func(h *gorgonia.Node) *gorgonia.Node { return b.ScatterAdd(b.Gather(h, src), dst, stdNodes) }
	z := b.Linear(b.Input("x", tensor.New(tensor.WithShape(stdNodes, stdIn), tensor.WithBacking(xs))), "lin", stdIn, stdOut)
	m := mean(z)
	std := b.Sqrt(b.AddConst(b.Relu(b.Add(mean(b.Mul(z, z)), b.Scale(b.Mul(m, m), -1))), stdEps))
	zeros := b.Input("zero", tensor.New(tensor.WithShape(stdNodes, 1), tensor.Of(tensor.Float64)))
	ones := make([]float64, stdNodes)
	for i := range ones {
		ones[i] = 1
	}
	w := b.Input("one", tensor.New(tensor.WithShape(stdNodes, 1), tensor.WithBacking(ones)))
	sq := b.Apply("squares", func() (*gorgonia.Node, error) { return ops.HeadDot(std, std, 1) })
	loss := b.Apply("loss", func() (*gorgonia.Node, error) { return ops.MaskedL1(sq, zeros, w) })
	net, err := nn.Finish(b, nil, std, loss, true)
	if err != nil {
		t.Fatal(err)
	}
	return net, p, xs
}

// TestSqrtGradient runs b.Sqrt in the std aggregator through the CPU executor: the program has
// a Sqrt step, the prediction is the std computed here by hand from the parameters, and every
// parameter's gradient agrees with central finite differences of the executor's own loss.
func TestSqrtGradient(t *testing.T) {
	net, p, xs := stdNet(t)
	steps := 0
	for _, s := range net.Runner().Steps() {
		if s.Kind == prog.Sqrt {
			steps++
		}
	}
	if steps != 1 {
		t.Fatalf("%d Sqrt steps, want 1", steps)
	}
	loss, err := net.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	checkStd(t, ops.Values(net.Pred.Value()), xs, p.T["lin.W"].Float64s(), p.T["lin.b"].Float64s())
	names, vals := net.Gradients()
	grads := map[string][]float64{}
	for i, n := range names {
		grads[n] = append([]float64(nil), ops.Values(vals[i])...)
	}
	if len(grads) != 2 {
		t.Fatalf("gradients of %q, want lin.W and lin.b", names)
	}
	const h = 1e-6
	worst := 0.0
	for name, g := range grads {
		ws := p.T[name].Float64s()
		for j := range ws {
			orig := ws[j]
			ws[j] = orig + h
			up, err := net.Run(nil)
			if err != nil {
				t.Fatal(err)
			}
			ws[j] = orig - h
			down, err := net.Run(nil)
			if err != nil {
				t.Fatal(err)
			}
			ws[j] = orig
			num := (up - down) / (2 * h)
			rel := math.Abs(g[j]-num) / max(math.Abs(num), 1e-3)
			worst = max(worst, rel)
			if rel > 1e-5 { // the models' finite-difference tolerance (models.TestEveryTask)
				t.Errorf("d loss/d %s[%d] = %.10g, finite difference %.10g", name, j, g[j], num)
			}
		}
	}
	t.Logf("loss %.6g; worst relative gradient error %.2g", loss, worst)
}

// checkStd compares the net's std [stdNodes, stdOut] with the aggregator computed directly from
// the input x and the parameters W, b (each node's mean over its in-edges, in float64).
func checkStd(t *testing.T, got, xs, w, bias []float64) {
	t.Helper()
	z := make([]float64, stdNodes*stdOut)
	for v := range stdNodes {
		for c := range stdOut {
			z[v*stdOut+c] = bias[c]
			for k := range stdIn {
				z[v*stdOut+c] += xs[v*stdIn+k] * w[k*stdOut+c]
			}
		}
	}
	for v := range stdNodes {
		for c := range stdOut {
			var s, s2, n float64
			for e, d := range stdDst {
				if int(d) == v {
					u := z[int(stdSrc[e])*stdOut+c]
					s, s2, n = s+u, s2+u*u, n+1
				}
			}
			want := math.Sqrt(stdEps)
			if n > 0 {
				want = math.Sqrt(max(s2/n-(s/n)*(s/n), 0) + stdEps)
			}
			if g := got[v*stdOut+c]; math.Abs(g-want) > 1e-12*max(1, want) {
				t.Errorf("std[%d, %d] = %.15g, by hand %.15g", v, c, g, want)
			}
		}
	}
}
