package nn

import (
	"runtime"
	"sync"
)

// sgemmNN sets C [m, n] = A [m, k] · B [k, n] (row-major, leading dimensions lda, ldb, ldc).
// On amd64 with AVX2 and FMA, blocks of 4 rows × 16 columns go through the assembly
// micro-kernel, with k split into chunks that keep B's rows in cache; the remaining rows and
// columns are plain Go. Row blocks are shared between GOMAXPROCS workers. It reports false,
// doing nothing, where the kernel is unavailable.
func sgemmNN(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) bool {
	if !haveKernel {
		return false
	}
	for i := 0; i < m; i++ {
		clear(c[i*ldc : i*ldc+n])
	}
	blocks := m / 4
	workers := max(1, min(runtime.GOMAXPROCS(0), blocks/4))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := blocks*w/workers, blocks*(w+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			sgemmRows(lo*4, hi*4, n, k, a, lda, b, ldb, c, ldc)
		}()
	}
	wg.Wait()
	if rest := blocks * 4; rest < m {
		sgemmRef(rest, m, 0, n, 0, k, a, lda, b, ldb, c, ldc)
	}
	return true
}

// sgemmRows adds A[r0:r1, :]·B to C[r0:r1, :] for r1 − r0 a multiple of 4.
func sgemmRows(r0, r1, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	const kc = 256
	n16 := n / 16 * 16
	for k0 := 0; k0 < k; k0 += kc {
		kl := min(kc, k-k0)
		for i := r0; i < r1; i += 4 {
			for j := 0; j < n16; j += 16 {
				kern4x16(a[i*lda+k0:], lda, b[k0*ldb+j:], ldb, c[i*ldc+j:], ldc, kl)
			}
		}
		if n16 < n {
			sgemmRef(r0, r1, n16, n, k0, k0+kl, a, lda, b, ldb, c, ldc)
		}
	}
}

// sgemmRef adds A[r0:r1, k0:k1]·B[k0:k1, j0:j1] to C[r0:r1, j0:j1] in plain Go.
func sgemmRef(r0, r1, j0, j1, k0, k1 int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	for i := r0; i < r1; i++ {
		cr := c[i*ldc+j0 : i*ldc+j1]
		for p := k0; p < k1; p++ {
			av := a[i*lda+p]
			br := b[p*ldb+j0 : p*ldb+j1]
			for j := range cr {
				cr[j] += av * br[j]
			}
		}
	}
}
