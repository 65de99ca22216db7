package nn

import (
	"runtime"
	"sync"
)

// mr × nr is the block of C the micro-kernel computes.
const mr, nr = 6, 16

// blockAt returns where block b of a dimension of size n (≥ size) starts, and how many of its
// leading rows (or columns) an earlier block already covers: blocks start at multiples of size,
// except that the last one, when n is not a multiple, is moved back to end at n.
func blockAt(b, size, n int) (start, skip int) {
	start = min(b*size, n-size)
	return start, b*size - start
}

// sgemmNN sets C [m, n] = A [m, k] · B [k, n] (row-major, leading dimensions lda, ldb, ldc) on
// the AVX2/FMA micro-kernel: blocks of mr × nr, the last block of each dimension overlapping
// the one before (computed into a scratch block of which only the new part is copied), row
// blocks shared between GOMAXPROCS workers. It reports false, doing nothing, where the kernel is
// unavailable or the matrix is smaller than one block.
func sgemmNN(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) bool {
	if !haveKernel || m < mr || n < nr || k == 0 {
		return false
	}
	nbi, nbj := (m+mr-1)/mr, (n+nr-1)/nr
	parallelBlocks(nbi, 8, func(lo, hi int) {
		var tmp [mr * nr]float32
		for bi := lo; bi < hi; bi++ {
			i, di := blockAt(bi, mr, m)
			for bj := 0; bj < nbj; bj++ {
				j, dj := blockAt(bj, nr, n)
				if di == 0 && dj == 0 {
					kern6x16(a[i*lda:], lda, 1, b[j:], ldb, c[i*ldc+j:], ldc, k, 0)
					continue
				}
				kern6x16(a[i*lda:], lda, 1, b[j:], ldb, tmp[:], nr, k, 0)
				for r := di; r < mr; r++ {
					copy(c[(i+r)*ldc+j+dj:(i+r)*ldc+j+nr], tmp[r*nr+dj:(r+1)*nr])
				}
			}
		}
	})
	return true
}

// tnChunk is how many rows of X and G one pass over the blocks of C reads (they stay in cache).
const tnChunk = 128

// tnBuffers are sgemmTN's reusable buffers: the workers' partial results and a padded copy of a
// narrow X.
type tnBuffers struct {
	parts [][]float32
	pad   []float32
}

// sgemmTN sets C [m, n] = Xᵀ · G for X [k, m] and G [k, n] (row-major, leading dimensions ldx,
// ldg, ldc) without transposing X: the kernel reads X with unit row and ldx column strides. The
// long dimension k is split between GOMAXPROCS workers, each summing its rows into a private
// copy of C's blocks, which are added at the end. It reports false, doing nothing, where the
// kernel is unavailable or n < nr.
func sgemmTN(m, n, k int, x []float32, ldx int, g []float32, ldg int, c []float32, ldc int, sc *tnBuffers) bool {
	if !haveKernel || m < 1 || n < nr {
		return false
	}
	if m < mr {
		// Fewer than mr columns of X (a narrow input): run on a copy padded with zero columns.
		pad := grow[float32](sc.pad, k*mr+mr*n)
		sc.pad = pad
		xp, cp := pad[:k*mr], pad[k*mr:]
		for p := 0; p < k; p++ {
			copy(xp[p*mr:p*mr+m], x[p*ldx:p*ldx+m])
			clear(xp[p*mr+m : (p+1)*mr])
		}
		sgemmTN(mr, n, k, xp, mr, g, ldg, cp, n, sc)
		for i := 0; i < m; i++ {
			copy(c[i*ldc:i*ldc+n], cp[i*n:(i+1)*n])
		}
		return true
	}
	nbi, nbj := (m+mr-1)/mr, (n+nr-1)/nr
	ldw := nbj * nr
	size := nbi * mr * ldw
	workers := max(1, min(runtime.GOMAXPROCS(0), k/(4*tnChunk)))
	for len(sc.parts) < workers {
		sc.parts = append(sc.parts, nil)
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		if len(sc.parts[w]) < size {
			sc.parts[w] = make([]float32, size)
		}
		acc := sc.parts[w][:size]
		p0, p1 := k*w/workers, k*(w+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			clear(acc)
			for q := p0; q < p1; q += tnChunk {
				kl := min(tnChunk, p1-q)
				for bj := 0; bj < nbj; bj++ {
					j, _ := blockAt(bj, nr, n)
					for bi := 0; bi < nbi; bi++ {
						i, _ := blockAt(bi, mr, m)
						kern6x16(x[q*ldx+i:], 1, ldx, g[q*ldg+j:], ldg, acc[bi*mr*ldw+bj*nr:], ldw, kl, 1)
					}
				}
			}
		}()
	}
	wg.Wait()
	for bi := 0; bi < nbi; bi++ {
		i, di := blockAt(bi, mr, m)
		for bj := 0; bj < nbj; bj++ {
			j, dj := blockAt(bj, nr, n)
			for r := di; r < mr; r++ {
				cr := c[(i+r)*ldc+j+dj : (i+r)*ldc+j+nr]
				off := (bi*mr+r)*ldw + bj*nr + dj
				copy(cr, sc.parts[0][off:off+len(cr)])
				for w := 1; w < workers; w++ {
					for t, v := range sc.parts[w][off : off+len(cr)] {
						cr[t] += v
					}
				}
			}
		}
	}
	return true
}

// parallelBlocks splits [0, n) into contiguous ranges of at least minPer items between up to
// GOMAXPROCS goroutines; one range runs on the calling goroutine.
func parallelBlocks(n, minPer int, f func(lo, hi int)) {
	workers := max(1, min(runtime.GOMAXPROCS(0), n/max(minPer, 1)))
	if workers == 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		lo, hi := n*w/workers, n*(w+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	f(0, n/workers)
	wg.Wait()
}
