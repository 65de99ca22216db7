package nn

import (
	"math"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestAdam checks two steps against PyTorch's update written out by hand.
func TestAdam(t *testing.T) {
	p, err := NewParams(tensor.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	w, err := p.Get("w", Const(1), 2)
	if err != nil {
		t.Fatal(err)
	}
	a := NewAdam(0.1)
	grads := [][]float64{{0.5, -2}, {1, 0}}
	m, v := []float64{0, 0}, []float64{0, 0}
	want := []float64{1, 1}
	for step, g := range grads {
		gt := tensor.New(tensor.WithShape(2), tensor.WithBacking(append([]float64(nil), g...)))
		if err := a.Step(p, []string{"w"}, []gorgonia.Value{gt}); err != nil {
			t.Fatal(err)
		}
		for i := range g {
			m[i] = 0.9*m[i] + 0.1*g[i]
			v[i] = 0.999*v[i] + 0.001*g[i]*g[i]
			mh := m[i] / (1 - math.Pow(0.9, float64(step+1)))
			vh := v[i] / (1 - math.Pow(0.999, float64(step+1)))
			want[i] -= 0.1 * mh / (math.Sqrt(vh) + 1e-8)
		}
		for i, got := range w.Float64s() {
			if math.Abs(got-want[i]) > 1e-12 {
				t.Fatalf("step %d: w[%d] = %v, want %v", step+1, i, got, want[i])
			}
		}
	}
	if err := a.Step(p, []string{"missing"}, []gorgonia.Value{w}); err == nil {
		t.Fatal("unknown parameter accepted")
	}
}

func TestBuckets(t *testing.T) {
	var gs []*data.Graph
	for i := 0; i < 40; i++ {
		n := 3 + i%7
		g := &data.Graph{N: n, Node: data.Features{CatDim: 1, Cat: make([]int32, n)}, Y: []float32{1}}
		for v := 0; v+1 < n; v++ {
			g.Src = append(g.Src, int32(v), int32(v+1))
			g.Dst = append(g.Dst, int32(v+1), int32(v))
		}
		g.Edge = data.Features{CatDim: 1, Cat: make([]int32, len(g.Src))}
		gs = append(gs, g)
	}
	bs, err := MakeBuckets(gs, 8, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 3 {
		t.Fatalf("%d buckets, want 3", len(bs))
	}
	for i := 0; i+8 <= len(gs); i += 8 {
		bt, err := data.NewBatch(gs[i : i+8])
		if err != nil {
			t.Fatal(err)
		}
		k, err := PickBucket(bs, bt)
		if err != nil {
			t.Fatal(err)
		}
		for j, b := range bs {
			if b.Fits(bt) && b.Nodes < bs[k].Nodes {
				t.Fatalf("picked %v, %v is smaller and fits", bs[k], bs[j])
			}
		}
	}
	big, err := data.NewBatch(append(gs[:8:8], gs[:8]...))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := PickBucket(bs, big); err == nil {
		t.Fatal("a batch of 16 graphs fitted buckets of 8")
	}
	if _, err := MakeBuckets(nil, 8, 3); err == nil {
		t.Fatal("no graphs accepted")
	}
}
