package memplan

import (
	"fmt"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/prep"
)

// sizesOf is the sizes of gs.
func sizesOf(gs []*data.Graph) []prep.GraphSize {
	out := make([]prep.GraphSize, len(gs))
	for i, g := range gs {
		out[i] = prep.SizeOf(g)
	}
	return out
}

// TestUsedBuckets: evaluation batches are cut in order and mark exactly their buckets; the
// training batches of random orders mark the bucket a batch of the two largest graphs needs.
func TestUsedBuckets(t *testing.T) {
	g := func(n int) *data.Graph { return &data.Graph{N: n, Src: make([]int32, n), Dst: make([]int32, n)} }
	gs := sizesOf([]*data.Graph{g(1), g(1), g(1), g(10), g(1), g(10)})
	buckets := []nn.Bucket{{Nodes: 2, Edges: 2, Graphs: 2}, {Nodes: 11, Edges: 11, Graphs: 2}, {Nodes: 20, Edges: 20, Graphs: 2}}
	tr, ev, err := usedBuckets(buckets, 2, gs, [][]prep.GraphSize{gs[:4]}, 50, 1)
	if err != nil {
		t.Fatal(err)
	}
	// in order: (1, 1) → bucket 0, (1, 10) → bucket 1
	if fmt.Sprint(ev) != "[true true false]" {
		t.Errorf("evaluation buckets %v", ev)
	}
	// 50 random orders pair the two 10-node graphs at least once (p = 1/5 per epoch)
	if fmt.Sprint(tr) != "[true true true]" {
		t.Errorf("training buckets %v", tr)
	}
	tr, _, err = usedBuckets(buckets, 2, gs[:3], nil, 50, 1)
	if err != nil || fmt.Sprint(tr) != "[true false false]" {
		t.Errorf("small graphs only: %v, %v", tr, err)
	}
	if _, _, err := usedBuckets(buckets[:1], 2, gs, nil, 1, 1); err == nil {
		t.Error("a batch that fits no bucket: no error")
	}
}
