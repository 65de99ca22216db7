package posenc

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"testing"
)

// completeGraph is the directed complete graph on n nodes (both directions, no self-loops):
// every walk count of length k is ((n−1)^k − (−1)^k)/n off the diagonal, so they grow like
// (n−1)^k.
func completeGraph(n int) (src, dst []int32) {
	for u := 0; u < n; u++ {
		for v := 0; v < n; v++ {
			if u != v {
				src, dst = append(src, int32(u)), append(dst, int32(v))
			}
		}
	}
	return src, dst
}

// mixedGraph is a fixed, irregular directed graph on n nodes: u→v when a multiplicative hash of
// (u, v) falls in the lowest quarter, plus a directed ring so that every node has an out-edge.
func mixedGraph(n int) (src, dst []int32) {
	for u := 0; u < n; u++ {
		for v := 0; v < n; v++ {
			h := (uint32(u)*2654435761 ^ uint32(v)*40503) * 2246822519
			if u != v && (v == (u+1)%n || h>>30 == 0) {
				src, dst = append(src, int32(u)), append(dst, int32(v))
			}
		}
	}
	return src, dst
}

// countsHash is the SHA-256 of the walk-count table's float64 bits (little-endian).
func countsHash(w *Walks) string {
	h := sha256.New()
	var b [8]byte
	for _, x := range w.CountTable()[:w.R*w.N*w.N] {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(x))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestWalkCountsUnchanged pins the adjacency-power encoding bit for bit at the paper's largest
// radius, r = 10 (the table holds every k = 1…10), on two graphs: the hashes were computed by
// the implementation the committed results were trained with.
func TestWalkCountsUnchanged(t *testing.T) {
	cases := []struct {
		name     string
		n        int
		graph    func(int) ([]int32, []int32)
		wantHash string
	}{
		{"complete 12", 12, completeGraph, "8bfbdf076d1122292e126344996f1343af8392962bfcb642530d881dde7626f8"},
		{"mixed 40", 40, mixedGraph, "2ea3d65f6dc46c327fa991735d05462a2e3194dce93cb81591aea0dc003612f2"},
	}
	var reused Walks // a workspace that last ran a larger graph at a larger radius
	bigSrc, bigDst := mixedGraph(50)
	for _, c := range cases {
		if err := reused.Reset(50, bigSrc, bigDst, 14, true); err != nil {
			t.Fatal(err)
		}
		src, dst := c.graph(c.n)
		for _, w := range []*Walks{new(Walks), &reused} {
			if err := w.Reset(c.n, src, dst, 10, true); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if got := countsHash(w); got != c.wantHash {
				t.Errorf("%s: walk counts hash %s, want %s", c.name, got, c.wantHash)
			}
		}
	}
}

// TestWalkCountsOverflowRefused: a radius whose walk counts exceed what float32 holds is
// refused with the first overflowing length and the largest finite radius; that radius itself
// is accepted with finite float32 counts, and a graph whose counts stay small takes any radius.
func TestWalkCountsOverflowRefused(t *testing.T) {
	src, dst := completeGraph(12) // counts ≈ 11^k/12: 3.1e38 at k = 38, 3.4e39 at k = 39
	var w Walks
	err := w.Reset(12, src, dst, 1000, true)
	var oe *CountOverflowError
	if !errors.As(err, &oe) {
		t.Fatalf("r = 1000 on K12: error %v, want a CountOverflowError", err)
	}
	if oe.R != 1000 || oe.K != 39 || !(oe.Peak > MaxCount) {
		t.Errorf("overflow error %+v, want R 1000, K 39, Peak > %g", oe, float64(MaxCount))
	}
	for _, want := range []string{"r = 1000 (dataset.r)", "walks of length 39", "float32", "3.403e+38", "r must be at most 38"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if err := w.Reset(12, src, dst, oe.K-1, true); err != nil {
		t.Fatalf("r = %d: %v", oe.K-1, err)
	}
	for i, x := range w.CountTable()[:w.R*w.N*w.N] {
		if f := float32(x); math.IsInf(float64(f), 0) || math.IsNaN(float64(f)) {
			t.Fatalf("r = %d: count %d is %v in float32", oe.K-1, i, f)
		}
	}
	if err := w.Reset(12, src, dst, oe.K, true); !errors.As(err, &oe) {
		t.Errorf("r = %d: error %v, want a CountOverflowError", oe.K, err)
	}
	// a directed path: no walk count exceeds 1, at any radius; without counts nothing overflows
	if err := w.Reset(4, []int32{0, 1, 2}, []int32{1, 2, 3}, 1000, true); err != nil {
		t.Errorf("r = 1000 on a path: %v", err)
	}
	if err := w.Reset(12, src, dst, 1000, false); err != nil {
		t.Errorf("r = 1000 on K12 without counts: %v", err)
	}
}
