package nn

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSplitBatches: a split cut in order into batches, the last one short, with the sums of
// its graphs' counts (by hand).
func TestSplitBatches(t *testing.T) {
	got := SplitBatches([]int{1, 2, 3, 4, 5}, []int{10, 20, 30, 40, 50}, 2)
	want := []Bucket{{3, 30, 2}, {7, 70, 2}, {5, 50, 1}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := SplitBatches(nil, nil, 2); got != nil {
		t.Fatalf("an empty split: %v", got)
	}
}

// bruteCuts is the least total runCost of bs cut into at most k consecutive runs, over every
// set of cut points.
func bruteCuts(bs []Bucket, k int) int {
	n := len(bs)
	best := -1
	for mask := 0; mask < 1<<(n-1); mask++ { // bit i: a cut after bs[i]
		runs, cost, lo := 1, 0, 0
		for i := 0; i < n-1; i++ {
			if mask&(1<<i) != 0 {
				cost += runCost(bs[lo : i+1])
				lo = i + 1
				runs++
			}
		}
		cost += runCost(bs[lo:])
		if runs <= k && (best < 0 || cost < best) {
			best = cost
		}
	}
	return best
}

// TestCutRunsAgainstBruteForce: the dynamic programme's runs cover the batches in order and cost
// what the best of every way to cut them costs, for random batches sorted as FitEvalBuckets
// sorts them (nodes need not grow with edges).
func TestCutRunsAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 7))
	for trial := range 300 {
		n := 1 + rng.IntN(9)
		bs := make([]Bucket, n)
		for i := range bs {
			bs[i] = Bucket{Nodes: 1 + rng.IntN(50), Edges: 1 + rng.IntN(200), Graphs: 4}
		}
		slices.SortFunc(bs, func(a, b Bucket) int { return a.Edges - b.Edges })
		k := 1 + rng.IntN(4)
		runs := cutRuns(bs, k)
		if len(runs) == 0 || len(runs) > k || runs[0][0] != 0 || runs[len(runs)-1][1] != n {
			t.Fatalf("trial %d: runs %v of %d batches, k %d", trial, runs, n, k)
		}
		cost := 0
		for i, r := range runs {
			if r[0] >= r[1] || (i > 0 && r[0] != runs[i-1][1]) {
				t.Fatalf("trial %d: runs %v are not consecutive and non-empty", trial, runs)
			}
			cost += runCost(bs[r[0]:r[1]])
		}
		if want := bruteCuts(bs, k); cost != want {
			t.Fatalf("trial %d: runs %v cost %d, the best cut costs %d (batches %v, k %d)", trial, runs, cost, want, bs, k)
		}
	}
}

// TestFitEvalBuckets: batches near the training buckets get nothing; those that would be padded
// far (into the worst case) get at most k buckets, each loose batch fits one of them, every
// fitted bucket holds batchSize graphs and is the padded size of some batch; a batch no
// training bucket holds is an error.
func TestFitEvalBuckets(t *testing.T) {
	train := []Bucket{{100, 400, 8}, {110, 440, 8}, {500, 2000, 8}}
	near := []Bucket{{95, 390, 8}, {105, 430, 8}, {60, 200, 5}} // the last, short, is loose: bucket 0's 500 > 1.25 × 260
	far := []Bucket{{150, 600, 8}, {160, 640, 8}, {300, 1300, 8}, {310, 1250, 8}, {200, 800, 8}, {120, 470, 8}}
	got, err := FitEvalBuckets(near[:2], train, 8, 4)
	if err != nil || got != nil {
		t.Fatalf("batches that fit the buckets near the mean: %v, %v", got, err)
	}
	for _, k := range []int{1, 2, 3, 4} {
		all := slices.Concat(near, far)
		got, err := FitEvalBuckets(all, train, 8, k)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || len(got) > k {
			t.Fatalf("k %d: %d buckets %v", k, len(got), got)
		}
		loose := append(slices.Clone(far), near[2])
		for _, b := range got {
			if b.Graphs != 8 {
				t.Fatalf("k %d: bucket %v does not hold a whole batch of 8", k, b)
			}
			if !slices.ContainsFunc(loose, func(l Bucket) bool { return l.Edges == b.Edges }) {
				t.Fatalf("k %d: bucket %v is not padded to a loose batch's edges", k, b)
			}
		}
		for _, l := range loose {
			if !slices.ContainsFunc(got, func(b Bucket) bool { return b.holds(l.Nodes, l.Edges, l.Graphs) }) {
				t.Fatalf("k %d: loose batch %v fits no fitted bucket of %v", k, l, got)
			}
		}
		if k == 4 {
			t.Logf("k 4: %v", got)
		}
	}
	if _, err := FitEvalBuckets([]Bucket{{600, 10, 8}}, train, 8, 4); err == nil {
		t.Fatal("a batch that fits no training bucket: no error")
	}
}
