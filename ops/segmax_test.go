package ops

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/internal/gradcheck"
	"github.com/rewiregnn/rewiregnn/prog"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestSegmentMaxGrad compares the segment max's gradient with central finite differences on
// random inputs (no ties), with padding edges and nodes without edges.
func TestSegmentMaxGrad(t *testing.T) {
	for _, c := range []struct {
		m, d, nodes int
		seed        uint64
	}{{9, 3, 5, 71}, {40, 4, 12, 72}} {
		rng := rand.New(rand.NewPCG(c.seed, 1))
		g := gorgonia.NewGraph()
		x := gradcheck.RandMatrix(g, rng, "x", c.m, c.d)
		dst := &Index{Name: "dst", Idx: make([]int32, c.m)}
		for i := range dst.Idx {
			dst.Idx[i] = int32(rng.IntN(c.nodes-1)) - 1 // -1 padding; node nodes-1 has no edge
		}
		dst.Idx[0], dst.Idx[1] = 0, 0 // node 0 takes a max over at least two edges
		y, err := SegmentMax(x, dst, c.nodes)
		if err != nil {
			t.Fatal(err)
		}
		gradcheck.Assert(t, g, project(t, g, rng, y), x)
	}
}

// TestSegmentMaxTies checks the forward values and the gradient, in float64 and float32,
// against a hand-derived case: ties in a column (the lowest edge takes the gradient), a padding
// edge (-1), a node without edges (0, and no gradient), and a NaN (it propagates, and the
// gradient goes to its edge).
func TestSegmentMaxTies(t *testing.T) {
	nan := math.NaN()
	// 6 edges, 2 columns, 4 nodes (node 2 has none).
	dst := &Index{Name: "dst", Idx: []int32{1, 0, 1, -1, 3, 1}}
	x := []float64{
		2, 5, // e0 → 1
		-1, -4, // e1 → 0
		3, 5, // e2 → 1: column 1 ties e0 (e0 wins)
		8, 8, // e3: padding, ignored
		0, nan, // e4 → 3: NaN in column 1
		3, 1, // e5 → 1: column 0 ties e2 (e2 wins)
	}
	g := []float64{10, 11, 20, 21, 30, 31, 40, 41}
	wantY := []float64{-1, -4, 3, 5, 0, 0, 0, nan}
	wantDx := []float64{0, 21, 10, 11, 20, 0, 0, 0, 40, 41, 0, 0}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		gr := gorgonia.NewGraph()
		var xv, gv *tensor.Dense
		if dt == tensor.Float64 {
			xv = tensor.New(tensor.WithShape(6, 2), tensor.WithBacking(slices.Clone(x)))
			gv = tensor.New(tensor.WithShape(4, 2), tensor.WithBacking(slices.Clone(g)))
		} else {
			xv = tensor.New(tensor.WithShape(6, 2), tensor.WithBacking(f32(x)))
			gv = tensor.New(tensor.WithShape(4, 2), tensor.WithBacking(f32(g)))
		}
		xn := gorgonia.NewMatrix(gr, dt, gorgonia.WithShape(6, 2), gorgonia.WithValue(xv), gorgonia.WithName("x"))
		rn := gorgonia.NewMatrix(gr, dt, gorgonia.WithShape(4, 2), gorgonia.WithValue(gv), gorgonia.WithName("R"))
		y, err := SegmentMax(xn, dst, 4)
		if err != nil {
			t.Fatal(err)
		}
		p, err := gorgonia.HadamardProd(y, rn)
		if err != nil {
			t.Fatal(err)
		}
		loss, err := gorgonia.Sum(p)
		if err != nil {
			t.Fatal(err)
		}
		grads, err := gorgonia.Grad(loss, xn)
		if err != nil {
			t.Fatal(err)
		}
		runGraph(t, gr)
		if got := Values(y.Value()); !sameBits(got, wantY) {
			t.Errorf("%v: y = %v, want %v", dt, got, wantY)
		}
		if got := Values(grads[0].Value()); !slices.Equal(got, wantDx) {
			t.Errorf("%v: dx = %v, want %v", dt, got, wantDx)
		}
		d, ok := Describe(y.Op())
		if !ok || d.Op != prog.SegmentMax || d.Index != dst || d.Rows != 4 || d.State == nil {
			t.Errorf("Describe of the forward op: %+v", d)
		}
		dg, ok := Describe(grads[0].Op())
		if !ok || dg.Op != prog.SegmentMaxGrad || dg.State != d.State {
			t.Errorf("Describe of the gradient op: %+v (forward state %p)", dg, d.State)
		}
	}
}

// TestSegmentMaxRejects checks the errors for a bad index entry, a weighted index and a wrong
// input shape.
func TestSegmentMaxRejects(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gradcheck.RandMatrix(g, rand.New(rand.NewPCG(1, 2)), "x", 3, 2)
	if _, err := SegmentMax(x, &Index{Name: "dst", Idx: []int32{0, 1}}, 2); err == nil {
		t.Error("a 2-entry index for 3 rows was accepted")
	}
	op := func(ix *Index) *Func {
		y, err := SegmentMax(x, ix, 2)
		if err != nil {
			t.Fatal(err)
		}
		return y.Op().(*Func)
	}
	for _, c := range []struct {
		ix   *Index
		want string
	}{
		{&Index{Name: "dst", Idx: []int32{0, 2, -1}}, "outside [-1, 2)"},
		{&Index{Name: "dst", Idx: []int32{0, 1, -1}, W: []float64{1, 1, 1}}, "weighted index"},
	} {
		_, err := op(c.ix).Do(x.Value())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("index %v: error %v, want one saying %q", c.ix.Idx, err, c.want)
		}
	}
}

func f32(xs []float64) []float32 {
	out := make([]float32, len(xs))
	for i, v := range xs {
		out[i] = float32(v)
	}
	return out
}

// sameBits compares values with NaN equal to NaN.
func sameBits(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return x == y || (math.IsNaN(x) && math.IsNaN(y)) })
}
