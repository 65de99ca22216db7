package rewire

import (
	"fmt"
	"testing"

	"github.com/rewiregnn/rewiregnn/internal/cputime"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
)

// BenchmarkRewireZINC measures rewiring with the shortest-path and adjacency encodings per
// ZINC test graph (one core: go test -bench RewireZINC -cpu 1 ./rewire).
func BenchmarkRewireZINC(b *testing.B) {
	gs, spec := testdata.Load(b, "zinc", "test")
	for _, r := range []int{1, 4, 10} {
		b.Run(fmt.Sprintf("r=%d", r), func(b *testing.B) {
			var rw Rewirer
			opt := Defaults(spec, r)
			b.ReportAllocs()
			cputime.Measure(b, func(i int) {
				if _, err := rw.Rewire(gs[i%len(gs)], opt); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
