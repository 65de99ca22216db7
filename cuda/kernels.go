package cuda

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
	"github.com/rewiregnn/rewiregnn/cuda/kernels"
)

// Launch geometry shared with kernels/common.cuh.
const (
	threads  = 256 // RW_THREADS
	colX     = 32  // RW_COL_X
	colY     = 8   // RW_COL_Y
	warpSize = 32
)

// arg is one kernel argument as an 8-byte slot.
type arg struct {
	kind byte
	v    uint64
	bad  string
}

func aP(p DevPtr) arg { return arg{kind: 'p', v: uint64(p)} }
func aF(x float32) arg {
	return arg{kind: 'f', v: uint64(math.Float32bits(x))}
}
func aU(x uint64) arg { return arg{kind: 'u', v: x} }
func aI(n int) arg {
	if n < math.MinInt32 || n > math.MaxInt32 {
		return arg{kind: 'i', bad: fmt.Sprintf("%d does not fit a 32-bit int", n)}
	}
	return arg{kind: 'i', v: uint64(uint32(int32(n)))}
}

// Kernels are the compiled kernels of a device with typed launchers, one per op. Every
// launcher queues work on the device's stream and returns; errors of the kernels themselves
// surface at the next synchronising call (Sync, CopyFromDevice).
type Kernels struct {
	d      *Device
	NVRTC  *cudalib.NVRTC
	Target string // "compute_70", or "sm_90" in cubin mode
	Cached int    // kernel files found in the disk cache
	Built  int    // kernel files compiled by NVRTC
	fns    map[string]uintptr
	sigs   map[string]string
	mods   []uintptr
	// count holds the arrival counters of the chunked column reductions (colCounters).
	count DevPtr
	// narrowGW: narrow products' weight gradients on gemm.cu's kernels (Options.NarrowGradW).
	narrowGW bool
}

// Kernels compiles (or takes from the disk cache) every kernel for this device and loads
// them, once; later calls return the same set.
func (d *Device) Kernels() (*Kernels, error) {
	d.mu.Lock()
	k, err := d.kernels, d.kernelsError
	d.mu.Unlock()
	if k != nil || err != nil {
		return k, err
	}
	k, err = buildKernels(d, kernels.DefaultCache())
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.kernels == nil && d.kernelsError == nil {
		d.kernels, d.kernelsError = k, err
	}
	return d.kernels, d.kernelsError
}

// KernelArch returns the architecture the kernels are compiled for on a GPU of compute
// capability cc: want where not 0 (gpu.arch: PTX only, at most cc, one NVRTC knows; an older
// one, whose PTX the driver JIT-compiles for the GPU, checks on a newer GPU the code an older
// GPU would run: compute_70 is a V100's; docs/gpu.md, "Checking a GPU machine"), else NVRTC's
// choice (TargetArch).
func KernelArch(nv *cudalib.NVRTC, cc, want int) (int, error) {
	if want == 0 {
		return nv.TargetArch(cc)
	}
	switch {
	case want < 0:
		return 0, fmt.Errorf("cuda: gpu.arch %d: want a virtual architecture such as 70 (compute_70)", want)
	case nv.Cubin:
		return 0, fmt.Errorf("cuda: gpu.arch %d: NVRTC %v (%s) is newer than the driver and compiles device code for the GPU only; set REWIREGNN_NVRTC to an NVRTC no newer than the driver", want, nv.Version, nv.Path)
	case want > cc:
		return 0, fmt.Errorf("cuda: gpu.arch %d: PTX for compute_%d does not run on a GPU of compute capability %d.%d", want, want, cc/10, cc%10)
	case len(nv.Archs()) > 0 && !slices.Contains(nv.Archs(), want):
		return 0, fmt.Errorf("cuda: gpu.arch %d: NVRTC %v (%s) does not compile for compute_%d (it knows %v)", want, nv.Version, nv.Path, want, nv.Archs())
	}
	return want, nil
}

func buildKernels(d *Device, cache kernels.Cache) (*Kernels, error) {
	nv, err := cudalib.LoadNVRTC(&d.Driver)
	if err != nil {
		return nil, err
	}
	arch, err := KernelArch(nv, d.CC, d.opts.Arch)
	if err != nil {
		return nil, err
	}
	target := fmt.Sprintf("compute_%d", arch)
	if nv.Cubin {
		target = fmt.Sprintf("sm_%d", arch)
	}
	k := &Kernels{d: d, NVRTC: nv, Target: target, fns: map[string]uintptr{}, sigs: map[string]string{}}
	headers := kernels.Headers()
	images := map[string][]byte{}
	for _, s := range kernels.Sources() {
		key := kernels.Key(s.Name, s.Code, headers, target, nv.Version, cudalib.CompileOptions(target, d.opts.KernelDefines...))
		img, cached, err := cache.LoadOrBuild(key, func() ([]byte, error) {
			img, _, err := nv.Compile(s.Name, s.Code, headers, arch, nv.Cubin, d.opts.KernelDefines...)
			return img, err
		})
		if err != nil {
			return nil, err
		}
		if cached {
			k.Cached++
		} else {
			k.Built++
		}
		images[s.Name] = img
	}
	err = d.do(func() error {
		mods := map[string]uintptr{}
		for name, img := range images {
			m, err := d.drv.LoadModule(name, img)
			if err != nil {
				return fmt.Errorf("cuda: loading %s compiled by NVRTC %v for %s on a driver for CUDA %v: %w", name, nv.Version, target, d.Driver, err)
			}
			mods[name] = m
			k.mods = append(k.mods, m)
		}
		for _, s := range kernels.Sigs {
			m, ok := mods[s.File]
			if !ok {
				return fmt.Errorf("cuda: kernel %s: no source file %s embedded", s.Name, s.File)
			}
			fn, err := d.drv.Function(m, s.Name)
			if err != nil {
				return fmt.Errorf("cuda: kernel %s in %s: %w", s.Name, s.File, err)
			}
			k.fns[s.Name] = fn
			k.sigs[s.Name] = s.Params
		}
		return k.prepareLocked()
	})
	if err != nil {
		_ = d.do(func() error {
			for _, m := range k.mods {
				d.drv.ModuleUnload(m)
			}
			return nil
		})
		return nil, err
	}
	return k, nil
}

// launch queues kernel name; the caller holds the device (inside d.do).
func (k *Kernels) launch(name string, grid, block dim3, args ...arg) error {
	fn, ok := k.fns[name]
	if !ok {
		return fmt.Errorf("cuda: no kernel %s", name)
	}
	sig := k.sigs[name]
	if len(sig) != len(args) {
		return fmt.Errorf("cuda: kernel %s takes %d arguments, %d given", name, len(sig), len(args))
	}
	slots := make([]uint64, len(args))
	for i, a := range args {
		if a.bad != "" {
			return fmt.Errorf("cuda: kernel %s argument %d: %s", name, i, a.bad)
		}
		if a.kind != sig[i] {
			return fmt.Errorf("cuda: kernel %s argument %d is '%c', want '%c'", name, i, a.kind, sig[i])
		}
		slots[i] = a.v
	}
	if grid.x == 0 || grid.y == 0 || grid.z == 0 {
		return nil // nothing to do
	}
	return k.d.launchLocked(name, fn, grid, block, 0, slots)
}

// grid1 is the grid of a grid-stride kernel over n items with per items per block, capped at
// 32 blocks per SM (the loop covers the rest).
func (k *Kernels) grid(n int64, per int64) dim3 {
	if n <= 0 {
		return dim3{0, 1, 1}
	}
	b := (n + per - 1) / per
	if lim := int64(max(k.d.SMs, 1) * 32); b > lim {
		b = lim
	}
	return dim3{uint32(b), 1, 1}
}

// grid1 covers n elements with one thread each; gridWarps covers n items with one warp each.
func (k *Kernels) grid1(n int64) dim3     { return k.grid(n, threads) }
func (k *Kernels) gridWarps(n int64) dim3 { return k.grid(n, threads/warpSize) }

// Row chunking of the column reductions (col_sum, ln_backward_params, bn_train_stats,
// bn_backward). One block per colX columns that loops over every row leaves a large GPU idle
// (d = 70: 3 blocks on 132 SMs), so with many rows the rows are split into chunks as well.
const (
	// colTargetBlocks is the grid size aimed at with many rows: 4 blocks per SM of an H100
	// (132 SMs). It is a constant, not the device's SM count, so the chunking, and with it
	// every rounding of the sums, is the same on every GPU.
	colTargetBlocks = 4 * 132
	// colMinChunkRows is the fewest rows a chunk gets (each of the block's colY thread rows
	// then sums at least 8 rows); fewer than 2·colMinChunkRows rows make one chunk, whose
	// block finishes the op on its own. Small, so that a batch of a few thousand rows (ZINC's
	// nodes and edges) still fills the GPU: each thread's loop over its rows waits on a load
	// per row, and at 512 rows a chunk (until 2026-11-27) the batch norms of a ZINC step took
	// 50–60 µs each on an H200 with 15–54 blocks.
	colMinChunkRows = 64
	// colMaxChunks is the grid's y limit.
	colMaxChunks = 65535
)

// colReduceGeometry returns the grid of a column reduction over rows × d: tiles blocks of colX
// columns (grid.x) times chunks row chunks (grid.y) of rowsPerChunk rows each (the last may be
// shorter; none is empty). chunks = 1 means one block per tile over every row
// (rowsPerChunk = rows). Rows are split only while tiles < colTargetBlocks (chunks ≥ 2 needs
// ⌈colTargetBlocks/tiles⌉ ≥ 2), so colTargetBlocks arrival counters serve every split.
func colReduceGeometry(rows, d int) (tiles, chunks, rowsPerChunk int) {
	tiles = (d + colX - 1) / colX
	if rows <= 0 || tiles == 0 {
		return tiles, 1, max(rows, 0)
	}
	chunks = min((colTargetBlocks+tiles-1)/tiles, rows/colMinChunkRows, colMaxChunks)
	if chunks <= 1 {
		return tiles, 1, rows
	}
	rowsPerChunk = (rows + chunks - 1) / chunks
	chunks = (rows + rowsPerChunk - 1) / rowsPerChunk
	return tiles, chunks, rowsPerChunk
}

var (
	block1   = dim3{threads, 1, 1} // 1-D kernels
	blockCol = dim3{colX, colY, 1} // column reductions
	oneBlock = dim3{1, 1, 1}       // single-block reductions to a scalar
)

// colChunkGrid is the grid of a column reduction (colReduceGeometry).
func colChunkGrid(tiles, chunks int) dim3 { return dim3{uint32(tiles), uint32(chunks), 1} }

// colReduction is what one launch of a column reduction needs besides the op's own buffers:
// its grid (tiles × chunks), the rows per chunk, and with several chunks the partials' scratch
// (part, and tot for an element-wise pass after it; colScratch) and the arrival counters
// (colCounters). With one chunk those are 0: each block finishes its columns on its own.
type colReduction struct {
	grid             dim3
	rpc              int
	part, tot, count DevPtr
	free             func()
}

// colReduce prepares a column reduction over rows × d with q partial quantities per column.
// The caller holds the device and calls free once the kernel is queued.
func (k *Kernels) colReduce(rows, d, q int) (colReduction, error) { return k.colReduceN(rows, d, q, 1) }

// colReduceN prepares n column reductions of rows × d at once, one per grid.z (col_sum_batch):
// each with the geometry of one, its own arrival counters (tiles apart) and its own partials
// (q·chunks·d apart). n·tiles must stay below colTargetBlocks (colCounters).
func (k *Kernels) colReduceN(rows, d, q, n int) (colReduction, error) {
	tiles, chunks, rpc := colReduceGeometry(rows, d)
	r := colReduction{grid: colChunkGrid(tiles, chunks), rpc: rpc, free: func() {}}
	r.grid.z = uint32(n)
	if chunks == 1 {
		return r, nil
	}
	var err error
	if r.count, err = k.colCounters(tiles * n); err != nil {
		return r, err
	}
	if r.part, r.tot, r.free, err = k.colScratch(q*n, chunks, d); err != nil {
		return r, fmt.Errorf("cuda: scratch of %d column reductions (%d chunks × %d × %d): %w", n, chunks, q, d, err)
	}
	return r, nil
}

// prepareLocked allocates what the launchers keep for the device's lifetime, now rather than
// at first use, which may come inside a capture (whose graph would then redo it with every
// replay): the column reductions' counters. It also takes the device's Options.NarrowGradW.
// The caller holds the device.
func (k *Kernels) prepareLocked() error {
	k.narrowGW = k.d.opts.NarrowGradW
	_, err := k.colCounters(1)
	return err
}

// colCounters returns the arrival counters of the chunked column reductions (unsigned ints,
// one per column tile, all 0 between launches: the last block of each tile resets its own,
// rw_last_chunk in common.cuh). They belong to the Kernels: allocated and zeroed by one fill
// when the kernels are loaded (buildKernels), sized for every tile count that splits
// (colReduceGeometry), so they never grow, never move, and no later launch fills them again;
// a launch sequence captured as a CUDA graph can therefore be replayed. One array serves
// every launch site because every launch runs on the device's one stream, so no two
// reductions overlap; a second stream running reductions concurrently would need counters of
// its own. The caller holds the device.
func (k *Kernels) colCounters(tiles int) (DevPtr, error) {
	if tiles >= colTargetBlocks {
		return 0, fmt.Errorf("cuda: a column reduction of %d tiles split into chunks (at most %d)", tiles, colTargetBlocks-1)
	}
	if k.count != 0 {
		return k.count, nil
	}
	p, err := k.d.allocLocked(4 * colTargetBlocks)
	if err != nil {
		return 0, fmt.Errorf("cuda: column reduction counters: %w", err)
	}
	if err := k.d.fillLocked(p, colTargetBlocks, 0); err != nil {
		return 0, errors.Join(fmt.Errorf("cuda: zeroing the column reduction counters: %w", err), k.d.freeLocked(p))
	}
	k.count = p
	return p, nil
}

// colScratch allocates the scratch of a chunked column reduction with q quantities per
// column: part, chunks·q·d doubles (each chunk's partial results), then tot, q·d doubles (the
// combined sums, for ops whose element-wise pass reads them). Like scratch it comes from the
// device's caching allocator and is freed as soon as the op's kernel is queued: every kernel
// runs on the one stream, so only work queued later can get the block again (device.go). It
// costs no cuMemAlloc after the first batch of a given size. The caller holds the device.
func (k *Kernels) colScratch(q, chunks, d int) (part, tot DevPtr, free func(), err error) {
	n := q * d * (chunks + 1) // doubles
	p, free, err := k.scratch(2 * n)
	if err != nil {
		return 0, 0, free, err
	}
	return p, p + DevPtr(8*q*d*chunks), free, nil
}

// check validates an op's sizes (non-negative) and buffers (non-nil, and large enough where
// the buffer came from this device's allocator). A bad launch on a GPU poisons the context
// for the rest of the process, so these are checked before anything is queued.
type check struct {
	op   string
	d    *Device
	errs []string
	bufs []bufReq
}

type bufReq struct {
	name  string
	p     DevPtr
	elems int
	bf16  bool // elements of 2 bytes (bf16 storage), not 4
}

func (k *Kernels) check(op string) *check { return &check{op: op, d: k.d} }

func (c *check) sizes(names string, vals ...int) *check {
	ns := strings.Split(names, ",")
	for i, v := range vals {
		if v < 0 {
			name := "size"
			if i < len(ns) {
				name = strings.TrimSpace(ns[i])
			}
			c.errs = append(c.errs, fmt.Sprintf("%s = %d", name, v))
		}
	}
	return c
}

// buf requires p to hold at least elems 4-byte elements (when elems > 0).
func (c *check) buf(name string, p DevPtr, elems int) *check { return c.stored(name, p, elems, false) }

// stored is buf for a tensor whose elements are stored in bf16 (2 bytes each: common.cuh)
// where bf16 is set, else in float32.
func (c *check) stored(name string, p DevPtr, elems int, bf16 bool) *check {
	if elems <= 0 {
		return c
	}
	if p == 0 {
		c.errs = append(c.errs, fmt.Sprintf("%s is nil (needs %d elements)", name, elems))
		return c
	}
	c.bufs = append(c.bufs, bufReq{name, p, elems, bf16})
	return c
}

// opt is buf for an optional buffer (0 allowed).
func (c *check) opt(name string, p DevPtr, elems int) *check {
	if p == 0 {
		return c
	}
	return c.buf(name, p, elems)
}

func (c *check) cond(ok bool, format string, a ...any) *check {
	if !ok {
		c.errs = append(c.errs, fmt.Sprintf(format, a...))
	}
	return c
}

// err reports every problem; the caller holds the device (the allocator's sizes are read).
func (c *check) err() error {
	for _, b := range c.bufs {
		size, kind := 4, ""
		if b.bf16 {
			size, kind = 2, " bf16"
		}
		if sz, ok := c.d.alloc.size[b.p]; ok && sz < size*b.elems {
			c.errs = append(c.errs, fmt.Sprintf("%s holds %d bytes, needs %d%s elements", b.name, sz, b.elems, kind))
		}
	}
	if len(c.errs) == 0 {
		return nil
	}
	return fmt.Errorf("cuda: %s: %s", c.op, strings.Join(c.errs, "; "))
}

// run validates, then runs f with the device held.
func (k *Kernels) run(c *check, f func() error) error {
	return k.d.do(func() error {
		if err := c.err(); err != nil {
			return err
		}
		return f()
	})
}

// scratch allocates n float32 elements for the duration of an op; freeing returns them to the
// cache, and only later work on the same stream can reuse them.
func (k *Kernels) scratch(n int) (DevPtr, func(), error) {
	p, err := k.d.allocLocked(4 * n)
	if err != nil {
		return 0, func() {}, err
	}
	return p, func() { _ = k.d.freeLocked(p) }, nil
}
