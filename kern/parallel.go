package kern

import (
	"runtime"
	"sync/atomic"
)

// The kernels split their work into chunks that up to GOMAXPROCS goroutines take, one at a
// time, from a shared counter; the calling goroutine is one of them. On a busy machine, where a
// goroutine's thread may wait long for a core, the others simply take more chunks, and a call
// waits only for chunks that are under way, never for a goroutine that has not started.

// parallelFor runs f(w, c) for every chunk c in [0, n), where w < workers identifies the
// goroutine (0 is the caller), and returns when all have run.
func parallelFor(n, workers int, f func(w, c int)) {
	workers = min(workers, n, runtime.GOMAXPROCS(0))
	if workers < 2 {
		for c := 0; c < n; c++ {
			f(0, c)
		}
		return
	}
	j := &job{n: int64(n), f: f, done: make(chan struct{})}
	for w := 1; w < workers; w++ {
		go j.run(w)
	}
	j.run(0)
	if j.finished.Load() < j.n {
		<-j.done
	}
}

type job struct {
	next, finished atomic.Int64
	n              int64
	f              func(w, c int)
	done           chan struct{} // closed when the last chunk finishes
}

func (j *job) run(w int) {
	for {
		c := j.next.Add(1) - 1
		if c >= j.n {
			return
		}
		j.f(w, int(c))
		if j.finished.Add(1) == j.n {
			close(j.done)
		}
	}
}

// ParallelRange runs f over [0, n) in contiguous pieces, each item costing about unit; small
// problems run on the calling goroutine.
func ParallelRange(n, unit int, f func(lo, hi int)) {
	ParallelRangeW(n, unit, func(_, lo, hi int) { f(lo, hi) })
}

// ParallelRangeW is ParallelRange that also passes the worker running each range: w <
// Workers(), and no two ranges run at once on one w, so a kernel can keep per-worker scratch.
func ParallelRangeW(n, unit int, f func(w, lo, hi int)) {
	const grain = 1 << 15 // units per piece
	if n*unit < 2*grain || runtime.GOMAXPROCS(0) < 2 {
		f(0, 0, n)
		return
	}
	per := max(1, grain/max(unit, 1))
	parallelFor((n+per-1)/per, runtime.GOMAXPROCS(0), func(w, c int) { f(w, c*per, min((c+1)*per, n)) })
}

// Workers is the number of workers ParallelRangeW may use.
func Workers() int { return max(1, runtime.GOMAXPROCS(0)) }

// ParallelCols runs a row-wise kernel over rows rows on column ranges [c0, c1) of [0, d), one
// range per goroutine (each column range is independent, so no two write the same value).
// Small problems run on the calling goroutine.
func ParallelCols(d, rows int, f func(c0, c1 int)) {
	pieces := min(runtime.GOMAXPROCS(0), d)
	if pieces < 2 || rows*d < 1<<14 {
		f(0, d)
		return
	}
	parallelFor(pieces, pieces, func(_, c int) { f(d*c/pieces, d*(c+1)/pieces) })
}

// Reductions over a long dimension (the rows summed by xᵀ·g and by a bias gradient) are split
// into partial sums fixed by the data's shape, never by the number of goroutines: the chunks of
// rows are grouped into Parts(chunks) parts of contiguous chunks (PartChunks), each summed in
// row order into its own buffer by whichever goroutine takes it, and the parts are then added in
// index order. The result is the same bits for any GOMAXPROCS and any scheduling.

// maxParts bounds the number of partial sums of one reduction (their buffers and the cost of
// adding them up), and so the goroutines that can work on it.
const maxParts = 16

// Parts is the number of partial sums of a reduction over chunks chunks (one if there are none,
// so that an empty sum is a cleared buffer).
func Parts(chunks int) int { return max(1, min(chunks, maxParts)) }

// PartChunks is the range of chunks [lo, hi) that part p of parts sums.
func PartChunks(p, parts, chunks int) (lo, hi int) {
	return p * chunks / parts, (p + 1) * chunks / parts
}

// ParallelChunks runs f(c) for every c in [0, n).
func ParallelChunks(n int, f func(c int)) {
	parallelFor(n, runtime.GOMAXPROCS(0), func(_, c int) { f(c) })
}
