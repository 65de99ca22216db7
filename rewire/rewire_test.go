package rewire

import (
	"fmt"
	"math"
	"sort"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/randgraph"
)

var edgeConst = data.Row{Cat: []int32{0}, Float: []float32{0}}

// options returns the rewiring options for a random-suite graph (its edges carry a categorical
// feature and sometimes a float one).
func options(g *data.Graph, r int, selfLoops, cls bool) Options {
	ec := data.Row{Cat: []int32{0}}
	if g.Edge.FloatDim == 1 {
		ec = edgeConst
	}
	return Options{R: r, SelfLoops: selfLoops, CLS: cls, SP: true, Adj: true, EdgeConst: ec, CLSNode: data.Row{Cat: []int32{99}}}
}

// bruteDist returns hop distances by repeated relaxation over the edge list (Bellman–Ford
// style), independent of the package's code: -1 = unreachable.
func bruteDist(g *data.Graph) [][]int {
	d := make([][]int, g.N)
	for u := range d {
		d[u] = make([]int, g.N)
		for v := range d[u] {
			d[u][v] = -1
		}
		d[u][u] = 0
	}
	for changed := true; changed; {
		changed = false
		for u := 0; u < g.N; u++ {
			for m := range g.Src {
				s, t := int(g.Src[m]), int(g.Dst[m])
				if d[u][s] >= 0 && (d[u][t] < 0 || d[u][s]+1 < d[u][t]) {
					d[u][t] = d[u][s] + 1
					changed = true
				}
			}
		}
	}
	return d
}

// bruteWalks counts directed walks of length k from u to v by dynamic programming over the
// edge list.
func bruteWalks(g *data.Graph, k, u int) []float64 {
	cur := make([]float64, g.N)
	cur[u] = 1
	for step := 0; step < k; step++ {
		next := make([]float64, g.N)
		for m := range g.Src {
			next[g.Dst[m]] += cur[g.Src[m]]
		}
		cur = next
	}
	return cur
}

func TestRewireAgainstBruteForce(t *testing.T) {
	var rw Rewirer
	for gi, g := range randgraph.Suite(11) {
		dist := bruteDist(g)
		orig := map[[2]int32]int{}
		for m := range g.Src {
			orig[[2]int32{g.Src[m], g.Dst[m]}] = m
		}
		for _, r := range []int{1, 2, 3, 6} {
			for _, selfLoops := range []bool{true, false} {
				for _, cls := range []bool{false, true} {
					opt := options(g, r, selfLoops, cls)
					out, err := rw.Rewire(g, opt)
					if err != nil {
						t.Fatalf("graph %d: %v", gi, err)
					}
					name := fmt.Sprintf("graph %d (n=%d) r=%d loops=%v cls=%v", gi, g.N, r, selfLoops, cls)
					checkRewired(t, name, g, out, opt, dist, orig)
				}
			}
		}
	}
}

func checkRewired(t *testing.T, name string, g, out *data.Graph, opt Options, dist [][]int, orig map[[2]int32]int) {
	t.Helper()
	if err := out.Validate(); err != nil {
		t.Fatalf("%s: invalid output: %v", name, err)
	}
	n, r := g.N, opt.R
	wantN := n
	if opt.CLS {
		wantN++
	}
	if out.N != wantN || out.HasCLS != opt.CLS || out.R != r || out.AdjDim != r {
		t.Fatalf("%s: N=%d cls=%v R=%d adj=%d", name, out.N, out.HasCLS, out.R, out.AdjDim)
	}
	want := map[[2]int32]bool{}
	for u := 0; u < n; u++ {
		for v := 0; v < n; v++ {
			_, isOrig := orig[[2]int32{int32(u), int32(v)}]
			if d := dist[u][v]; d >= 0 && d <= r && (u != v || opt.SelfLoops || isOrig) {
				want[[2]int32{int32(u), int32(v)}] = true
			}
		}
	}
	if opt.CLS {
		c := int32(n)
		for v := int32(0); v < c; v++ {
			want[[2]int32{c, v}], want[[2]int32{v, c}] = true, true
		}
		if opt.SelfLoops {
			want[[2]int32{c, c}] = true
		}
	}
	if out.NumEdges() != len(want) {
		t.Fatalf("%s: %d edges, brute force %d", name, out.NumEdges(), len(want))
	}
	seen := map[[2]int32]bool{}
	for m := range out.Src {
		u, v := out.Src[m], out.Dst[m]
		key := [2]int32{u, v}
		if !want[key] || seen[key] {
			t.Fatalf("%s: unexpected or repeated edge %d→%d", name, u, v)
		}
		seen[key] = true
		isCLS := opt.CLS && (int(u) == n || int(v) == n)
		// Features: original edges keep theirs, all others get C_e.
		if om, ok := orig[key]; ok && !isCLS {
			if !out.Edge.RowEqual(m, &g.Edge, om) {
				t.Fatalf("%s: original edge %d→%d lost its feature", name, u, v)
			}
		} else if !rowIs(&out.Edge, m, opt.EdgeConst) {
			t.Fatalf("%s: new edge %d→%d does not carry C_e", name, u, v)
		}
		adj := out.Adj[m*r : (m+1)*r]
		if isCLS {
			if out.SP[m] != int32(r+1) {
				t.Fatalf("%s: CLS edge %d→%d has SP %d, want %d", name, u, v, out.SP[m], r+1)
			}
			for _, x := range adj {
				if x != 0 {
					t.Fatalf("%s: CLS edge %d→%d has adjacency %v", name, u, v, adj)
				}
			}
			continue
		}
		if int(out.SP[m]) != dist[u][v] {
			t.Fatalf("%s: SP(%d,%d) = %d, brute force %d", name, u, v, out.SP[m], dist[u][v])
		}
		for k := 1; k <= r; k++ {
			if w := bruteWalks(g, k, int(u))[v]; float64(adj[k-1]) != w {
				t.Fatalf("%s: (A^%d)[%d][%d] = %v, brute force %v", name, k, u, v, adj[k-1], w)
			}
		}
	}
	if opt.CLS && !rowIs(&out.Node, n, opt.CLSNode) {
		t.Fatalf("%s: CLS node does not carry C_v", name)
	}
	for i := 0; i < n; i++ {
		if !out.Node.RowEqual(i, &g.Node, i) {
			t.Fatalf("%s: node %d changed its features", name, i)
		}
	}
}

func rowIs(f *data.Features, i int, r data.Row) bool {
	for k := 0; k < f.CatDim; k++ {
		if f.Cat[i*f.CatDim+k] != r.Cat[k] {
			return false
		}
	}
	for k := 0; k < f.FloatDim; k++ {
		if f.Float[i*f.FloatDim+k] != r.Float[k] {
			return false
		}
	}
	return true
}

// edgeSet lists a graph's edges with their features as sortable strings.
func edgeSet(g *data.Graph) []string {
	var s []string
	for m := range g.Src {
		row := fmt.Sprint(g.Src[m], g.Dst[m])
		if g.Edge.CatDim > 0 {
			row += fmt.Sprint(g.Edge.Cat[m*g.Edge.CatDim : (m+1)*g.Edge.CatDim])
		}
		if g.Edge.FloatDim > 0 {
			row += fmt.Sprint(g.Edge.Float[m*g.Edge.FloatDim : (m+1)*g.Edge.FloatDim])
		}
		s = append(s, row)
	}
	sort.Strings(s)
	return s
}

func TestLosslessRecovery(t *testing.T) {
	var rw Rewirer
	for gi, g := range randgraph.Suite(5) {
		for _, r := range []int{1, 2, 4, 9} {
			for _, cls := range []bool{false, true} {
				out, err := rw.Rewire(g, options(g, r, true, cls))
				if err != nil {
					t.Fatal(err)
				}
				for _, by := range []Encoding{BySP, ByAdj} {
					if by == BySP && hasSelfLoop(g) {
						continue // SP cannot tell an original self-loop from an added one
					}
					back, err := Recover(out, by)
					if err != nil {
						t.Fatal(err)
					}
					if back.N != g.N {
						t.Fatalf("graph %d: recovered %d nodes, want %d", gi, back.N, g.N)
					}
					got, want := edgeSet(back), edgeSet(g)
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("graph %d r=%d cls=%v by=%d: recovered\n%v\nwant\n%v", gi, r, cls, by, got, want)
					}
					for i := 0; i < g.N; i++ {
						if !back.Node.RowEqual(i, &g.Node, i) {
							t.Fatalf("graph %d: node %d features changed", gi, i)
						}
					}
				}
			}
		}
	}
}

func TestRecoverNeedsAnEncoding(t *testing.T) {
	var rw Rewirer
	g := randgraph.Suite(1)[10]
	opt := options(g, 2, true, false)
	opt.SP, opt.Adj = false, false
	out, err := rw.Rewire(g, opt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Recover(out, ByAny); err == nil {
		t.Fatal("recovery without encodings succeeded")
	}
}

func TestDensityHandCase(t *testing.T) {
	// Path 0-1-2 (both directions). r=1 with self-loops: 4 edges + 3 loops = 7 of 9 pairs;
	// r=2: complete, 9/9. Without self-loops at r=1: 4/9. The CLS node is not counted.
	g := &data.Graph{N: 3, Src: []int32{0, 1, 1, 2}, Dst: []int32{1, 0, 2, 1}}
	cases := []struct {
		r         int
		loops     bool
		cls       bool
		want      float64
		wantEdges int
	}{
		{1, true, false, 7.0 / 9, 7},
		{2, true, false, 1, 9},
		{1, false, false, 4.0 / 9, 4},
		{1, true, true, 7.0 / 9, 7 + 6 + 1},
		{1, false, true, 4.0 / 9, 4 + 6},
	}
	var rw Rewirer
	for _, c := range cases {
		out, err := rw.Rewire(g, Options{R: c.r, SelfLoops: c.loops, CLS: c.cls})
		if err != nil {
			t.Fatal(err)
		}
		if d := Density(out); math.Abs(d-c.want) > 1e-12 || out.NumEdges() != c.wantEdges {
			t.Errorf("r=%d loops=%v cls=%v: density %v with %d edges, want %v with %d", c.r, c.loops, c.cls, d, out.NumEdges(), c.want, c.wantEdges)
		}
	}
}

func TestRewireRejectsBadInput(t *testing.T) {
	var rw Rewirer
	ok := &data.Graph{N: 3, Src: []int32{0, 1}, Dst: []int32{1, 0}, Edge: data.Features{CatDim: 1, Cat: []int32{1, 1}}}
	cases := []struct {
		name string
		g    *data.Graph
		opt  Options
	}{
		{"edge past N", &data.Graph{N: 2, Src: []int32{0}, Dst: []int32{2}}, Options{R: 1}},
		{"negative edge", &data.Graph{N: 2, Src: []int32{-1}, Dst: []int32{0}}, Options{R: 1}},
		{"zero r", ok, Options{R: 0, EdgeConst: data.Row{Cat: []int32{0}}}},
		{"negative r", ok, Options{R: -3, EdgeConst: data.Row{Cat: []int32{0}}}},
		{"edge constant width", ok, Options{R: 1}},
		{"repeated edge", &data.Graph{N: 2, Src: []int32{0, 0}, Dst: []int32{1, 1}}, Options{R: 1}},
		{"feature rows", &data.Graph{N: 2, Src: []int32{0}, Dst: []int32{1}, Edge: data.Features{CatDim: 1, Cat: []int32{1, 2}}}, Options{R: 1, EdgeConst: data.Row{Cat: []int32{0}}}},
	}
	for _, c := range cases {
		_, err := rw.Rewire(c.g, c.opt)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		t.Logf("%s: %v", c.name, err)
	}
	twice, err := rw.Rewire(ok, Options{R: 1, EdgeConst: data.Row{Cat: []int32{0}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rw.Rewire(twice, Options{R: 1, EdgeConst: data.Row{Cat: []int32{0}}}); err == nil {
		t.Error("rewiring a rewired graph accepted")
	}
}

func TestParseRadii(t *testing.T) {
	good := map[string][]int{"1-10": {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, "1,2,4": {1, 2, 4}, "1-3,6": {1, 2, 3, 6}, "5": {5}}
	for in, want := range good {
		got, err := ParseRadii(in)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("ParseRadii(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "-1", "3-1", "a", "1,,2", "", "0-4"} {
		if _, err := ParseRadii(in); err == nil {
			t.Errorf("ParseRadii(%q) accepted", in)
		}
	}
}

// Every subset of the encodings gives the same edges and features, and exactly the encodings
// asked for.
func TestEncodingSubsets(t *testing.T) {
	var rw, ref Rewirer
	for gi, g := range randgraph.Suite(9) {
		for _, r := range []int{1, 3} {
			full, err := ref.Rewire(g, options(g, r, true, true))
			if err != nil {
				t.Fatal(err)
			}
			for _, enc := range [][2]bool{{true, false}, {false, true}, {false, false}} {
				opt := options(g, r, true, true)
				opt.SP, opt.Adj = enc[0], enc[1]
				out, err := rw.Rewire(g, opt)
				if err != nil {
					t.Fatal(err)
				}
				if (out.SP != nil) != opt.SP || (out.Adj != nil) != opt.Adj {
					t.Fatalf("graph %d sp=%v adj=%v: got SP %v, Adj %v", gi, opt.SP, opt.Adj, out.SP != nil, out.Adj != nil)
				}
				if fmt.Sprint(out.Src, out.Dst, out.Edge) != fmt.Sprint(full.Src, full.Dst, full.Edge) {
					t.Fatalf("graph %d sp=%v adj=%v: edges differ from the full rewiring", gi, opt.SP, opt.Adj)
				}
				if opt.SP && fmt.Sprint(out.SP) != fmt.Sprint(full.SP) || opt.Adj && fmt.Sprint(out.Adj) != fmt.Sprint(full.Adj) {
					t.Fatalf("graph %d sp=%v adj=%v: encodings differ", gi, opt.SP, opt.Adj)
				}
			}
		}
	}
}
