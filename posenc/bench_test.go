package posenc

import (
	"testing"

	"github.com/rewiregnn/rewiregnn/internal/cputime"
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
