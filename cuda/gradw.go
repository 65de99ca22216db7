package cuda

// The weight gradients of narrow products, dw = xᵀ·g with dw at most wgMax × wgMax, run on
// gemm.cu's kernels instead of cuBLAS: on a GPU cuBLAS gives such a small output over thousands
// of rows to a few blocks (an H200 took 24 µs for one 70 × 3058 · 3058 × 70 product and 104 µs
// for four batched, 2026-11-27). The kernels split the rows into chunks, one block each, and
// combine the chunks' partials in fixed order in the last block to arrive, like the column
// reductions (kernels.go).

import "fmt"

const (
	wgMax          = 128 // RW_WG_MAX: the widest a and b
	wgMinChunkRows = 128 // the fewest rows a chunk gets
	wgMaxChunks    = 128 // the most chunks of one product (its last block adds them in turn)
)

// narrowGradW reports whether the weight gradient of an [m, a]·[a, b] product runs on
// gemm.cu's kernels.
func narrowGradW(m, a, b int) bool { return m > 0 && a > 0 && b > 0 && a <= wgMax && b <= wgMax }

// gradWGeometry splits m rows into chunks of rpc rows each (the last may be shorter; none is
// empty): one chunk below 2·wgMinChunkRows rows, at most wgMaxChunks.
func gradWGeometry(m int) (chunks, rpc int) {
	chunks = min(max(m/wgMinChunkRows, 1), wgMaxChunks)
	rpc = (m + chunks - 1) / chunks
	return (m + rpc - 1) / rpc, rpc
}

// gradWPrepLocked returns the grid of n products' weight gradients over m rows, the rows per
// chunk, and with several chunks their partials (n·chunks·a·b floats) and arrival counters.
// free releases the partials once the kernel is queued. The caller holds the device.
func (k *Kernels) gradWPrepLocked(n, m, a, b int) (grid dim3, rpc int, part, count DevPtr, free func(), err error) {
	chunks, rpc := gradWGeometry(m)
	grid, free = dim3{uint32(n), uint32(chunks), 1}, func() {}
	if chunks == 1 {
		return grid, rpc, 0, 0, free, nil
	}
	if count, err = k.colCounters(n); err != nil {
		return grid, rpc, 0, 0, free, err
	}
	if part, free, err = k.scratch(n * chunks * a * b); err != nil {
		return grid, rpc, 0, 0, free, fmt.Errorf("cuda: partials of %d weight gradients (%d chunks × %d × %d): %w", n, chunks, a, b, err)
	}
	return grid, rpc, part, count, free, nil
}

// gradWLocked launches matmul_gradw: dw [a, b] = xᵀ·g. The caller holds the device.
func (k *Kernels) gradWLocked(dw, x, g DevPtr, m, a, b int) error {
	grid, rpc, part, count, free, err := k.gradWPrepLocked(1, m, a, b)
	if err != nil {
		return err
	}
	defer free()
	return k.launch("matmul_gradw", grid, blockWG, aP(dw), aP(x), aP(g), aP(part), aP(count), aI(m), aI(a), aI(b), aI(rpc))
}

// gradWBatchLocked launches matmul_gradw_batch for the n triples at entry off of t (x_0 …,
// g_0 …, dw_0 …; MatMulGradWBatch). The caller holds the device.
func (k *Kernels) gradWBatchLocked(t *PtrTable, off, n, m, a, b int) error {
	grid, rpc, part, count, free, err := k.gradWPrepLocked(n, m, a, b)
	if err != nil {
		return err
	}
	defer free()
	return k.launch("matmul_gradw_batch", grid, blockWG, aP(t.at(off+2*n)), aP(t.at(off)), aP(t.at(off+n)), aP(part), aP(count), aI(m), aI(a), aI(b), aI(rpc))
}

// blockWG is gemm.cu's block: 16 × 16 threads.
var blockWG = dim3{16, 16, 1}
