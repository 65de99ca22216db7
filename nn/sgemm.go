package nn

import (
	"runtime"
	"sync"
)

// sgemmNN sets C [m, n] = A [m, k] · B [k, n] (row-major, leading dimensions lda, ldb, ldc).
// On amd64 with AVX2 and FMA, blocks of 4 rows × 16 columns go through the assembly
// micro-kernel, with k split into chunks that keep B's rows in cache. Columns beyond the last
// multiple of 16 use a zero-padded copy of B's last columns, rows beyond the last multiple of 4 a
// zero-padded copy of A's last rows, so everything runs on the kernel. Row blocks are shared
// between GOMAXPROCS workers. It reports false, doing nothing, where the kernel is unavailable.
func sgemmNN(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) bool {
	if !haveKernel {
		return false
	}
	if m == 0 || n == 0 {
		return true
	}
	for i := 0; i < m; i++ {
		clear(c[i*ldc : i*ldc+n])
	}
	if k == 0 {
		return true
	}
	var bTail []float32 // B[:, n16:n] padded to 16 columns
	if n16 := n / 16 * 16; n16 < n {
		bTail = getScratch(k * 16)
		defer putScratch(bTail)
		for p := 0; p < k; p++ {
			row := bTail[p*16 : p*16+16]
			clear(row)
			copy(row, b[p*ldb+n16:p*ldb+n])
		}
	}
	blocks := m / 4
	workers := max(1, min(runtime.GOMAXPROCS(0), blocks/4))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := blocks*w/workers, blocks*(w+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			sgemmRows(lo*4, hi*4, n, k, a, lda, b, ldb, bTail, c, ldc)
		}()
	}
	wg.Wait()
	if r0 := blocks * 4; r0 < m {
		// The last m−r0 rows: pad A's rows to 4, compute into a 4-row C, copy back.
		aPad, cPad := getScratch(4*k), getScratch(4*n)
		defer putScratch(aPad)
		defer putScratch(cPad)
		clear(aPad)
		clear(cPad)
		for i := r0; i < m; i++ {
			copy(aPad[(i-r0)*k:(i-r0+1)*k], a[i*lda:i*lda+k])
		}
		sgemmRows(0, 4, n, k, aPad, k, b, ldb, bTail, cPad, n)
		for i := r0; i < m; i++ {
			copy(c[i*ldc:i*ldc+n], cPad[(i-r0)*n:(i-r0+1)*n])
		}
	}
	return true
}

// sgemmRows adds A[r0:r1, :]·B to C[r0:r1, :] for r1 − r0 a multiple of 4; bTail is B's last
// n mod 16 columns padded to 16 (nil when n is a multiple of 16).
func sgemmRows(r0, r1, n, k int, a []float32, lda int, b []float32, ldb int, bTail []float32, c []float32, ldc int) {
	const kc = 256
	n16 := n / 16 * 16
	var tmp [4 * 16]float32
	for k0 := 0; k0 < k; k0 += kc {
		kl := min(kc, k-k0)
		for i := r0; i < r1; i += 4 {
			for j := 0; j < n16; j += 16 {
				kern4x16(a[i*lda+k0:], lda, b[k0*ldb+j:], ldb, c[i*ldc+j:], ldc, kl)
			}
			if bTail != nil {
				clear(tmp[:])
				kern4x16(a[i*lda+k0:], lda, bTail[k0*16:], 16, tmp[:], 16, kl)
				for r := 0; r < 4; r++ {
					cr := c[(i+r)*ldc+n16 : (i+r)*ldc+n]
					for j := range cr {
						cr[j] += tmp[r*16+j]
					}
				}
			}
		}
	}
}

var scratchPool sync.Pool

// getScratch returns a float32 slice of length n from a pool (contents undefined).
func getScratch(n int) []float32 {
	if p, ok := scratchPool.Get().(*[]float32); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]float32, n)
}

func putScratch(s []float32) { scratchPool.Put(&s) }
