package kern

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// TestSegmentMaxHand checks the segment max and its gradient on a hand-made case: ties (the
// lowest edge wins, -0 ties with +0), a NaN, -inf, padding edges and a node without edges.
func TestSegmentMaxHand(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	negZero := math.Copysign(0, -1)
	// 8 edges, 2 columns, 4 nodes; node 2 has no edge; edges 3 and 6 are padding.
	dst := []int32{0, 1, 0, -1, 1, 0, -1, 3}
	x := []float64{
		1, 0, // e0 → 0
		5, negZero, // e1 → 1
		1, 2, // e2 → 0: ties e0 in column 0
		9, 9, // e3 padding
		5, 0, // e4 → 1: ties e1 in both columns (-0 = +0)
		-3, nan, // e5 → 0: NaN in column 1
		7, 7, // e6 padding
		-inf, 4, // e7 → 3: -inf is a real maximum
	}
	var seg Segments
	seg.Group(dst, 4, nil)
	out, arg := make([]float64, 8), make([]int32, 8)
	SegmentMaxRows(out, arg, x, 2, &seg)
	wantArg := []int32{0, 5, 1, 1, -1, -1, 7, 7}
	if !slices.Equal(arg, wantArg) {
		t.Fatalf("arg = %v, want %v", arg, wantArg)
	}
	wantOut := []float64{1, nan, 5, negZero, 0, 0, -inf, 4}
	for i := range out {
		if math.Float64bits(out[i]) != math.Float64bits(wantOut[i]) {
			t.Fatalf("out[%d] = %v, want %v (out %v)", i, out[i], wantOut[i], out)
		}
	}
	g := []float64{10, 11, 20, 21, 30, 31, 40, 41}
	dx := make([]float64, len(x))
	for i := range dx {
		dx[i] = 99 // every element must be overwritten
	}
	SegmentMaxGradRows(dx, g, arg, 2, dst)
	wantDx := []float64{10, 0, 20, 21, 0, 0, 0, 0, 0, 0, 0, 11, 0, 0, 40, 41}
	if !slices.Equal(dx, wantDx) {
		t.Fatalf("dx = %v, want %v", dx, wantDx)
	}
}

// TestSegmentMaxIndependentOfThreads runs the segment max (float32 and float64) and its gradient
// on a problem large enough to be split, with 1, 2, 3 and 8 goroutines, and requires the same
// bits each time; values are rounded so that many columns have ties.
func TestSegmentMaxIndependentOfThreads(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewPCG(61, 62))
	const m, n, d = 30011, 4000, 13
	dst := make([]int32, m)
	for i := range dst {
		dst[i] = int32(rng.IntN(n+1)) - 1
	}
	x64 := make([]float64, m*d)
	for i := range x64 {
		x64[i] = math.Round(4 * rng.NormFloat64())
	}
	x32 := make([]float32, m*d)
	for i, v := range x64 {
		x32[i] = float32(v)
	}
	g := make([]float64, n*d)
	for i := range g {
		g[i] = rng.NormFloat64()
	}
	run := func() ([]float64, []float64, []int32, []float64) {
		var seg Segments
		seg.Group(dst, n, nil)
		out, arg := make([]float64, n*d), make([]int32, n*d)
		SegmentMaxRows(out, arg, x64, d, &seg)
		out32, arg32 := make([]float32, n*d), make([]int32, n*d)
		SegmentMaxRows(out32, arg32, x32, d, &seg)
		if !slices.Equal(arg, arg32) {
			t.Fatal("float32 and float64 pick different arg-maxes")
		}
		dx := make([]float64, m*d)
		SegmentMaxGradRows(dx, g, arg, d, dst)
		return out, widen(out32), arg, dx
	}
	runtime.GOMAXPROCS(1)
	o, o32, a, dx := run()
	for _, procs := range []int{2, 3, 8} {
		runtime.GOMAXPROCS(procs)
		o2, o322, a2, dx2 := run()
		if firstDiff(o, o2) >= 0 || firstDiff(o32, o322) >= 0 || !slices.Equal(a, a2) || firstDiff(dx, dx2) >= 0 {
			t.Fatalf("%d goroutines give other results than one", procs)
		}
	}
	// Each node's gradient lands on its arg-max edges: the column sums of dx equal those of g
	// over the nodes that have edges.
	for j := 0; j < d; j++ {
		var sx, sg float64
		for e := 0; e < m; e++ {
			sx += dx[e*d+j]
		}
		for v := 0; v < n; v++ {
			if a[v*d+j] >= 0 {
				sg += g[v*d+j]
				if x64[int(a[v*d+j])*d+j] != o[v*d+j] {
					t.Fatalf("node %d column %d: out is not x at the arg-max", v, j)
				}
			}
		}
		if math.Abs(sx-sg) > 1e-9 {
			t.Fatalf("column %d: Σ dx = %v, Σ g over nodes with edges = %v", j, sx, sg)
		}
	}
}

// TestSegmentsGroup checks Group on a hand-made edge list: each node's edges in increasing
// order, padding (−1 in key, or in also) left out, a node without edges empty, and a second
// call on a shorter list reusing the buffers.
func TestSegmentsGroup(t *testing.T) {
	key := []int32{2, 0, -1, 2, 1, 0, 2, 1}
	also := []int32{0, 1, 3, -1, 2, 2, 0, 1} // edge 3 is padding at its other end
	var s Segments
	s.Group(key, 4, also)
	want := [][]int32{{1, 5}, {4, 7}, {0, 6}, {}}
	for v, w := range want {
		if got := s.Of(v); !slices.Equal(got, w) {
			t.Errorf("with also: node %d: %v, want %v", v, got, w)
		}
	}
	s.Group(key, 4, nil) // key alone: edge 3 is real now
	want = [][]int32{{1, 5}, {4, 7}, {0, 3, 6}, {}}
	for v, w := range want {
		if got := s.Of(v); !slices.Equal(got, w) {
			t.Errorf("without also: node %d: %v, want %v", v, got, w)
		}
	}
	s.Group(key[:3], 4, nil)
	want = [][]int32{{1}, {}, {0}, {}}
	for v, w := range want {
		if got := s.Of(v); !slices.Equal(got, w) {
			t.Errorf("shorter list: node %d: %v, want %v", v, got, w)
		}
	}
}
