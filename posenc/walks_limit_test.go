package posenc

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
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
