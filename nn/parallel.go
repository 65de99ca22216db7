package nn

import (
	"runtime"
	"sync"
)

// parallelCols splits the columns [0, d) of a row-wise kernel over rows rows between
// GOMAXPROCS goroutines (each column range is independent, so no two workers write the same
// value). Small problems run on the calling goroutine.
func parallelCols(d, rows int, f func(c0, c1 int)) {
	workers := min(runtime.GOMAXPROCS(0), d)
	if workers < 2 || rows*d < 1<<14 {
		f(0, d)
		return
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		c0, c1 := d*w/workers, d*(w+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(c0, c1)
		}()
	}
	wg.Wait()
}

// parallelRange splits [0, n) into GOMAXPROCS contiguous chunks run concurrently, each item
// costing about unit; small problems run on the calling goroutine.
func parallelRange(n, unit int, f func(lo, hi int)) {
	workers := runtime.GOMAXPROCS(0)
	if workers < 2 || n*unit < 1<<15 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := n*w/workers, n*(w+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	wg.Wait()
}

// parallelChunks runs f(c) for every c in [0, n), the chunks striped over GOMAXPROCS goroutines
// (one of them the caller's).
func parallelChunks(n int, f func(c int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers < 2 {
		for c := 0; c < n; c++ {
			f(c)
		}
		return
	}
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := w; c < n; c += workers {
				f(c)
			}
		}()
	}
	for c := 0; c < n; c += workers {
		f(c)
	}
	wg.Wait()
}
