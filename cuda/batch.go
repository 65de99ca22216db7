package cuda

// Batched launches: several products (or column sums) of one shape in one launch, their
// operands' addresses read from a table in device memory. GatedGCN computes four products of
// the same node states per layer (A h, B h, D h, E h) and, backward, four weight gradients
// from them and four bias gradients; batched, each of those is one launch.

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"
)

// PtrTable is a table of device addresses in device memory: the operand lists that batched
// launches read. Set changes its host copy; Upload queues the copy to the device (not while a
// graph is being captured, so a caller fills the table before a capture). The launchers check
// the operands named in the host copy, as the other launchers check their buffers, and refuse
// a table changed since its last upload.
type PtrTable struct {
	dev   DevPtr
	host  []uint64
	dirty bool
}

// NewPtrTable allocates a table of n addresses, all 0.
func (k *Kernels) NewPtrTable(n int) (*PtrTable, error) {
	if n <= 0 {
		return nil, fmt.Errorf("cuda: a pointer table of %d entries", n)
	}
	p, err := k.d.Alloc(8 * n)
	if err != nil {
		return nil, fmt.Errorf("cuda: pointer table of %d entries: %w", n, err)
	}
	return &PtrTable{dev: p, host: make([]uint64, n), dirty: true}, nil
}

// Len is the number of entries.
func (t *PtrTable) Len() int { return len(t.host) }

// Set sets entry i to p.
func (t *PtrTable) Set(i int, p DevPtr) { t.SetWord(i, uint64(p)) }

// SetWord sets entry i to w, a number rather than an address (FillBatch's counts and values).
func (t *PtrTable) SetWord(i int, w uint64) {
	if t.host[i] != w {
		t.host[i], t.dirty = w, true
	}
}

// UploadTable queues the upload of t's host copy if it changed since the last one.
func (k *Kernels) UploadTable(t *PtrTable) error {
	if !t.dirty {
		return nil
	}
	words := unsafe.Slice((*uint32)(unsafe.Pointer(&t.host[0])), 2*len(t.host))
	if err := CopyToDevice(k.d, t.dev, words); err != nil {
		return fmt.Errorf("cuda: uploading a pointer table: %w", err)
	}
	t.dirty = false
	return nil
}

// FreeTable frees t's device memory.
func (k *Kernels) FreeTable(t *PtrTable) error {
	if t == nil || t.dev == 0 {
		return nil
	}
	err := k.d.Free(t.dev)
	t.dev = 0
	return err
}

// at is the device address of entry i.
func (t *PtrTable) at(i int) DevPtr { return t.dev + DevPtr(8*i) }

// lists checks that the table holds lists lists of n operands from entry off on, uploaded, and
// adds every operand to the launch check with the element count of its list.
func (t *PtrTable) lists(c *check, off, n int, names []string, elems []int) *check {
	if t == nil || t.dev == 0 {
		return c.cond(false, "no pointer table")
	}
	c.cond(!t.dirty, "the pointer table changed since its upload")
	if off < 0 || n < 0 || off+len(names)*n > len(t.host) {
		return c.cond(false, "%d lists of %d operands from entry %d of a pointer table of %d", len(names), n, off, len(t.host))
	}
	for l, name := range names {
		for i := range n {
			c.buf(fmt.Sprintf("%s[%d]", name, i), DevPtr(t.host[off+l*n+i]), elems[l])
		}
	}
	return c
}

// MatMulBatch writes out_i = x_i·w_i (row-major; x_i [m, a], w_i [a, b]) for the n triples at
// entry off of t: x_0 … x_{n−1}, then w_0 …, then out_0 …. One batched cuBLAS product (n
// products where the library has none). CPU twin: ops.MatMul, each.
func (k *Kernels) MatMulBatch(t *PtrTable, off, n, m, a, b int) error {
	c := k.check("batched matmul").sizes("n, m, a, b", n, m, a, b)
	t.lists(c, off, n, []string{"x", "w", "out"}, []int{m * a, a * b, m * b})
	return k.run(c, func() error {
		return k.d.gemmBatchedLocked(false, false, m, b, a, t, off, off+n, off+2*n, n)
	})
}

// MatMulGradWBatch writes dw_i = x_iᵀ·g_i (x_i [m, a], g_i [m, b], dw_i [a, b]) for the n
// triples at entry off of t: x_0 …, then g_0 …, then dw_0 …: the weight gradients of n
// products. CPU twin: ops.MatMul's weight gradient, each.
func (k *Kernels) MatMulGradWBatch(t *PtrTable, off, n, m, a, b int) error {
	c := k.check("batched matmul weight gradient").sizes("n, m, a, b", n, m, a, b)
	t.lists(c, off, n, []string{"x", "g", "dw"}, []int{m * a, m * b, a * b})
	return k.run(c, func() error {
		if n > 0 && k.narrowGradW(m, a, b) {
			return k.narrowGradWBatchLocked(t, off, n, m, a, b)
		}
		return k.d.gemmBatchedLocked(true, false, a, b, m, t, off, off+n, off+2*n, n)
	})
}

// ColSumBatch writes out_i [d] = the column sums of x_i [rows, d] for the n pairs at entry off
// of t: x_0 …, then out_0 …. Per matrix the bits of ColSum; one launch for as many matrices
// as the column reductions' counters serve (colCounters), which is every realistic batch.
// CPU twin: ops.ColSum, each.
func (k *Kernels) ColSumBatch(t *PtrTable, off, n, rows, d int) error {
	c := k.check("batched column sum").sizes("n, rows, d", n, rows, d)
	t.lists(c, off, n, []string{"x", "out"}, []int{rows * d, d})
	return k.run(c, func() error {
		if d == 0 || n == 0 {
			return nil
		}
		tiles, _, _ := colReduceGeometry(rows, d)
		per := max((colTargetBlocks-1)/tiles, 1)
		for i := 0; i < n; i += per {
			if err := k.colSumBatchLocked(t, off+i, off+n+i, min(per, n-i), rows, d); err != nil {
				return err
			}
		}
		return nil
	})
}

// colSumBatchLocked launches col_sum_batch over cnt matrices, their addresses at entry xs of t
// and their outputs' at entry outs. The caller holds the device.
func (k *Kernels) colSumBatchLocked(t *PtrTable, xs, outs, cnt, rows, d int) error {
	r, err := k.colReduceN(rows, d, 1, cnt)
	if err != nil {
		return err
	}
	defer r.free()
	return k.launch("col_sum_batch", r.grid, blockCol, aP(t.at(outs)), aP(t.at(xs)), aP(r.part), aP(r.count), aI(rows), aI(d), aI(r.rpc))
}

// gemmBatchedLocked queues C_i = op(A_i)·op(B_i) in row-major order (rowMajorGemm) for the n
// operand triples whose addresses lie at entries as, bs and cs of t; C_i is overwritten.
func (d *Device) gemmBatchedLocked(transA, transB bool, m, n, k int, t *PtrTable, as, bs, cs, count int) error {
	g, err := rowMajorGemm(transA, transB, m, n, k, 0, 0)
	if err != nil {
		return err
	}
	if g.outIsEmpty || count == 0 {
		return nil
	}
	h, err := d.blasLocked()
	if err != nil {
		return err
	}
	if k == 0 || h.lib.SgemmBatched == nil || h.oneByOne { // one product at a time, from the host copy
		for i := range count {
			a, b, c := DevPtr(t.host[as+i]), DevPtr(t.host[bs+i]), DevPtr(t.host[cs+i])
			if err := d.gemmLocked(transA, transB, m, n, k, a, b, c); err != nil {
				return err
			}
		}
		return nil
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	alpha, beta := new(float32), new(float32)
	*alpha = 1
	pin.Pin(alpha)
	pin.Pin(beta)
	// rowMajorGemm swaps the operands: cuBLAS's A is our B and its B our A.
	return d.timedLocked(d.gemmLabel("sgemm_batched", transA, transB, m, n, k, false, count), func() error {
		r := h.lib.SgemmBatched(h.h, g.ta, g.tb, g.m, g.n, g.k, unsafe.Pointer(alpha), uint64(t.at(bs)), g.lda, uint64(t.at(as)), g.ldb, unsafe.Pointer(beta), uint64(t.at(cs)), g.ldc, int32(count))
		if r != 0 {
			return fmt.Errorf("cuda: cublasSgemmBatched (%s) for %d row-major %d×%d·%d×%d products: status %d", h.lib.Path, count, m, k, k, n, r)
		}
		return nil
	})
}

// FillBatch fills n buffers in one launch, each given by three entries of t from entry off on:
// its address, its length in 4-byte words, and the bits of its value (float32 bits, or an
// int32). Fill's bits, each.
func (k *Kernels) FillBatch(t *PtrTable, off, n int) error {
	c := k.check("batched fill").sizes("n", n)
	ok := t != nil && t.dev != 0 && off >= 0 && n >= 0 && off+3*n <= len(t.host)
	switch {
	case t == nil || t.dev == 0:
		c.cond(false, "no pointer table")
	case !ok:
		c.cond(false, "%d fills from entry %d of a pointer table of %d", n, off, len(t.host))
	default:
		c.cond(!t.dirty, "the pointer table changed since its upload")
		c.cond(n <= colMaxChunks, "%d fills in one launch (at most %d)", n, colMaxChunks)
	}
	most := 0
	for i := 0; ok && i < n; i++ {
		words := t.host[off+3*i+1]
		if words > math.MaxInt32 {
			c.cond(false, "fill %d of %d words", i, words)
			continue
		}
		c.buf(fmt.Sprintf("buffer[%d]", i), DevPtr(t.host[off+3*i]), int(words))
		most = max(most, int(words))
	}
	return k.run(c, func() error {
		if n == 0 || most == 0 {
			return nil
		}
		g := k.grid1(int64(most))
		g.y = uint32(n)
		return k.launch("fill_batch", g, block1, aP(t.at(off)))
	})
}
