package train

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/rewiregnn/rewiregnn/data"
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
// room (MemEstimate.Need) as the Go runtime's soft memory limit: with GOGC=100 alone the heap of
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
	// gcRoom is the room left to the garbage collector above the live estimate: the soft memory
	// limit is the estimate plus this share, so the GC collects when garbage fills it instead of
	// letting the heap double. Were the estimate short by more than this, the GC would run
	// often (the runtime caps it at half the CPU) but the run would not fail.
	gcRoom = 0.25
	// simEpochs caps the epochs of random batch order simulated to find the training buckets
	// a run uses.
	simEpochs = 1000
)

// startLimit is the Go memory limit the process started with (GOMEMLIMIT, or none): each run
// sets its own below it, never inheriting an earlier run's (cmd/train runs seeds in turn).
var startLimit = debug.SetMemoryLimit(-1)

// MemEstimate is the estimated live memory of a CPU run, by part, in bytes.
type MemEstimate struct {
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
	TrainBuckets int // how many of the buckets the training batches use
	Buckets      int
	Largest      int64 // the largest bucket's training net
}

// Total is the estimated live memory.
func (e MemEstimate) Total() int64 {
	return e.Data + e.Batches + e.Params + e.Train + e.Eval + e.Arena + e.Runtime
}

// Need is Total with the garbage collector's room: what the budget must hold.
func (e MemEstimate) Need() int64 { return int64(float64(e.Total()) * (1 + gcRoom)) }

// Parts lists the parts, largest first.
func (e MemEstimate) Parts() string {
	f := memlimit.Format
	return fmt.Sprintf("activations %s (shared by the nets; the largest training net %s in all), training nets %s (%d of %d buckets), evaluation nets %s, graphs %s, batches %s, parameters %s, runtime %s",
		f(e.Arena), f(e.Largest), f(e.Train), e.TrainBuckets, e.Buckets, f(e.Eval), f(e.Data), f(e.Batches), f(e.Params), f(e.Runtime))
}

// MemoryError is returned when the estimate does not fit the budget.
type MemoryError struct {
	Est    MemEstimate
	Limit  memlimit.Limit
	Fits   int         // the largest batch size that fits (0: none)
	FitEst MemEstimate // its estimate
	// Parallel is the number of runs that share the budget (train -parallel; 0: one), and
	// ParallelFits how many of them would fit at this batch size (0: none).
	Parallel, ParallelFits int
}

func (e *MemoryError) Error() string {
	f := memlimit.Format
	var b strings.Builder
	fmt.Fprintf(&b, "memory: this run needs about %s (%s live + %.0f%% for the garbage collector) but %s is available (%s)\n",
		f(e.Est.Need()), f(e.Est.Total()), 100*gcRoom, f(e.Limit.Bytes), e.Limit.Source)
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

// checkMemory estimates the run's memory at its batch size and stops it if the estimate with the
// garbage collector's room does not fit the budget (Options.Memory, or what memlimit.Available
// finds); a run that fits gets that as the Go runtime's soft memory limit (unless GOMEMLIMIT is
// lower). Only CPU runs are checked: on a GPU the activations live on the device.
func (r *run) checkMemory(build nn.BuildFunc) error {
	debug.SetMemoryLimit(startLimit)
	if !r.guarded() {
		return nil
	}
	limit := memlimit.Limit{Bytes: r.o.Memory, Source: cmp.Or(r.o.MemorySource, "-memory")}
	if limit.Bytes <= 0 {
		var err error
		if limit, err = memlimit.Available(); err != nil {
			return fmt.Errorf("memory guard: %w (set the budget with -memory SIZE, or skip the check with -no-memory-guard)", err)
		}
	}
	k := int64(max(r.o.Parallel, 1))
	whole := limit
	if k > 1 {
		limit = memlimit.Limit{Bytes: whole.Bytes / k, Source: fmt.Sprintf("1/%d of %s, %s, for -parallel %d", k, memlimit.Format(whole.Bytes), whole.Source, k)}
	}
	est, err := r.estimateMemory(build, r.cfg.Train.BatchSize, r.cfg.Model.Recompute)
	if err != nil {
		return err
	}
	r.est = &est
	if est.Need() > limit.Bytes {
		err := r.refuse(build, est, limit)
		if me, ok := err.(*MemoryError); ok && k > 1 {
			me.Parallel, me.ParallelFits = int(k), int(whole.Bytes/est.Need())
		}
		return err
	}
	// The Go memory limit is the process's: with -parallel K it holds the K runs (of one
	// config, so of about the same need).
	soft := min(k*est.Need(), whole.Bytes, startLimit)
	debug.SetMemoryLimit(soft)
	fmt.Fprintf(r.log, "memory: about %s live, Go memory limit %s, of %s available (%s); %s\n",
		memlimit.Format(est.Total()), memlimit.Format(soft), memlimit.Format(limit.Bytes), limit.Source, est.Parts())
	return nil
}

// guarded says whether the memory guard checks the run: a CPU run without -no-memory-guard (on
// a GPU the activations live on the device).
func (r *run) guarded() bool { return !r.o.NoMemoryGuard && r.choice.Backend == nil }

// refuse returns the MemoryError for est, with the largest batch size that fits.
func (r *run) refuse(build nn.BuildFunc, est MemEstimate, limit memlimit.Limit) error {
	e := &MemoryError{Est: est, Limit: limit}
	ests := map[int]MemEstimate{est.BatchSize: est}
	at := func(bs int) (int64, error) {
		m, ok := ests[bs]
		if !ok {
			var err error
			if m, err = r.estimateMemory(build, bs, r.cfg.Model.Recompute); err != nil {
				return 0, err
			}
			ests[bs] = m
		}
		return m.Need(), nil
	}
	fits, err := largestFit(at, est.BatchSize, est.Need(), limit.Bytes)
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

// largestFit returns the largest batch size up to hi whose need (growing with the batch size)
// is at most limit, 0 if none, given top, the need at hi: hi itself if it fits, else a line
// through the needs at hi and half of it gives a first guess, then a bisection over the needs
// themselves settles it.
func largestFit(need func(bs int) (int64, error), hi int, top, limit int64) (int, error) {
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

// estimateMemory estimates the run's live memory at batch size bs from the sizes of its graphs
// (r.sizes) and the nets of the buckets bs gives, built on throwaway parameters without running
// them.
func (r *run) estimateMemory(build nn.BuildFunc, bs int, recompute bool) (MemEstimate, error) {
	e := MemEstimate{BatchSize: bs, Params: int64(r.params) * paramBytes, Runtime: runtimeBytes}
	nodes := 0
	for _, split := range r.sizes {
		for _, g := range split {
			e.Data += g.Bytes
			nodes += g.N
		}
	}
	// The evaluation batches copy their graphs into unions: val and test for the whole run,
	// the training split's at the end (while everything else is still held).
	e.Batches = e.Data + 4*int64(nodes)
	buckets, train, eval, p, err := r.usedNets(bs)
	if err != nil {
		return e, err
	}
	e.Buckets = len(buckets)
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

// usedNets returns the buckets at batch size bs, which of them the run's training and evaluation
// batches use (usedBuckets), and throwaway parameters to build their nets on.
func (r *run) usedNets(bs int) (buckets []nn.Bucket, train, eval []bool, p *nn.Params, err error) {
	c := r.cfg.Train
	var ns, es []int
	for _, split := range r.sizes {
		for _, g := range split {
			ns, es = append(ns, g.N), append(es, g.E)
		}
	}
	if buckets, err = nn.MakeBucketsFor(ns, es, bs, c.Buckets); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("memory estimate: %w", err)
	}
	tr, va, te := r.sizes[0], r.sizes[1], r.sizes[2]
	train, eval, err = usedBuckets(buckets, bs, tr, [][]prep.GraphSize{va, te, tr}, min(c.MaxEpochs, simEpochs), r.o.Seed)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("memory estimate: %w", err)
	}
	p, err = nn.NewParams(tensor.Float32, uint64(r.o.Seed))
	return buckets, train, eval, p, err
}

// usedBuckets marks the buckets a run uses: for training, those the batches of epochs random
// orders of train fall in (each epoch a fresh permutation cut into batches of bs, as the
// training loop does; a bucket is marked if any batch needs it) and, since the run draws its own
// orders, every bucket up to the one of a batch of the largest training graphs; for evaluation
// those of the fixed batches of each split in evals, cut in order.
func usedBuckets(buckets []nn.Bucket, bs int, train []prep.GraphSize, evals [][]prep.GraphSize, epochs int, seed int64) (tr, ev []bool, err error) {
	tr, ev = make([]bool, len(buckets)), make([]bool, len(buckets))
	mark := func(used []bool, gs []prep.GraphSize, order []int) error {
		for lo := 0; lo < len(order); lo += bs {
			n, m := 0, 0
			hi := min(lo+bs, len(order))
			for _, j := range order[lo:hi] {
				n += gs[j].N
				m += gs[j].E
			}
			i, err := nn.PickBucketFor(buckets, n, m, hi-lo)
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
		if err := mark(ev, gs, order); err != nil {
			return nil, nil, err
		}
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6d656d))
	for range max(epochs, 1) {
		if err := mark(tr, train, rng.Perm(len(train))); err != nil {
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
	if err := mark(worst, train, order[:min(bs, len(order))]); err != nil {
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

// sizesOf is the sizes of gs.
func sizesOf(gs []*data.Graph) []prep.GraphSize {
	out := make([]prep.GraphSize, len(gs))
	for i, g := range gs {
		out[i] = prep.SizeOf(g)
	}
	return out
}
