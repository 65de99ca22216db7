package posenc

import (
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/randgraph"
)

// denseAdj returns the 0/1 adjacency matrix of g.
func denseAdj(g *data.Graph) [][]float64 {
	a := make([][]float64, g.N)
	for i := range a {
		a[i] = make([]float64, g.N)
	}
	for m := range g.Src {
		a[g.Src[m]][g.Dst[m]] = 1
	}
	return a
}

func matMul(x, y [][]float64) [][]float64 {
	n := len(x)
	z := make([][]float64, n)
	for i := range z {
		z[i] = make([]float64, n)
		for k := 0; k < n; k++ {
			for j := 0; j < n; j++ {
				z[i][j] += x[i][k] * y[k][j]
			}
		}
	}
	return z
}

// floydWarshall returns all-pairs directed hop distances (-1 for unreachable).
func floydWarshall(g *data.Graph) [][]int {
	const inf = 1 << 30
	d := make([][]int, g.N)
	for i := range d {
		d[i] = make([]int, g.N)
		for j := range d[i] {
			d[i][j] = inf
		}
		d[i][i] = 0
	}
	for m := range g.Src {
		if g.Src[m] != g.Dst[m] {
			d[g.Src[m]][g.Dst[m]] = 1
		}
	}
	for k := 0; k < g.N; k++ {
		for i := 0; i < g.N; i++ {
			for j := 0; j < g.N; j++ {
				if d[i][k]+d[k][j] < d[i][j] {
					d[i][j] = d[i][k] + d[k][j]
				}
			}
		}
	}
	for i := range d {
		for j := range d[i] {
			if d[i][j] == inf {
				d[i][j] = -1
			}
		}
	}
	return d
}

func TestWalksAgainstBruteForce(t *testing.T) {
	var w Walks
	for gi, g := range randgraph.Suite(1) {
		fw := floydWarshall(g)
		a := denseAdj(g)
		for _, r := range []int{1, 2, 3, 5, 10} {
			for _, counts := range []bool{false, true} {
				if err := w.Reset(g.N, g.Src, g.Dst, r, counts); err != nil {
					t.Fatalf("graph %d r=%d: %v", gi, r, err)
				}
				powers := [][][]float64{nil, a}
				for k := 2; k <= r; k++ {
					powers = append(powers, matMul(powers[k-1], a))
				}
				for u := 0; u < g.N; u++ {
					for v := 0; v < g.N; v++ {
						want := fw[u][v]
						if want > r {
							want = Unreached
						}
						if got := w.Dist(u, v); int(got) != want {
							t.Fatalf("graph %d r=%d counts=%v: dist(%d,%d) = %d, Floyd–Warshall %d", gi, r, counts, u, v, got, want)
						}
						if w.Reached(u, v) != (want != Unreached) {
							t.Fatalf("graph %d: Reached disagrees on %d→%d", gi, u, v)
						}
						if !counts {
							continue
						}
						for k := 1; k <= r; k++ {
							if got := w.Count(k, u, v); got != powers[k][u][v] {
								t.Fatalf("graph %d: (A^%d)[%d][%d] = %v, dense power %v", gi, k, u, v, got, powers[k][u][v])
							}
						}
					}
				}
			}
		}
	}
}

func TestWalksRejectsBadInput(t *testing.T) {
	var w Walks
	cases := []struct {
		name     string
		n        int
		src, dst []int32
		r        int
	}{
		{"edge past n", 3, []int32{0, 3}, []int32{1, 0}, 2},
		{"negative node", 3, []int32{-1}, []int32{1}, 2},
		{"zero radius", 3, []int32{0}, []int32{1}, 0},
		{"negative radius", 3, []int32{0}, []int32{1}, -2},
		{"repeated edge", 3, []int32{0, 0}, []int32{1, 1}, 2},
		{"length mismatch", 3, []int32{0, 1}, []int32{1}, 2},
	}
	for _, c := range cases {
		if err := w.Reset(c.n, c.src, c.dst, c.r, true); err == nil {
			t.Errorf("%s: no error", c.name)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
	}
}
