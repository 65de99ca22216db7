package train

import (
	"cmp"
	"fmt"
	"runtime/debug"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/memlimit"
	"github.com/rewiregnn/rewiregnn/memplan"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/prep"
)

// The memory guard (docs/design.md §"Memory"): before the trainer is built, a CPU run's memory is
// estimated (memplan.Run.Estimate); a run that would not fit stops at once with the estimate,
// the limit and the largest batch size that fits, and one that fits gets the estimate with the
// garbage collector's room as the Go runtime's soft memory limit.

// startLimit is the Go memory limit the process started with (GOMEMLIMIT, or none): each run
// sets its own below it, never inheriting an earlier run's (cmd/train runs seeds in turn).
var startLimit = debug.SetMemoryLimit(-1)

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
	est, err := r.mem().Estimate(build, r.cfg.Train.BatchSize, r.cfg.Model.Recompute)
	if err != nil {
		return err
	}
	r.est = &est
	if est.Need() > limit.Bytes {
		err := r.mem().Refuse(build, est, limit, r.cfg.Model.Recompute)
		if me, ok := err.(*memplan.MemoryError); ok && k > 1 {
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

// mem is what the run's memory is estimated from (memplan.Run).
func (r *run) mem() *memplan.Run {
	return &memplan.Run{Params: r.params, Sizes: r.sizes, Train: r.cfg.Train, Seed: r.o.Seed}
}

// guarded says whether the memory guard checks the run: a CPU run without -no-memory-guard (on
// a GPU the activations live on the device).
func (r *run) guarded() bool { return !r.o.NoMemoryGuard && r.choice.Backend == nil }

// sizesOf is the sizes of gs.
func sizesOf(gs []*data.Graph) []prep.GraphSize {
	out := make([]prep.GraphSize, len(gs))
	for i, g := range gs {
		out[i] = prep.SizeOf(g)
	}
	return out
}
