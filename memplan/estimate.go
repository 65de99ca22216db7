// Package memplan provides a run's memory estimate before anything large is allocated: the live
// bytes by part that the memory guard checks (Run.Estimate, Estimate, MemoryError), the run's
// training and evaluation buckets (Run.Buckets), those its batches use and nets to measure them
// on (Run.UsedNets), the largest batch size that fits a budget (LargestFit), and the plan that
// `train -plan` prints (Plan, GPUEstimate, Plan.Report).
package memplan

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/internal/memlimit"
	"github.com/rewiregnn/rewiregnn/internal/plural"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/prep"
	"gorgonia.org/tensor"
)

// The memory guard (docs/design.md §"Memory"). Before the trainer is built, the run's memory is
// estimated from the preprocessed graphs and the compiled nets' shapes (nothing large is
// allocated yet); a run that would not fit stops at once with the estimate, the limit and the
// largest batch size that fits. A run that fits gets the estimate with the garbage collector's
// room (Estimate.Need) as the Go runtime's soft memory limit: with GOGC=100 alone the heap of
// a long run drifts to twice the live bytes (garbage accumulates until the next collection;
// measured: 1.43× the estimate after 15 ZINC epochs), with the limit it stays at the estimate.

// Fixed parts of the estimate.
const (
	// runtimeBytes is the process before any data: the Go runtime, code, stacks (measured:
	// the train binary's resident set before loading data is 25–35 MiB).
	runtimeBytes = 40 << 20
	// paramBytes per parameter besides its gradient (in the nets): the float32 value and Adam's
	// two float64 moments.
	paramBytes = 4 + 16
	// GCRoom is the room left to the garbage collector above the live estimate: the soft memory
	// limit is the estimate plus this share, so the GC collects when garbage fills it instead of
	// letting the heap double. Were the estimate short by more than this, the GC would run
	// often (the runtime caps it at half the CPU) but the run would not fail.
	GCRoom = 0.25
	// simEpochs caps the epochs of random batch order simulated to find the training buckets
	// a run uses.
	simEpochs = 1000
)

// Run is what a run's memory is estimated from: its model's parameter count, the sizes of its
// preprocessed graphs, its training settings (batch buckets, epochs) and its seed.
type Run struct {
	Params int
	Sizes  [3][]prep.GraphSize // train, val and test
	Train  config.Train
	Seed   int64
}

// Estimate is the estimated live memory of a CPU run, by part, in bytes.
type Estimate struct {
	BatchSize    int
	Data         int64 // the graphs of every split after preprocessing
	Batches      int64 // the fixed evaluation batches (val, test) and, at the end, the training split's
	Params       int64 // parameter values and Adam's moments
	Train, Eval  int64 // what the training and evaluation nets of the buckets the run uses hold alone (nn.NetMem.Own)
	Arena        int64 // the activations and scratch all nets share (nn.Trainer.Arena): the largest net's
	ArenaF32     int64 // the arena's float32 values (to reserve)
	ArenaF64     int64
	ArenaEdges   int  // the edges of the bucket whose net sets Arena
	ArenaTrain   bool // that net is a training net
	Runtime      int64
	TrainBuckets int   // how many of the buckets the training batches use
	Buckets      int   // the run's buckets, training and evaluation (Run.Buckets)
	EvalFitted   int   // how many of them are fitted to the evaluation batches
	Largest      int64 // the largest bucket's training net
}

// Total is the estimated live memory.
func (e Estimate) Total() int64 {
	return e.Data + e.Batches + e.Params + e.Train + e.Eval + e.Arena + e.Runtime
}

// Need is Total with the garbage collector's room: what the budget must hold.
func (e Estimate) Need() int64 { return int64(float64(e.Total()) * (1 + GCRoom)) }

// Parts lists the parts, largest first.
func (e Estimate) Parts() string {
	f := memlimit.Format
	return fmt.Sprintf("activations %s (shared by the nets; the largest training net %s in all), training nets %s (%d of %d buckets), evaluation nets %s, graphs %s, batches %s, parameters %s, runtime %s",
		f(e.Arena), f(e.Largest), f(e.Train), e.TrainBuckets, e.Buckets, f(e.Eval), f(e.Data), f(e.Batches), f(e.Params), f(e.Runtime))
}

// MemoryError is returned when the estimate does not fit the budget.
type MemoryError struct {
	Est    Estimate
	Limit  memlimit.Limit
	Fits   int      // the largest batch size that fits (0: none)
	FitEst Estimate // its estimate
	// Parallel is the number of runs that share the budget (train -parallel; 0: one), and
	// ParallelFits how many of them would fit at this batch size (0: none).
	Parallel, ParallelFits int
}

func (e *MemoryError) Error() string {
	f := memlimit.Format
	var b strings.Builder
	fmt.Fprintf(&b, "memory: this run needs about %s (%s live + %.0f%% for the garbage collector) but %s is available (%s)\n",
		f(e.Est.Need()), f(e.Est.Total()), 100*GCRoom, f(e.Limit.Bytes), e.Limit.Source)
	fmt.Fprintf(&b, "  estimate at batch size %d: %s\n", e.Est.BatchSize, e.Est.Parts())
	if e.Fits > 0 {
		fmt.Fprintf(&b, "  the largest batch size that fits is %d (about %s): -set train.batch_size=%d\n", e.Fits, f(e.FitEst.Need()), e.Fits)
	} else {
		fmt.Fprintf(&b, "  no batch size fits (batch size 1 needs about %s): use a -subset, a smaller model or a larger machine\n", f(e.FitEst.Need()))
	}
	if e.Parallel > 1 {
		if e.ParallelFits >= 1 {
			fmt.Fprintf(&b, "  -parallel %d trains %d seeds at once, each with 1/%d of the budget; the whole budget holds %s at once: -parallel %d\n",
				e.Parallel, e.Parallel, e.Parallel, plural.Count(e.ParallelFits, "run"), e.ParallelFits)
		} else {
			fmt.Fprintf(&b, "  -parallel %d trains %d seeds at once, each with 1/%d of the budget; not even one run fits the whole budget\n", e.Parallel, e.Parallel, e.Parallel)
		}
	}
	b.WriteString("  -memory SIZE sets the budget instead (e.g. -memory 32GiB); -no-memory-guard skips this check (the kernel may then kill the run)")
	return b.String()
}

// Refuse returns the MemoryError for est, with the largest batch size that fits (estimated with
// activation recomputation or without, as est).
func (r *Run) Refuse(build nn.BuildFunc, est Estimate, limit memlimit.Limit, recompute bool) error {
	e := &MemoryError{Est: est, Limit: limit}
	ests := map[int]Estimate{est.BatchSize: est}
	at := func(bs int) (int64, error) {
		m, ok := ests[bs]
		if !ok {
			var err error
			if m, err = r.Estimate(build, bs, recompute); err != nil {
				return 0, err
			}
			ests[bs] = m
		}
		return m.Need(), nil
	}
	fits, err := LargestFit(at, est.BatchSize, est.Need(), limit.Bytes)
	if err != nil {
		return err
	}
	e.Fits = fits
	if _, err := at(max(fits, 1)); err != nil {
		return err
	}
	e.FitEst = ests[max(fits, 1)]
	return e
}

// LargestFit returns the largest batch size up to hi whose need (growing with the batch size)
// is at most limit, 0 if none, given top, the need at hi: hi itself if it fits, else a line
// through the needs at hi and half of it gives a first guess, then a bisection over the needs
// themselves settles it.
func LargestFit(need func(bs int) (int64, error), hi int, top, limit int64) (int, error) {
	if top <= limit {
		return hi, nil
	}
	lo := 0 // the largest batch size known to fit (0: none); hi the smallest known not to
	probe := 0
	if half := hi / 2; half >= 1 {
		low, err := need(half)
		if err != nil {
			return 0, err
		}
		if slope := float64(top-low) / float64(hi-half); slope > 0 {
			probe = half + int(math.Floor(float64(limit-low)/slope))
		}
	}
	for hi-lo > 1 {
		if probe <= lo || probe >= hi {
			probe = (lo + hi) / 2
		}
		n, err := need(probe)
		if err != nil {
			return 0, err
		}
		if n <= limit {
			lo = probe
		} else {
			hi = probe
		}
		probe = 0
	}
	return lo, nil
}

// Estimate estimates the run's live memory at batch size bs from the sizes of its graphs
// (r.Sizes) and the nets of the buckets bs gives, built by build on throwaway parameters
// without running them.
func (r *Run) Estimate(build nn.BuildFunc, bs int, recompute bool) (Estimate, error) {
	e := Estimate{BatchSize: bs, Params: int64(r.Params) * paramBytes, Runtime: runtimeBytes}
	nodes := 0
	for _, split := range r.Sizes {
		for _, g := range split {
			e.Data += g.Bytes
			nodes += g.N
		}
	}
	// The evaluation batches copy their graphs into unions: val and test for the whole run,
	// the training split's at the end (while everything else is still held).
	e.Batches = e.Data + 4*int64(nodes)
	buckets, train, eval, p, err := r.UsedNets(bs)
	if err != nil {
		return e, err
	}
	e.Buckets = len(buckets)
	e.EvalFitted = len(buckets) - r.Train.Buckets // MakeBucketsFor proposes exactly train.buckets
	arena := func(m nn.NetMem, b nn.Bucket, train bool) {
		if m.Shared > e.Arena {
			e.Arena, e.ArenaEdges, e.ArenaTrain = m.Shared, b.Edges, train
		}
		e.ArenaF32, e.ArenaF64 = max(e.ArenaF32, m.F32), max(e.ArenaF64, m.F64)
	}
	for i, b := range buckets {
		if train[i] {
			m, err := nn.NetBytes(build, p, b, true, recompute)
			if err != nil {
				return e, err
			}
			e.Train += m.Own
			e.TrainBuckets++
			e.Largest = max(e.Largest, m.Total())
			arena(m, b, true)
		}
		if eval[i] {
			m, err := nn.NetBytes(build, p, b, false, false)
			if err != nil {
				return e, err
			}
			e.Eval += m.Own
			arena(m, b, false)
		}
	}
	return e, nil
}

// UsedNets returns the buckets at batch size bs (Buckets: the training buckets, then those
// fitted to the evaluation batches, which the training batches never use), which of them the
// run's training and evaluation batches use (usedBuckets), and throwaway parameters to build
// their nets on.
func (r *Run) UsedNets(bs int) (buckets []nn.Bucket, train, eval []bool, p *nn.Params, err error) {
	c := r.Train
	trainB, evalB, err := r.Buckets(bs)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	buckets = slices.Concat(trainB, evalB)
	tr, va, te := r.Sizes[0], r.Sizes[1], r.Sizes[2]
	train, eval, err = usedBuckets(buckets, len(trainB), bs, tr, [][]prep.GraphSize{va, te, tr}, min(c.MaxEpochs, simEpochs), r.Seed)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("memory estimate: %w", err)
	}
	p, err = nn.NewParams(tensor.Float32, uint64(r.Seed))
	return buckets, train, eval, p, err
}

// Buckets returns the run's buckets at batch size bs (docs/design.md §Invariants
// (static-graphs)): train.buckets of them for training, proposed from every graph of the
// splits (nn.MakeBucketsFor), and up to nn.EvalFit more for evaluation, fitted to the batches
// that cutting each split in its order makes (nn.FitEvalBuckets). The trainer and the memory
// estimate both take them from here.
func (r *Run) Buckets(bs int) (train, eval []nn.Bucket, err error) {
	var ns, es []int // every graph's counts, split after split
	var batches []nn.Bucket
	for _, split := range r.Sizes {
		lo := len(ns)
		for _, g := range split {
			ns, es = append(ns, g.N), append(es, g.E)
		}
		batches = append(batches, nn.SplitBatches(ns[lo:], es[lo:], bs)...)
	}
	// (MakeBucketsFor sorts ns and es, so the batches are cut first.)
	if train, err = nn.MakeBucketsFor(ns, es, bs, r.Train.Buckets); err != nil {
		return nil, nil, fmt.Errorf("memory estimate: %w", err)
	}
	if eval, err = nn.FitEvalBuckets(batches, train, bs, nn.EvalFit); err != nil {
		return nil, nil, fmt.Errorf("memory estimate: %w", err)
	}
	return train, eval, nil
}

// usedBuckets marks the buckets a run uses, of which the first nTrain are the training
// buckets: for training, those the batches of epochs random orders of train fall in (each
// epoch a fresh permutation cut into batches of bs, as the training loop does; a bucket is
// marked if any batch needs it) and, since the run draws its own orders, every training bucket
// up to the one of a batch of the largest training graphs; for evaluation those of the fixed
// batches of each split in evals, cut in order, among all the buckets (nn.Trainer.EvalBucket).
func usedBuckets(buckets []nn.Bucket, nTrain, bs int, train []prep.GraphSize, evals [][]prep.GraphSize, epochs int, seed int64) (tr, ev []bool, err error) {
	tr, ev = make([]bool, len(buckets)), make([]bool, len(buckets))
	trainB := buckets[:nTrain]
	mark := func(used []bool, among []nn.Bucket, gs []prep.GraphSize, order []int) error {
		for lo := 0; lo < len(order); lo += bs {
			n, m := 0, 0
			hi := min(lo+bs, len(order))
			for _, j := range order[lo:hi] {
				n += gs[j].N
				m += gs[j].E
			}
			i, err := nn.PickBucketFor(among, n, m, hi-lo)
			if err != nil {
				return err
			}
			used[i] = true
		}
		return nil
	}
	for _, gs := range evals {
		order := make([]int, len(gs))
		for i := range order {
			order[i] = i
		}
		if err := mark(ev, buckets, gs, order); err != nil {
			return nil, nil, err
		}
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6d656d))
	for range max(epochs, 1) {
		if err := mark(tr, trainB, train, rng.Perm(len(train))); err != nil {
			return nil, nil, err
		}
	}
	// A random order can put the largest graphs in one batch in any epoch: the bucket of that
	// batch, and every smaller one, may be needed whatever the simulation drew.
	order := make([]int, len(train))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return train[b].E - train[a].E })
	worst := make([]bool, len(buckets))
	if err := mark(worst, trainB, train, order[:min(bs, len(order))]); err != nil {
		return nil, nil, err
	}
	for i := len(buckets) - 1; i >= 0; i-- {
		if worst[i] {
			for j := 0; j <= i; j++ {
				tr[j] = true
			}
			break
		}
	}
	return tr, ev, nil
}
