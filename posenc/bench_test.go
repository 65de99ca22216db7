package posenc

import (
	"math/rand/v2"
	"testing"

	"github.com/rewiregnn/rewiregnn/internal/cputime"
	"github.com/rewiregnn/rewiregnn/internal/randgraph"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
)

// BenchmarkLaplacianZINC measures the Laplacian encoding (q = 8) per ZINC test graph
// (one core: go test -bench LaplacianZINC -cpu 1 ./posenc).
func BenchmarkLaplacianZINC(b *testing.B) {
	gs, _ := testdata.Load(b, "zinc", "test")
	var lap Laplacian
	const q = 8
	out := make([]float32, 64*q)
	b.ReportAllocs()
	cputime.Measure(b, func(i int) {
		g := gs[i%len(gs)]
		if err := lap.Encode(g.N, g.Src, g.Dst, q, out[:g.N*q]); err != nil {
			b.Fatal(err)
		}
	})
	if lap.Fallbacks() > 0 {
		b.Logf("%d dense fallbacks", lap.Fallbacks())
	}
}

// BenchmarkWalksZINC measures the walk counts and distances alone at r = 4.
func BenchmarkWalksZINC(b *testing.B) {
	gs, _ := testdata.Load(b, "zinc", "test")
	var w Walks
	b.ReportAllocs()
	cputime.Measure(b, func(i int) {
		g := gs[i%len(gs)]
		if err := w.Reset(g.N, g.Src, g.Dst, 4, true); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkRandomWalkZINC measures the random-walk encoding (k = 16) per ZINC test graph
// (one core: go test -bench RandomWalkZINC -cpu 1 ./posenc).
func BenchmarkRandomWalkZINC(b *testing.B) {
	gs, _ := testdata.Load(b, "zinc", "test")
	var w RandomWalk
	const k = 16
	out := make([]float32, 64*k)
	b.ReportAllocs()
	cputime.Measure(b, func(i int) {
		g := gs[i%len(gs)]
		if err := w.Encode(g.N, g.Src, g.Dst, k, out[:g.N*k]); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkRandomWalkDense measures it on a CLUSTER-sized graph: 120 nodes, about 4,300
// directed edges (the SBM's density).
func BenchmarkRandomWalkDense(b *testing.B) {
	g := randgraph.New(rand.New(rand.NewPCG(1, 2)), randgraph.Options{N: 120, P: 0.3})
	var w RandomWalk
	const k = 16
	out := make([]float32, g.N*k)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := w.Encode(g.N, g.Src, g.Dst, k, out); err != nil {
			b.Fatal(err)
		}
	}
}
