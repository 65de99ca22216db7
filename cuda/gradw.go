package cuda

// The weight gradients of narrow products, dw = xᵀ·g with dw at most wgMax × wgMax, on
// gemm.cu's kernels instead of cuBLAS, where gpuopt.Options.NarrowGradW is on (gpu.narrow_gradw; they compute in float32, fmaf,
// whatever the math mode, so under train.precision tf32 these gradients are float32's): on a GPU cuBLAS gives such a
// small output over thousands of rows to a few blocks (an H200 took 24 µs for one
// 70 × 3058 · 3058 × 70 product and 104 µs for four batched, 2026-11-27). The rows are split into
// chunks, one block each, which write their partials; a second launch adds each output's
// partials in chunk order (one thread per output, its loads independent of each other). Off by
// default until a GPU shows it pays: the first version (3a240f6), which merged in the last
// block to arrive, was slower than cuBLAS and was reverted.

import "fmt"

const (
	wgMax          = 128 // RW_WG_MAX: the widest a and b
	wgMinChunkRows = 64  // the fewest rows a chunk gets
)

// wgMaxChunks is the most chunks of one product (a variable so that a test can reach the cap
// with few rows).
var wgMaxChunks = 512

// NarrowGradW reports whether the narrow products' weight gradients run on gemm.cu's kernels
// (gpuopt.Options.NarrowGradW of the device's OpenWith).
func (k *Kernels) NarrowGradW() bool { return k.narrowGW }

// narrowGradW reports whether the weight gradient of an [m, a]·[a, b] product runs on
// gemm.cu's kernels.
func (k *Kernels) narrowGradW(m, a, b int) bool {
	return k.narrowGW && m > 0 && a > 0 && b > 0 && a <= wgMax && b <= wgMax
}

// gradWGeometry splits m rows into chunks of rpc rows each (the last may be shorter; none is
// empty): one chunk below 2·wgMinChunkRows rows, at most wgMaxChunks.
func gradWGeometry(m int) (chunks, rpc int) {
	chunks = min(max(m/wgMinChunkRows, 1), wgMaxChunks)
	rpc = (m + chunks - 1) / chunks
	return (m + rpc - 1) / rpc, rpc
}

// gradWLocked queues the n weight gradients over m rows: first (grid n × chunks) writes them,
// with one chunk, or the chunks' partials, which merge (n products' dw, their partials and the
// number of chunks) then adds. The caller holds the device.
func (k *Kernels) gradWLocked(n, m, a, b int, first func(grid dim3, part DevPtr, rpc int) error, merge func(part DevPtr, chunks int) error) error {
	chunks, rpc := gradWGeometry(m)
	grid := dim3{uint32(n), uint32(chunks), 1}
	if chunks == 1 {
		return first(grid, 0, rpc)
	}
	part, free, err := k.scratch(n * chunks * a * b)
	if err != nil {
		return fmt.Errorf("cuda: partials of %d weight gradients (%d chunks × %d × %d): %w", n, chunks, a, b, err)
	}
	defer free()
	if err := first(grid, part, rpc); err != nil {
		return err
	}
	return merge(part, chunks)
}

// narrowGradWLocked queues matmul_gradw: dw [a, b] = xᵀ·g. The caller holds the device.
func (k *Kernels) narrowGradWLocked(dw, x, g DevPtr, m, a, b int) error {
	return k.gradWLocked(1, m, a, b, func(grid dim3, part DevPtr, rpc int) error {
		return k.launch("matmul_gradw", grid, blockWG, aP(dw), aP(part), aP(x), aP(g), aI(m), aI(a), aI(b), aI(rpc))
	}, func(part DevPtr, chunks int) error {
		return k.launch("matmul_gradw_merge", k.grid1(int64(a*b)), block1, aP(0), aP(dw), aP(part), aI(1), aI(chunks), aI(a*b))
	})
}

// narrowGradWBatchLocked queues matmul_gradw_batch for the n triples at entry off of t (x_0 …,
// g_0 …, dw_0 …; MatMulGradWBatch). The caller holds the device.
func (k *Kernels) narrowGradWBatchLocked(t *PtrTable, off, n, m, a, b int) error {
	dws := t.at(off + 2*n)
	return k.gradWLocked(n, m, a, b, func(grid dim3, part DevPtr, rpc int) error {
		return k.launch("matmul_gradw_batch", grid, blockWG, aP(dws), aP(t.at(off)), aP(t.at(off+n)), aP(part), aI(m), aI(a), aI(b), aI(rpc))
	}, func(part DevPtr, chunks int) error {
		return k.launch("matmul_gradw_merge", k.grid1(int64(n*a*b)), block1, aP(dws), aP(0), aP(part), aI(n), aI(chunks), aI(a*b))
	})
}

// blockWG is gemm.cu's block: 16 × 16 threads.
var blockWG = dim3{16, 16, 1}
