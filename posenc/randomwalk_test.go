package posenc

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/randgraph"
)

// refReturnProbs computes (M^t)_ii, t = 1..k, by explicit dense matrix powers of the
// row-normalised adjacency M = D⁻¹A built from the 0/1 adjacency (denseAdj): the reference the
// encoding is checked against. A row without out-edges stays zero.
func refReturnProbs(g *data.Graph, k int) [][]float64 {
	a := denseAdj(g)
	for _, row := range a {
		deg := 0.0
		for _, x := range row {
			deg += x
		}
		for j := range row {
			if deg > 0 {
				row[j] /= deg
			}
		}
	}
	out := make([][]float64, g.N)
	for i := range out {
		out[i] = make([]float64, k)
	}
	p := a
	for t := 1; t <= k; t++ {
		if t > 1 {
			p = matMul(p, a)
		}
		for i := range out {
			out[i][t-1] = p[i][i]
		}
	}
	return out
}

// undirected returns the graph on n nodes with both directions of each listed pair.
func undirected(n int, pairs ...[2]int32) *data.Graph {
	g := &data.Graph{N: n}
	for _, p := range pairs {
		g.Src = append(g.Src, p[0], p[1])
		g.Dst = append(g.Dst, p[1], p[0])
	}
	return g
}

// directed returns the graph on n nodes with the listed edges u→v.
func directed(n int, edges ...[2]int32) *data.Graph {
	g := &data.Graph{N: n}
	for _, e := range edges {
		g.Src = append(g.Src, e[0])
		g.Dst = append(g.Dst, e[1])
	}
	return g
}

func cycle(n int) *data.Graph {
	var pairs [][2]int32
	for i := 0; i < n; i++ {
		pairs = append(pairs, [2]int32{int32(i), int32((i + 1) % n)})
	}
	return undirected(n, pairs...)
}

// cycleReturn is the return probability after t steps on the undirected n-cycle (n ≥ 3): the
// walk is a ±1 walk on Z_n, back at 0 when its j steps forward and t−j back leave a displacement
// 2j − t ≡ 0 (mod n), each sequence having probability 2^−t: Σ_{j: n | 2j−t} C(t, j) / 2^t.
func cycleReturn(n, t int) float64 {
	sum := 0.0
	for j := 0; j <= t; j++ {
		if (2*j-t)%n == 0 {
			sum += binom(t, j)
		}
	}
	return sum / math.Pow(2, float64(t))
}

func binom(n, k int) float64 {
	c := 1.0
	for i := 1; i <= k; i++ {
		c = c * float64(n-k+i) / float64(i)
	}
	return c
}

// alternate is the row (0, x, 0, x, …) of width k: a walk that can only return after an even
// number of steps and then does so with probability x.
func alternate(k int, x float64) []float64 {
	row := make([]float64, k)
	for t := 2; t <= k; t += 2 {
		row[t-1] = x
	}
	return row
}

// TestRandomWalkHandDerived checks graphs whose return probabilities are known in closed form.
func TestRandomWalkHandDerived(t *testing.T) {
	const k = 9
	rows := func(rs ...[]float64) [][]float64 { return rs }
	every := func(period int) []float64 { // a directed cycle: back exactly every period steps
		row := make([]float64, k)
		for t := period; t <= k; t += period {
			row[t-1] = 1
		}
		return row
	}
	for _, c := range []struct {
		name string
		g    *data.Graph
		want [][]float64
	}{
		// Path 0–1–2: from an end the walk is at the middle after odd steps and at either end
		// with probability ½ after even steps; from the middle it is back after every even step.
		{"path3", undirected(3, [2]int32{0, 1}, [2]int32{1, 2}),
			rows(alternate(k, 0.5), alternate(k, 1), alternate(k, 0.5))},
		// Star with centre 0 and 4 leaves: the centre is back after every even step; a leaf
		// after even steps is at a uniform leaf, itself with probability ¼.
		{"star4", undirected(5, [2]int32{0, 1}, [2]int32{0, 2}, [2]int32{0, 3}, [2]int32{0, 4}),
			rows(alternate(k, 1), alternate(k, 0.25), alternate(k, 0.25), alternate(k, 0.25), alternate(k, 0.25))},
		// An edge and an isolated node: the isolated node's walk cannot move, its row is zero.
		{"isolated", undirected(3, [2]int32{0, 1}),
			rows(alternate(k, 1), alternate(k, 1), make([]float64, k))},
		// The 4-cycle: odd steps never return (bipartite); after an even number 2j of steps the
		// displacement is ≡ 0 or 2 (mod 4), each with probability ½ by symmetry.
		{"cycle4", cycle(4), rows(alternate(k, 0.5), alternate(k, 0.5), alternate(k, 0.5), alternate(k, 0.5))},
		// Directed 3-cycle: back exactly at multiples of 3.
		{"dicycle3", directed(3, [2]int32{0, 1}, [2]int32{1, 2}, [2]int32{2, 0}), rows(every(3), every(3), every(3))},
		// A sink: 0→1, 1 has no out-edge, so both walks die.
		{"sink", directed(2, [2]int32{0, 1}), rows(make([]float64, k), make([]float64, k))},
		// A self-loop on an isolated node is its only out-edge: back after every step.
		{"selfloop", directed(1, [2]int32{0, 0}), rows(every(1))},
		// No nodes: nothing to write.
		{"empty", &data.Graph{}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkEncoding(t, c.g, k, c.want, 0)
		})
	}
}

// TestRandomWalkCycles compares cycles of both parities with the closed form cycleReturn: an
// even cycle never returns after an odd number of steps, an odd one does once t ≥ n.
func TestRandomWalkCycles(t *testing.T) {
	const k = 16
	for _, n := range []int{3, 5, 6, 7, 10} {
		want := make([][]float64, n)
		for i := range want {
			want[i] = make([]float64, k)
			for s := 1; s <= k; s++ {
				want[i][s-1] = cycleReturn(n, s)
			}
		}
		if n%2 == 0 {
			for s := 1; s <= k; s += 2 {
				if want[0][s-1] != 0 {
					t.Fatalf("closed form: C%d returns after %d steps", n, s)
				}
			}
		}
		checkEncoding(t, cycle(n), k, want, 1e-7)
	}
	// Hand values: the triangle returns after 2 steps with ½ (go and come back), after 3 with
	// ¼ (round either way), after 4 with 3/8.
	if got := []float64{cycleReturn(3, 2), cycleReturn(3, 3), cycleReturn(3, 4)}; !slices.Equal(got, []float64{0.5, 0.25, 0.375}) {
		t.Fatalf("closed form for the triangle: %v", got)
	}
}

// TestRandomWalkAgainstMatrixPowers compares random graphs (directed and undirected, isolated
// nodes, self-loops, graphs larger than one block of sources) with explicit matrix powers.
func TestRandomWalkAgainstMatrixPowers(t *testing.T) {
	gs := randgraph.Suite(11)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 6; i++ {
		gs = append(gs, randgraph.New(rng, randgraph.Options{N: 3 + rng.IntN(12), P: 0.4, Directed: i%2 == 0, SelfLoops: true}))
	}
	gs = append(gs, randgraph.New(rng, randgraph.Options{N: 150, P: 0.03}), randgraph.New(rng, randgraph.Options{N: 70, P: 0.05, Directed: true}))
	for gi, g := range gs {
		for _, k := range []int{1, 5, 16} {
			checkEncoding(t, g, k, refReturnProbs(g, k), 1e-6)
			if t.Failed() {
				t.Fatalf("graph %d (%d nodes, %d edges), k = %d", gi, g.N, g.NumEdges(), k)
			}
		}
	}
}

// checkEncoding encodes g with k steps and compares with want (rows per node) within tol
// (absolute, on probabilities).
func checkEncoding(t *testing.T, g *data.Graph, k int, want [][]float64, tol float64) {
	t.Helper()
	var w RandomWalk
	out := make([]float32, g.N*k)
	if err := w.Encode(g.N, g.Src, g.Dst, k, out); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < g.N; i++ {
		for s := 1; s <= k; s++ {
			got := float64(out[i*k+s-1])
			if d := math.Abs(got - want[i][s-1]); d > tol+1e-7*math.Abs(want[i][s-1]) || math.IsNaN(got) {
				t.Errorf("node %d, t = %d: %.9g, want %.9g", i, s, got, want[i][s-1])
			}
		}
	}
}

// TestRandomWalkDeterministic checks that a reused workspace gives the same bits as a fresh one
// (after a larger graph), that the edge order does not change the result beyond rounding, and
// that a repeated edge counts once.
func TestRandomWalkDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	big := randgraph.New(rng, randgraph.Options{N: 140, P: 0.05})
	g := randgraph.New(rng, randgraph.Options{N: 90, P: 0.08, Directed: true})
	const k = 16
	enc := func(w *RandomWalk, g *data.Graph) []float32 {
		out := make([]float32, g.N*k)
		if err := w.Encode(g.N, g.Src, g.Dst, k, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	var fresh, reused RandomWalk
	want := enc(&fresh, g)
	enc(&reused, big)
	if got := enc(&reused, g); !slices.Equal(got, want) {
		t.Fatal("a reused workspace changed the encoding")
	}
	// The same edges with one repeated: the simple graph's encoding, bit for bit.
	dup := &data.Graph{N: g.N, Src: append(slices.Clone(g.Src), g.Src[0]), Dst: append(slices.Clone(g.Dst), g.Dst[0])}
	if got := enc(&fresh, dup); !slices.Equal(got, want) {
		t.Fatal("a repeated edge changed the encoding")
	}
}

func TestRandomWalkRejectsBadInput(t *testing.T) {
	var w RandomWalk
	for _, c := range []struct {
		name     string
		n, k     int
		src, dst []int32
		out      int
		want     string
	}{
		{"k0", 2, 0, nil, nil, 0, "k = 0"},
		{"short output", 2, 3, nil, nil, 5, "output has 5 values"},
		{"edge outside", 2, 1, []int32{0}, []int32{2}, 2, "outside the 2 nodes"},
		{"negative edge", 2, 1, []int32{-1}, []int32{0}, 2, "outside the 2 nodes"},
		{"lengths", 2, 1, []int32{0, 1}, []int32{1}, 2, "2 edge sources but 1"},
		{"negative n", -1, 1, nil, nil, 0, "negative node count"},
	} {
		err := w.Encode(c.n, c.src, c.dst, c.k, make([]float32, c.out))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}
