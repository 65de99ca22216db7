package memplan

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/memlimit"
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
// training batches of random orders mark the bucket a batch of the two largest graphs needs;
// a bucket fitted for evaluation is marked for evaluation only.
func TestUsedBuckets(t *testing.T) {
	g := func(n int) *data.Graph { return &data.Graph{N: n, Src: make([]int32, n), Dst: make([]int32, n)} }
	gs := sizesOf([]*data.Graph{g(1), g(1), g(1), g(10), g(1), g(10)})
	buckets := []nn.Bucket{{Nodes: 2, Edges: 2, Graphs: 2}, {Nodes: 11, Edges: 11, Graphs: 2}, {Nodes: 20, Edges: 20, Graphs: 2}}
	tr, ev, err := usedBuckets(buckets, 3, 2, gs, [][]prep.GraphSize{gs[:4]}, 50, 1)
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
	tr, _, err = usedBuckets(buckets, 3, 2, gs[:3], nil, 50, 1)
	if err != nil || fmt.Sprint(tr) != "[true false false]" {
		t.Errorf("small graphs only: %v, %v", tr, err)
	}
	if _, _, err := usedBuckets(buckets[:1], 1, 2, gs, nil, 1, 1); err == nil {
		t.Error("a batch that fits no bucket: no error")
	}
	// A bucket fitted for evaluation (after the training ones) serves the evaluation batch
	// (1, 10) and no training batch: training picks among the training buckets alone.
	fitted := []nn.Bucket{buckets[0], buckets[2], buckets[1]}
	tr, ev, err = usedBuckets(fitted, 2, 2, gs, [][]prep.GraphSize{gs[:4]}, 50, 1)
	if err != nil || fmt.Sprint(tr) != "[true true false]" || fmt.Sprint(ev) != "[true false true]" {
		t.Errorf("with a fitted evaluation bucket: training %v, evaluation %v, %v", tr, ev, err)
	}
}

// TestLargestFit: the largest batch size whose need is within the limit, for needs that grow
// linearly, in steps and not at all; hi itself when it fits, 0 when nothing does, and the
// need's error passed on.
func TestLargestFit(t *testing.T) {
	for _, c := range []struct {
		name  string
		need  func(bs int) int64
		hi    int
		limit int64
		want  int
	}{
		{"linear", func(bs int) int64 { return 100 + 10*int64(bs) }, 128, 1000, 90},
		{"fits", func(bs int) int64 { return 100 + 10*int64(bs) }, 64, 1000, 64},
		{"none", func(bs int) int64 { return 2000 + int64(bs) }, 64, 1000, 0},
		{"steps", func(bs int) int64 { return 100 * int64((bs+15)/16) }, 256, 700, 112},
		{"flat then steep", func(bs int) int64 { return 500 + max(0, int64(bs-100))*50 }, 200, 1000, 110},
	} {
		calls := 0
		need := func(bs int) (int64, error) {
			calls++
			if bs < 1 || bs > c.hi {
				t.Fatalf("%s: probed batch size %d outside 1…%d", c.name, bs, c.hi)
			}
			return c.need(bs), nil
		}
		got, err := LargestFit(need, c.hi, c.need(c.hi), c.limit)
		if err != nil || got != c.want {
			t.Errorf("%s: LargestFit = %d, %v; want %d", c.name, got, err, c.want)
		}
		if calls > 12 {
			t.Errorf("%s: %d estimates, want a bisection's few", c.name, calls)
		}
	}
	boom := errors.New("boom")
	if _, err := LargestFit(func(int) (int64, error) { return 0, boom }, 64, 2000, 1000); !errors.Is(err, boom) {
		t.Errorf("the need's error: %v", err)
	}
}

// TestEstimateParts: Total adds the parts, Need adds the collector's room, and the refusal names
// the need, the budget and its source, and the batch size that fits.
func TestEstimateParts(t *testing.T) {
	e := Estimate{BatchSize: 128, Data: 1 << 20, Batches: 2 << 20, Params: 3 << 20, Train: 4 << 20, Eval: 5 << 20, Arena: 6 << 20, Runtime: 7 << 20}
	if e.Total() != 28<<20 || e.Need() != int64(float64(28<<20)*(1+GCRoom)) {
		t.Fatalf("Total %d, Need %d", e.Total(), e.Need())
	}
	fit := e
	fit.BatchSize = 32
	me := &MemoryError{Est: e, Limit: memlimit.Limit{Bytes: 20 << 20, Source: "-memory"}, Fits: 32, FitEst: fit}
	for _, want := range []string{memlimit.Format(e.Need()), memlimit.Format(20 << 20), "(-memory)", "-set train.batch_size=32", "activations " + memlimit.Format(6<<20)} {
		if !strings.Contains(me.Error(), want) {
			t.Errorf("the refusal lacks %q: %s", want, me.Error())
		}
	}
}
