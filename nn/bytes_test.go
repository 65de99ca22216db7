package nn_test

import (
	"runtime"
	"testing"

	"github.com/rewiregnn/rewiregnn/internal/testgraphs"
	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/tensor"
)

func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestNetBytesMatchesHeap: what NetBytes predicts before running is within 10% of the heap a
// built net holds after a training (or evaluation) step, for each model on ZINC molecules.
func TestNetBytesMatchesHeap(t *testing.T) {
	gs := testgraphs.ZINC(t, 256)
	bt := zincBatches(t, gs, 128)[0]
	buckets, err := nn.MakeBuckets(gs, 128, 1)
	if err != nil {
		t.Fatal(err)
	}
	for name, build := range zincModels(t) {
		for _, train := range []bool{true, false} {
			p, err := nn.NewParams(tensor.Float32, 1)
			if err != nil {
				t.Fatal(err)
			}
			mem, err := nn.NetBytes(build, p, buckets[0], train, false)
			want := mem.Total()
			if err != nil {
				t.Fatal(err)
			}
			before := liveHeap()
			n, err := build(p, buckets[0], train)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := n.Run(bt); err != nil {
				t.Fatal(err)
			}
			got := liveHeap() - before
			runtime.KeepAlive(n)
			t.Logf("%s train=%v: predicted %.1f MiB, held %.1f MiB", name, train, float64(want)/(1<<20), float64(got)/(1<<20))
			if r := float64(want) / float64(got); r < 0.9 || r > 1.1 {
				t.Errorf("%s train=%v: NetBytes %d, the net holds %d (ratio %.2f)", name, train, want, got, r)
			}
		}
	}
}
