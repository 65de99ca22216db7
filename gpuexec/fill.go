package gpuexec

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/rewiregnn/rewiregnn/prog"
)

// fillChunk is the most elements one piece of work of fillImage covers: a CIFAR10-sized batch
// at r = 4 (about 7.4 million elements) makes about 110 pieces, a ZINC batch one.
const fillChunk = 1 << 16

// fillPart is a piece of fillImage's work: elements [lo, hi) of one region of the image.
type fillPart struct {
	r      *region
	lo, hi int
	ix     *prog.IndexInput // regIndex: the index, and its rows
	rows   int
	idx    []int32   // regIndex
	w      []float64 // regWeights
	keep   []bool    // regMask
	xs     []float32 // regInput
}

// fillImage writes the feed into an input buffer's host image (stageF: the same memory as
// float32): every index (its entries checked, as the CPU ops check them), weight, mask and
// dense input. The sizes are checked first; then the copies run in pieces of fillChunk
// elements on up to GOMAXPROCS goroutines (a batch's host work overlaps the device's step, and
// is the larger on large graphs). The image is the same whatever the split; a bad entry is
// reported as the first piece in image order finds it.
func (pr *Program) fillImage(stage []int32, stageF []float32) error {
	parts, err := pr.fillParts()
	if err != nil {
		return err
	}
	errs := make([]error, len(parts))
	do := func(i int) {
		p := &parts[i]
		dst := stage[p.r.off+p.lo : p.r.off+p.hi]
		switch p.r.kind {
		case regIndex:
			if err := p.ix.CheckEntries(p.idx[p.lo:p.hi], p.lo, p.rows); err != nil {
				errs[i] = fmt.Errorf("gpu: %w", err)
				return
			}
			copy(dst, p.idx[p.lo:p.hi])
		case regWeights:
			f := stageF[p.r.off+p.lo : p.r.off+p.hi]
			for j, x := range p.w[p.lo:p.hi] {
				f[j] = float32(x)
			}
		case regMask:
			for j, k := range p.keep[p.lo:p.hi] {
				dst[j] = 0
				if k {
					dst[j] = 1
				}
			}
		case regInput:
			copy(stageF[p.r.off+p.lo:p.r.off+p.hi], p.xs[p.lo:p.hi])
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(parts))
	if workers <= 1 {
		for i := range parts {
			do(i)
		}
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1) - 1); i < len(parts); i = int(next.Add(1) - 1) {
					do(i)
				}
			}()
		}
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// fillParts checks the sizes of the feed's values against the regions and splits the regions
// into pieces of at most fillChunk elements.
func (pr *Program) fillParts() ([]fillPart, error) {
	pl := pr.Plan
	var parts []fillPart
	for k := range pr.regions {
		r := &pr.regions[k]
		p := fillPart{r: r}
		n := 0
		switch r.kind {
		case regIndex:
			p.ix, p.rows = &pl.Prog.Indexes[r.i], pl.IndexRows[r.i]
			idx, w := pr.Feed.Index(r.i)
			if err := p.ix.CheckSizes(idx, w); err != nil {
				return nil, fmt.Errorf("gpu: %w", err)
			}
			p.idx, n = idx, len(idx)
		case regWeights:
			_, p.w = pr.Feed.Index(r.i)
			n = len(p.w)
		case regMask:
			p.keep = pr.Feed.Mask(r.i)
			if len(p.keep) != r.n {
				return nil, fmt.Errorf("gpu: mask %q: %d rows, want %d", pl.Prog.Masks[r.i].Name, len(p.keep), r.n)
			}
			n = r.n
		case regInput:
			v := &pl.Vals[r.i]
			xs, ok := pr.Feed.Input(r.i).([]float32)
			if !ok || len(xs) != v.Elems {
				return nil, fmt.Errorf("gpu: input %s: want %d float32 values", v.Name, v.Elems)
			}
			p.xs, n = xs, r.n
		}
		for lo := 0; lo < n; lo += fillChunk {
			q := p
			q.lo, q.hi = lo, min(lo+fillChunk, n)
			parts = append(parts, q)
		}
	}
	return parts, nil
}
