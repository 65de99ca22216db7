package data_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
)

func TestMNISTSuperpixelStatistics(t *testing.T) {
	dir := testdata.Dir(t)
	o := data.MNISTSuperpixels()
	o.Limit = 500
	if testing.Short() {
		o.Limit = 100
	}
	im, err := data.LoadMNISTImages(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	gs, err := data.SuperpixelGraphs(im, o)
	if err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	nodes, edges := meanNodesEdges(gs)
	t.Logf("MNIST %d test images: %.2f nodes, %.2f edges (published 70.57 / 564.53); %.2f ms per image",
		len(gs), nodes, edges, float64(el.Microseconds())/1000/float64(len(gs)))
	if d := (nodes - 70.57) / 70.57; d > 0.05 || d < -0.05 {
		t.Errorf("mean %.2f nodes, want within 5%% of 70.57", nodes)
	}
	for i, g := range gs {
		if err := g.Validate(); err != nil {
			t.Fatal(err)
		}
		if err := g.CheckSimple(); err != nil {
			t.Fatal(err)
		}
		if g.N > 75 || g.Label != int32(im.Labels[i]) || g.Node.FloatDim != 3 {
			t.Fatalf("graph %d: %d nodes, label %d, width %d", i, g.N, g.Label, g.Node.FloatDim)
		}
		out := make([]int, g.N)
		for m := range g.Src {
			if g.Src[m] == g.Dst[m] {
				t.Fatalf("graph %d: self-loop", i)
			}
			out[g.Src[m]]++
			if w := g.Edge.Float[m]; !(w > 0 && w <= 1) {
				t.Fatalf("graph %d: weight %g", i, w)
			}
		}
		want := 8
		if g.N <= 9 {
			want = g.N - 1
		}
		for v, d := range out {
			if d != want {
				t.Fatalf("graph %d (%d nodes): node %d has %d out-edges, want %d", i, g.N, v, d, want)
			}
		}
		for v := 0; v < g.N; v++ {
			for j := 0; j < 3; j++ {
				if x := g.Node.Float[3*v+j]; x < 0 || x > 1 {
					t.Fatalf("graph %d: feature %g outside [0, 1]", i, x)
				}
			}
		}
	}
}

func TestKNNGraphSmall(t *testing.T) {
	coord := []float64{0, 0, 0, 1, 1, 0, 1, 1}
	src, dst, w := data.KNNGraph(coord, 4, 8)
	if len(src) != 12 || len(dst) != 12 {
		t.Fatalf("%d edges, want 12 (complete graph)", len(src))
	}
	for m := range w {
		if w[m] <= 0 || w[m] > 1 {
			t.Errorf("weight %g", w[m])
		}
	}
}

func TestMNISTSplits(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 60000 images")
	}
	dataDir := testdata.Dir(t)
	val, err := data.LoadMNISTImages(dataDir, "val")
	if err != nil {
		t.Fatal(err)
	}
	train, err := data.LoadMNISTImages(dataDir, "train")
	if err != nil {
		t.Fatal(err)
	}
	if val.Count != 5000 || train.Count != 55000 {
		t.Errorf("val %d, train %d", val.Count, train.Count)
	}
	if _, err := data.LoadMNISTImages(filepath.Join(dataDir), "dev"); err == nil {
		t.Error("unknown split accepted")
	}
}

// BenchmarkMNISTSuperpixels measures segmentation and graph building per image (one core).
//
//	go test ./data -run '^$' -bench MNISTSuperpixels
func BenchmarkMNISTSuperpixels(b *testing.B) {
	dataDir := testdata.Dir(b)
	im, err := data.LoadMNISTImages(dataDir, "test")
	if err != nil {
		b.Fatal(err)
	}
	o := data.MNISTSuperpixels()
	i := 0
	for b.Loop() {
		feat, n, err := data.Superpixels(im, i%im.Count, o)
		if err != nil {
			b.Fatal(err)
		}
		coord := make([]float64, 2*n)
		for s := 0; s < n; s++ {
			coord[2*s], coord[2*s+1] = float64(feat[3*s+1]), float64(feat[3*s+2])
		}
		data.KNNGraph(coord, n, o.K)
		i++
	}
}
