package nn

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/rewiregnn/rewiregnn/data"
)

// Evaluation buckets (docs/design.md §Invariants (static-graphs)). MakeBuckets sizes its
// buckets for training batches, which are drawn in random order and so stay close to the mean
// batch: every bucket but the last sits a few percent above the mean, and the last holds the
// worst case, the batch of the largest graphs. The evaluation batches are cut from each split
// in its stored order and need not be like them: AQSOL's validation and test molecules are
// larger than its training molecules (23.5 and 28.5 atoms on average against 15.4), and its
// training file runs roughly from small molecules to large, so a third of the evaluation
// batches overflow the buckets near the mean and fall into the worst case, five times the
// mean's edges at r = 4 (measured: 27 of the 78 evaluation batches of a run, which made an
// evaluated graph cost more than a trained one). Those batches are fixed and known once the
// splits are loaded, so a run adds up to EvalFit buckets fitted to the ones the training
// buckets hold loosely; evaluation (nn.Trainer.Eval, gpu.Trainer.Eval) picks among both lists,
// training among the training buckets alone. In evaluation mode a graph's prediction does not
// depend on the bucket it is padded to (train.TestEvalBucketsExact), so the fitted buckets
// change the time an evaluation takes and nothing else.

// EvalFit is the most buckets FitEvalBuckets adds.
const EvalFit = 4

// evalLoose is how much larger than a batch (in nodes + edges) the training bucket it falls in
// may be before the batch gets a fitted bucket.
const evalLoose = 1.25

// cost is the work a net of bucket b does, as far as the choice of buckets goes: its rows, the
// nodes' and the edges'.
func (b Bucket) cost() int { return b.Nodes + b.Edges }

// SplitBatches returns the counts of the batches that cutting a split into batches of
// batchSize graphs in its order makes (ns and es: its graphs' node and edge counts), as the
// evaluation does.
func SplitBatches(ns, es []int, batchSize int) []Bucket {
	var out []Bucket
	for lo := 0; lo < len(ns); lo += batchSize {
		b := Bucket{Graphs: min(batchSize, len(ns)-lo)}
		for i := lo; i < lo+b.Graphs; i++ {
			b.Nodes += ns[i]
			b.Edges += es[i]
		}
		out = append(out, b)
	}
	return out
}

// FitEvalBuckets returns at most k buckets of batchSize graphs for the evaluation batches
// (their counts, SplitBatches) that the training buckets hold loosely: those whose bucket
// there (PickBucketFor) has more than evalLoose times their nodes + edges. It sorts those
// batches by edges (then nodes) and cuts them into at most k runs, each padded to its largest
// nodes and edges, choosing the cuts that minimise the nodes + edges of the padded batches
// (dynamic programming over the sorted batches). Buckets equal to one of train are left out;
// none if no batch is loose. A batch that fits no training bucket is an error.
func FitEvalBuckets(batches, train []Bucket, batchSize, k int) ([]Bucket, error) {
	var loose []Bucket
	for _, b := range batches {
		i, err := PickBucketFor(train, b.Nodes, b.Edges, b.Graphs)
		if err != nil {
			return nil, fmt.Errorf("evaluation buckets: %w", err)
		}
		if float64(train[i].cost()) > evalLoose*float64(b.cost()) {
			loose = append(loose, b)
		}
	}
	if len(loose) == 0 || k < 1 {
		return nil, nil
	}
	slices.SortFunc(loose, func(a, b Bucket) int {
		return cmp.Or(cmp.Compare(a.Edges, b.Edges), cmp.Compare(a.Nodes, b.Nodes))
	})
	var out []Bucket
	for _, run := range cutRuns(loose, k) {
		b := padTo(loose[run[0]:run[1]], batchSize)
		if !slices.Contains(train, b) && !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out, nil
}

// padTo is the bucket of batchSize graphs that holds each of bs: their largest nodes and edges.
func padTo(bs []Bucket, batchSize int) Bucket {
	p := Bucket{Graphs: batchSize}
	for _, b := range bs {
		p.Nodes, p.Edges = max(p.Nodes, b.Nodes), max(p.Edges, b.Edges)
	}
	return p
}

// runCost is what padding every batch of bs to padTo(bs) costs: len(bs) times its nodes + edges.
func runCost(bs []Bucket) int { return len(bs) * padTo(bs, 0).cost() }

// cutRuns cuts bs (in their order) into at most k consecutive runs [lo, hi) whose runCost sums
// to the least possible.
func cutRuns(bs []Bucket, k int) [][2]int {
	n := len(bs)
	k = min(k, n)
	// best[j][t] is the least cost of the first t batches in j runs; from[j][t] where the last
	// of those runs starts.
	best := make([][]int, k+1)
	from := make([][]int, k+1)
	for j := range best {
		best[j] = make([]int, n+1)
		from[j] = make([]int, n+1)
		for t := range best[j] {
			best[j][t] = -1 // unreachable
		}
	}
	best[0][0] = 0
	for j := 1; j <= k; j++ {
		for t := j; t <= n; t++ {
			maxN := 0
			for s := t - 1; s >= j-1; s-- { // the last run is bs[s:t]
				maxN = max(maxN, bs[s].Nodes)
				if best[j-1][s] < 0 {
					continue
				}
				// bs is sorted by edges: the run's largest is its last.
				c := best[j-1][s] + (t-s)*(maxN+bs[t-1].Edges)
				if best[j][t] < 0 || c < best[j][t] {
					best[j][t], from[j][t] = c, s
				}
			}
		}
	}
	j := 1
	for i := 2; i <= k; i++ {
		if best[i][n] >= 0 && best[i][n] < best[j][n] {
			j = i
		}
	}
	runs := make([][2]int, j)
	for t := n; j > 0; j-- {
		s := from[j][t]
		runs[j-1] = [2]int{s, t}
		t = s
	}
	return runs
}

// EvalBucket is the bucket Eval runs bt in: the smallest (PickBucket) of the training buckets
// and the fitted evaluation buckets that bt fits.
func (t *Trainer) EvalBucket(bt *data.Batch) (Bucket, error) {
	all := t.Buckets
	if len(t.EvalBuckets) > 0 {
		all = slices.Concat(t.Buckets, t.EvalBuckets)
	}
	i, err := PickBucket(all, bt)
	if err != nil {
		return Bucket{}, fmt.Errorf("trainer: %w", err)
	}
	return all[i], nil
}
