package transformer

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rewiregnn/rewiregnn/internal/testgraphs"
	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func relTiny(rel string, sp bool) Config {
	c := tiny("mean", PreBN)
	c.Relative = rel
	if !sp {
		c.SPRows = 0
	}
	return c
}

// TestRelativeScores checks the scores of every variant against a dense computation written
// here from the parameter values: for edge j→i and head k,
// s = ((q_i+u)·k_j + (q_i+v)·r_ij + ce_ijk) / d over the head's columns, with r_ij the table row
// of the path length, W_R applied to the sinusoids of the path length, or W_R applied to the walk
// counts. Without a variant the plain score (q_i·k_j + ce_ijk) / d; with score_scale head the
// same sums divided by √(d/H) instead.
func TestRelativeScores(t *testing.T) {
	bt, err := testgraphs.Tiny()
	if err != nil {
		t.Fatal(err)
	}
	u := &bt.Union
	n, m := u.N, u.NumEdges()
	for _, tc := range []struct {
		rel   string
		sp    bool
		scale string
	}{{"", true, ""}, {RelLearned, true, ""}, {RelSinusoid, true, ""}, {RelLearned, false, ""}, {"", true, ScaleHead}, {RelLearned, true, ScaleHead}} {
		c := relTiny(tc.rel, tc.sp)
		c.ScoreScale = tc.scale
		d, heads, w := c.Hidden, c.Heads, c.Hidden/c.Heads
		p, err := nn.NewParams(tensor.Float64, 7)
		if err != nil {
			t.Fatal(err)
		}
		b := nn.NewBuilder(p)
		in := nn.NewInputs(nn.Bucket{Nodes: n, Edges: m, Graphs: bt.NumGraphs}, tensor.Float64, c.Inputs())
		if err := in.Load(bt); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		random := func(rows, cols int) []float64 {
			xs := make([]float64, rows*cols)
			for i := range xs {
				xs[i] = rng.NormFloat64()
			}
			return xs
		}
		qv, kv, cev := random(n, d), random(n, d), random(m, heads)
		q := b.Input("q", tensor.New(tensor.WithShape(n, d), tensor.WithBacking(qv)))
		k := b.Input("k", tensor.New(tensor.WithShape(n, d), tensor.WithBacking(kv)))
		ce := b.Input("ce", tensor.New(tensor.WithShape(m, heads), tensor.WithBacking(cev)))
		s := scores(b, in, c, "l0", q, k, ce)
		if b.Err() != nil {
			t.Fatal(b.Err())
		}
		vm := gorgonia.NewTapeMachine(b.G)
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		got := s.Value().Data().([]float64)
		vm.Close()

		param := func(name string) []float64 { return p.T[name].Float64s() }
		rel := func(e int) []float64 { // r_ij of edge e, d values
			r := make([]float64, d)
			switch {
			case tc.rel == RelSinusoid:
				wr := param("l0.R.W")
				for c1 := 0; c1 < d; c1++ {
					x := Sinusoid(int(u.SP[e]), c1, d)
					for c2 := 0; c2 < d; c2++ {
						r[c2] += x * wr[c1*d+c2]
					}
				}
			case tc.sp:
				copy(r, param("l0.R.W")[int(u.SP[e])*d:])
			default:
				wr := param("l0.R.W")
				for a := 0; a < u.AdjDim; a++ {
					for c2 := 0; c2 < d; c2++ {
						r[c2] += float64(u.Adj[e*u.AdjDim+a]) * wr[a*d+c2]
					}
				}
			}
			return r
		}
		for e := 0; e < m; e++ {
			i, j := int(u.Dst[e]), int(u.Src[e])
			for h := 0; h < heads; h++ {
				want := cev[e*heads+h]
				var r []float64
				if tc.rel != "" {
					r = rel(e)
				}
				for col := h * w; col < (h+1)*w; col++ {
					qi := qv[i*d+col]
					if tc.rel == "" {
						want += qi * kv[j*d+col]
						continue
					}
					want += (qi+param("l0.u")[col])*kv[j*d+col] + (qi+param("l0.v")[col])*r[col]
				}
				if tc.scale == ScaleHead {
					want /= math.Sqrt(float64(w))
				} else {
					want /= float64(d)
				}
				if g := got[e*heads+h]; math.Abs(g-want) > 1e-12*max(1, math.Abs(want)) {
					t.Errorf("relative %q sp %t scale %q, edge %d→%d head %d: score %.15g, dense %.15g", tc.rel, tc.sp, tc.scale, j, i, h, g, want)
				}
			}
		}
	}
}

// TestRelativeGradCheck: every parameter gradient of the relative variants against central
// finite differences, and the parameter formula against the built network.
func TestRelativeGradCheck(t *testing.T) {
	for _, c := range []Config{relTiny(RelLearned, true), relTiny(RelSinusoid, true), relTiny(RelLearned, false)} {
		testgraphs.GradCheck(t, nn.BuildOf(c, Build), tinyBatch(t), 10, 1e-5)
		p, err := nn.NewParams(tensor.Float32, 1)
		if err != nil {
			t.Fatal(err)
		}
		net, err := Build(c, p, nn.Bucket{Nodes: 30, Edges: 60, Graphs: 2}, false)
		if err != nil {
			t.Fatal(err)
		}
		net.Close()
		if got := p.Count(); got != c.Params() {
			t.Errorf("relative %s (sp rows %d): built %d parameters, formula %d", c.Relative, c.SPRows, got, c.Params())
		}
	}
	z := ZINC()
	z.SPRows, z.Relative = 4, RelLearned // ZINC, short at r = 2: 4 table rows
	if got, want := z.Params(), 107857+4*48+4*(2*48+4*48); got != want {
		t.Errorf("ZINC short r = 2 learned: formula %d, want %d", got, want)
	}
}

// TestRelativeBucketsAgree: padding a batch into a larger bucket changes no prediction.
func TestRelativeBucketsAgree(t *testing.T) {
	for _, c := range []Config{relTiny(RelLearned, true), relTiny(RelSinusoid, true), relTiny(RelLearned, false)} {
		testgraphs.BucketsAgree(t, nn.BuildOf(c, Build), tinyBatch(t))
	}
}

// TestSinusoid: the paper's formula at a few hand-computed points.
func TestSinusoid(t *testing.T) {
	for _, c := range []struct {
		k, col, d int
		want      float64
	}{
		{0, 0, 8, 0}, {0, 1, 8, 1}, {1, 0, 8, math.Sin(1)}, {3, 2, 8, math.Sin(3 / math.Pow(10000, 0.25))},
		{3, 3, 8, math.Cos(3 / math.Pow(10000, 3.0/8))},
	} {
		if got := Sinusoid(c.k, c.col, c.d); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("p(%d, %d) with d = %d: %v, want %v", c.k, c.col, c.d, got, c.want)
		}
	}
}
