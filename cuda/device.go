package cuda

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
	"github.com/rewiregnn/rewiregnn/cuda/emu"
	"github.com/rewiregnn/rewiregnn/gpuopt"
)

// EnvRequireGPU set to 1 makes every GPU test fail, instead of skip, when no GPU is found (for
// GPU machines, where a skip would hide a broken driver set-up).
const EnvRequireGPU = "REWIREGNN_REQUIRE_GPU"

// RequireGPU reports whether EnvRequireGPU is set to 1.
func RequireGPU() bool { return getenv(EnvRequireGPU) == "1" }

func getenv(k string) string { return strings.TrimSpace(os.Getenv(k)) }

// DevPtr is an address in device memory (CUdeviceptr). 0 is "no buffer".
type DevPtr uint64

// Device is one GPU with its primary context, one stream on which every operation of this
// package is queued in order, a caching allocator and (on first use) a cuBLAS handle.
//
// Threading. CUDA binds the current context to an OS thread, and Go moves goroutines between
// threads at any function call. Every method therefore runs its driver calls inside d.do,
// which locks the goroutine to its OS thread (runtime.LockOSThread), makes the device's
// primary context current on that thread (cuCtxSetCurrent: a thread-local store in the
// driver, cheap), makes the calls, and unlocks. A mutex serialises the methods, so a Device
// may be shared by goroutines; the work itself is ordered by the single stream. Primary
// contexts (cuDevicePrimaryCtxRetain) are the context API that CUDA 12 and 13 both keep.
type Device struct {
	Ordinal      int
	Name         string
	CC           int // compute capability as 10·major + minor: 70 (V100), 80 (A100), 90 (H100)
	SMs          int
	MaxThreads   int   // per block
	SharedMem    int   // bytes per block
	TotalMem     int64 // bytes
	Driver       cudalib.Version
	DriverPath   string
	drv          *cudalib.Driver
	dev          int32
	ctx          uintptr
	stream       uintptr
	side         uintptr  // the side stream of pipelined uploads (async.go; 0: none)
	prof         *profile // non-nil while a profile runs (profile.go)
	capture      *capture // non-nil while the stream is being captured (graph.go)
	counts       Counts   // what was queued since Open or ResetCounts (profile.go)
	mu           sync.Mutex
	closed       bool
	alloc        allocator
	blas         *cublasHandle
	math         MathMode // the cuBLAS handle's math mode (gemm.go)
	kernels      *Kernels
	kernelsError error
	emu          *emu.GPU // non-nil for an emulated device (emulator.go)
	// opts are the run's GPU options the device reads (OpenWith): batched products, the
	// narrow weight-gradient kernels, the kernels' definitions and architecture.
	opts gpuopt.Options
}

// Options are the GPU options the device was opened with.
func (d *Device) Options() gpuopt.Options { return d.opts }

// Open is OpenWith the default options (gpuopt.Default).
func Open(ordinal int) (*Device, error) { return OpenWith(ordinal, gpuopt.Default()) }

// OpenWith retains the primary context of GPU ordinal and creates the device's stream; the
// device reads o's batched products, narrow weight gradients, kernel definitions and
// architecture. Where no driver or GPU exists the error satisfies cudalib.ErrNoDevice and
// names every place probed.
func OpenWith(ordinal int, o gpuopt.Options) (*Device, error) {
	drv, err := cudalib.LoadDriver()
	if err != nil {
		return nil, err
	}
	if err := drv.CheckOrdinal(ordinal); err != nil {
		return nil, err
	}
	d := &Device{Ordinal: ordinal, Driver: drv.Version, DriverPath: drv.Path, drv: drv, opts: o}
	d.alloc.free = map[int][]DevPtr{}
	d.alloc.size = map[DevPtr]int{}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := drv.Check(fmt.Sprintf("cuDeviceGet(%d)", ordinal), drv.DeviceGet(unsafe.Pointer(&d.dev), int32(ordinal))); err != nil {
		return nil, err
	}
	name := make([]byte, 256)
	if err := drv.Check("cuDeviceGetName", drv.DeviceGetName(unsafe.Pointer(&name[0]), int32(len(name)), d.dev)); err != nil {
		return nil, err
	}
	d.Name = cudalib.CString(&name[0])
	attr := func(a int32) (int, error) {
		var v int32
		err := drv.Check(fmt.Sprintf("cuDeviceGetAttribute(%d)", a), drv.DeviceGetAttribute(unsafe.Pointer(&v), a, d.dev))
		return int(v), err
	}
	var maj, min int
	var errs []error
	for _, x := range []struct {
		a   int32
		dst *int
	}{{cudalib.AttrCCMajor, &maj}, {cudalib.AttrCCMinor, &min}, {cudalib.AttrMultiprocessors, &d.SMs}, {cudalib.AttrMaxThreadsPerBlock, &d.MaxThreads}, {cudalib.AttrMaxSharedPerBlock, &d.SharedMem}} {
		v, err := attr(x.a)
		*x.dst = v
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	d.CC = 10*maj + min
	var total uint64
	if err := drv.Check("cuDeviceTotalMem", drv.DeviceTotalMem(unsafe.Pointer(&total), d.dev)); err != nil {
		return nil, err
	}
	d.TotalMem = int64(total)
	if err := drv.Check("cuDevicePrimaryCtxRetain", drv.PrimaryCtxRetain(unsafe.Pointer(&d.ctx), d.dev)); err != nil {
		return nil, err
	}
	if err := drv.Check("cuCtxSetCurrent", drv.CtxSetCurrent(d.ctx)); err != nil {
		drv.PrimaryCtxRelease(d.dev)
		return nil, err
	}
	// CU_STREAM_NON_BLOCKING: the stream does not wait for, or hold up, the legacy default
	// stream, so a driver operation that goes through that stream cannot serialise the streams
	// of devices opened side by side (train -parallel, gpubench -concurrent). Every operation
	// here is queued on d.stream explicitly.
	if err := drv.Check("cuStreamCreate", drv.StreamCreate(unsafe.Pointer(&d.stream), cuStreamNonBlocking)); err != nil {
		drv.PrimaryCtxRelease(d.dev)
		return nil, err
	}
	if err := d.openSideLocked(); err != nil {
		drv.StreamDestroy(d.stream)
		drv.PrimaryCtxRelease(d.dev)
		return nil, err
	}
	// cuBLAS now, not at the first matrix product: a GPU whose cuBLAS is missing or broken
	// fails here, where -device auto can still fall back and gpuinfo reports it.
	if _, err := d.blasLocked(); err != nil {
		drv.StreamDestroy(d.stream)
		if d.side != 0 {
			drv.StreamDestroy(d.side)
		}
		drv.PrimaryCtxRelease(d.dev)
		return nil, fmt.Errorf("cuda: %s: %w", d.Name, err)
	}
	return d, nil
}

func (d *Device) String() string {
	if d.emu != nil {
		return fmt.Sprintf("emulated GPU (the real kernels on CPU threads; %d SM, %.1f GiB)", d.SMs, float64(d.TotalMem)/(1<<30))
	}
	return fmt.Sprintf("GPU %d: %s (sm_%d, %d SMs, %.1f GiB; driver CUDA %v)", d.Ordinal, d.Name, d.CC, d.SMs, float64(d.TotalMem)/(1<<30), d.Driver)
}

// do runs f with the device's context current on a locked OS thread, one caller at a time.
func (d *Device) do(f func() error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("cuda: %v is closed", d)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.drv.Check("cuCtxSetCurrent", d.drv.CtxSetCurrent(d.ctx)); err != nil {
		return err
	}
	return f()
}

// Close waits for queued work and releases the stream, cached memory, modules, the cuBLAS
// handle and the primary context. Buffers still allocated are freed with the context.
func (d *Device) Close() error {
	refused := false
	err := d.do(func() error {
		if err := d.refuseInCaptureLocked("close"); err != nil {
			refused = true
			return err
		}
		var errs []error
		errs = append(errs, d.syncLocked())
		if d.kernels != nil {
			for _, m := range d.kernels.mods {
				errs = append(errs, d.drv.Check("cuModuleUnload", d.drv.ModuleUnload(m)))
			}
		}
		if d.blas != nil {
			errs = append(errs, d.blas.destroy(d.drv))
		}
		errs = append(errs, d.trimLocked())
		for p := range d.alloc.size {
			errs = append(errs, d.drv.Check("cuMemFree", d.drv.MemFree(uint64(p))))
		}
		errs = append(errs, d.drv.Check("cuStreamDestroy", d.drv.StreamDestroy(d.stream)))
		if d.side != 0 {
			errs = append(errs, d.drv.Check("cuStreamDestroy (side stream)", d.drv.StreamDestroy(d.side)))
		}
		errs = append(errs, d.drv.Check("cuDevicePrimaryCtxRelease", d.drv.PrimaryCtxRelease(d.dev)))
		return errors.Join(errs...)
	})
	if refused {
		return err
	}
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	if d.emu != nil {
		err = errors.Join(err, d.emu.Close())
	}
	return err
}

// Sync waits until every operation queued on the device's stream has finished; errors of
// asynchronous kernels surface here.
func (d *Device) Sync() error {
	return d.do(func() error {
		if err := d.refuseInCaptureLocked("sync"); err != nil {
			return err
		}
		return d.syncLocked()
	})
}

// MemInfo returns the free and total device memory in bytes.
func (d *Device) MemInfo() (free, total int64, err error) {
	err = d.do(func() error {
		var f, t uint64
		if err := d.drv.Check("cuMemGetInfo", d.drv.MemGetInfo(unsafe.Pointer(&f), unsafe.Pointer(&t))); err != nil {
			return err
		}
		free, total = int64(f), int64(t)
		return nil
	})
	return
}

// cuStreamNonBlocking is CU_STREAM_NON_BLOCKING, cuStreamCreate's flag.
const cuStreamNonBlocking = 1

// allocator caches freed blocks by rounded size. A cached block is handed out again only to
// work queued later on the same stream, so no synchronisation is needed before reuse.
type allocator struct {
	free   map[int][]DevPtr // rounded size → cached blocks
	size   map[DevPtr]int   // every block from cuMemAlloc, live or cached → rounded size
	live   int64            // bytes handed out
	cached int64            // bytes in free
	peak   int64            // the most bytes handed out at once since Open or ResetPeak
}

// roundSize is the size class of a request: multiples of 512 bytes up to 64 KiB, then powers
// of two up to 64 MiB, then multiples of 8 MiB.
func roundSize(n int) int {
	switch {
	case n <= 64<<10:
		return (n + 511) &^ 511
	case n <= 64<<20:
		p := 64 << 10
		for p < n {
			p <<= 1
		}
		return p
	}
	return (n + (8<<20 - 1)) &^ (8<<20 - 1)
}

// Alloc returns a device buffer of at least bytes bytes, from the cache when it can. Alloc(0)
// returns 0 without allocating.
func (d *Device) Alloc(bytes int) (DevPtr, error) {
	var p DevPtr
	err := d.do(func() error {
		var err error
		p, err = d.allocLocked(bytes)
		return err
	})
	return p, err
}

func (d *Device) allocLocked(bytes int) (DevPtr, error) {
	if bytes < 0 {
		return 0, fmt.Errorf("cuda: alloc of %d bytes", bytes)
	}
	if bytes == 0 {
		return 0, nil
	}
	sz := roundSize(bytes)
	if d.emu != nil {
		// Exact sizes, so the guard page after each buffer catches a one-element overrun, and
		// NaN in every buffer handed out, so a value read before it is written shows.
		sz = (bytes + 3) &^ 3
		p, err := d.takeLocked(sz)
		if err == nil {
			d.emu.Poison(uint64(p), sz)
		}
		return p, err
	}
	return d.takeLocked(sz)
}

// takeLocked hands out a block of size class sz: a cached one, else a new one.
func (d *Device) takeLocked(sz int) (DevPtr, error) {
	if l := d.alloc.free[sz]; len(l) > 0 {
		p := l[len(l)-1]
		d.alloc.free[sz] = l[:len(l)-1]
		d.alloc.cached -= int64(sz)
		d.alloc.live += int64(sz)
		d.alloc.peak = max(d.alloc.peak, d.alloc.live)
		return p, nil
	}
	var p uint64
	r := d.drv.MemAlloc(unsafe.Pointer(&p), uintptr(sz))
	if r == cudalib.CUDAErrorOutOfMemory && d.alloc.cached > 0 && d.capture == nil { // a trim syncs: not while capturing
		if err := d.trimLocked(); err != nil {
			return 0, err
		}
		r = d.drv.MemAlloc(unsafe.Pointer(&p), uintptr(sz))
	}
	if err := d.drv.Check(fmt.Sprintf("cuMemAlloc(%d bytes; %d live, %d cached)", sz, d.alloc.live, d.alloc.cached), r); err != nil {
		return 0, err
	}
	d.alloc.size[DevPtr(p)] = sz
	d.alloc.live += int64(sz)
	d.alloc.peak = max(d.alloc.peak, d.alloc.live)
	return DevPtr(p), nil
}

// Free returns a buffer from Alloc to the cache. Free(0) does nothing.
func (d *Device) Free(p DevPtr) error { return d.do(func() error { return d.freeLocked(p) }) }

func (d *Device) freeLocked(p DevPtr) error {
	if p == 0 {
		return nil
	}
	sz, ok := d.alloc.size[p]
	if !ok {
		return fmt.Errorf("cuda: free of %#x, which this device did not allocate", uint64(p))
	}
	for _, q := range d.alloc.free[sz] {
		if q == p {
			return fmt.Errorf("cuda: double free of %#x", uint64(p))
		}
	}
	d.alloc.free[sz] = append(d.alloc.free[sz], p)
	if d.capture != nil {
		d.capture.freed = append(d.capture.freed, p) // kept for the graph by EndCapture (graph.go)
	}
	d.alloc.live -= int64(sz)
	d.alloc.cached += int64(sz)
	return nil
}

// Trim hands every cached block back to the driver (after the stream has finished with them).
func (d *Device) Trim() error { return d.do(d.trimLocked) }

func (d *Device) trimLocked() error {
	if err := d.refuseInCaptureLocked("trim"); err != nil {
		return err
	}
	if d.alloc.cached == 0 {
		return nil
	}
	if err := d.syncLocked(); err != nil {
		return err
	}
	var errs []error
	for sz, l := range d.alloc.free {
		for _, p := range l {
			errs = append(errs, d.drv.Check("cuMemFree", d.drv.MemFree(uint64(p))))
			delete(d.alloc.size, p)
			d.alloc.cached -= int64(sz)
		}
		delete(d.alloc.free, sz)
	}
	return errors.Join(errs...)
}

// MemStats returns the bytes handed out and the bytes cached by the allocator.
func (d *Device) MemStats() (live, cached int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.alloc.live, d.alloc.cached
}

// PeakLive returns the most bytes the allocator has handed out at once (its high-water mark)
// since Open or the last ResetPeak. Blocks are counted at their rounded size; the driver's own
// overhead (context, modules, cuBLAS workspace) is not included: see MemInfo for that.
func (d *Device) PeakLive() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.alloc.peak
}

// ResetPeak restarts the high-water mark at the bytes handed out now.
func (d *Device) ResetPeak() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.alloc.peak = d.alloc.live
}

// Elem is an element type that crosses between host and device.
type Elem interface{ ~float32 | ~int32 | ~uint32 }

// CopyToDevice queues a copy of src into dst (which must hold len(src) elements). On return src
// may be reused: the driver stages pageable host memory before returning.
func CopyToDevice[T Elem](d *Device, dst DevPtr, src []T) error {
	if len(src) == 0 {
		return nil
	}
	if dst == 0 {
		return fmt.Errorf("cuda: copy of %d elements to a nil device buffer", len(src))
	}
	return d.do(func() error {
		if err := d.refuseInCaptureLocked("upload"); err != nil {
			return err
		}
		var pin runtime.Pinner
		defer pin.Unpin()
		pin.Pin(&src[0])
		n := uintptr(len(src)) * unsafe.Sizeof(src[0])
		return d.timedLocked("upload", func() error {
			return d.drv.Check(fmt.Sprintf("cuMemcpyHtoDAsync(%d bytes)", n), d.drv.MemcpyHtoDAsync(uint64(dst), unsafe.Pointer(&src[0]), n, d.stream))
		})
	})
}

// CopyFromDevice copies len(dst) elements from src into dst after the work queued before it,
// and waits for the copy.
func CopyFromDevice[T Elem](d *Device, dst []T, src DevPtr) error { return copyFrom(d, dst, src, true) }

// copyFrom queues a copy of src into dst on the device's stream and, with wait, waits for the
// stream.
func copyFrom[T Elem](d *Device, dst []T, src DevPtr, wait bool) error {
	if len(dst) == 0 {
		return nil
	}
	if src == 0 {
		return fmt.Errorf("cuda: copy of %d elements from a nil device buffer", len(dst))
	}
	return d.do(func() error {
		if err := d.refuseInCaptureLocked("download"); err != nil {
			return err
		}
		var pin runtime.Pinner // Go memory, when dst is not a HostBuf's
		defer pin.Unpin()
		pin.Pin(&dst[0])
		n := uintptr(len(dst)) * unsafe.Sizeof(dst[0])
		if err := d.timedLocked("download", func() error {
			return d.drv.Check(fmt.Sprintf("cuMemcpyDtoHAsync(%d bytes)", n), d.drv.MemcpyDtoHAsync(unsafe.Pointer(&dst[0]), uint64(src), n, d.stream))
		}); err != nil || !wait {
			return err
		}
		return d.drv.Check("cuStreamSynchronize", d.drv.StreamSynchronize(d.stream))
	})
}

// Copy queues a device-to-device copy of n 4-byte elements.
func (d *Device) Copy(dst, src DevPtr, n int) error {
	if n <= 0 {
		return nil
	}
	return d.do(func() error {
		return d.timedLocked("copy", func() error {
			return d.drv.Check("cuMemcpyDtoDAsync", d.drv.MemcpyDtoDAsync(uint64(dst), uint64(src), uintptr(n)*4, d.stream))
		})
	})
}

// Fill queues setting n float32 elements at p to v.
func (d *Device) Fill(p DevPtr, n int, v float32) error {
	return d.do(func() error { return d.fillLocked(p, n, math.Float32bits(v)) })
}

func (d *Device) fillLocked(p DevPtr, n int, bits uint32) error {
	if n <= 0 {
		return nil
	}
	return d.timedLocked("fill", func() error {
		return d.drv.Check("cuMemsetD32Async", d.drv.MemsetD32Async(uint64(p), bits, uintptr(n), d.stream))
	})
}

// Event is a point in the device's stream, for timing.
type Event struct {
	d *Device
	e uintptr
}

// Record queues an event on the stream.
func (d *Device) Record() (*Event, error) {
	ev := &Event{d: d}
	if d.drv.EventCreate == nil {
		return nil, fmt.Errorf("cuda: %s has no usable event functions", d.DriverPath)
	}
	err := d.do(func() error {
		if err := d.refuseInCaptureLocked("event record"); err != nil {
			return err
		}
		if err := d.drv.Check("cuEventCreate", d.drv.EventCreate(unsafe.Pointer(&ev.e), 0)); err != nil {
			return err
		}
		return d.drv.Check("cuEventRecord", d.drv.EventRecord(ev.e, d.stream))
	})
	return ev, err
}

// Since waits for e and returns the milliseconds between start and e.
func (e *Event) Since(start *Event) (float64, error) {
	var ms float32
	err := e.d.do(func() error {
		if err := e.d.drv.Check("cuEventSynchronize", e.d.drv.EventSynchronize(e.e)); err != nil {
			return err
		}
		return e.d.drv.Check("cuEventElapsedTime", e.d.drv.EventElapsedTime(unsafe.Pointer(&ms), start.e, e.e))
	})
	return float64(ms), err
}

// Destroy releases the event.
func (e *Event) Destroy() error {
	return e.d.do(func() error { return e.d.drv.Check("cuEventDestroy", e.d.drv.EventDestroy(e.e)) })
}

// dim3 is a grid or block shape.
type dim3 struct{ x, y, z uint32 }

// launchLocked queues kernel fn with the argument values in slots (one 8-byte slot per
// argument; 4-byte arguments use the low half, which is where a little-endian machine reads
// them). cuLaunchKernel reads the values through an array of pointers to them, all pinned.
func (d *Device) launchLocked(name string, fn uintptr, grid, block dim3, shmem uint32, slots []uint64) error {
	var pin runtime.Pinner
	defer pin.Unpin()
	var params unsafe.Pointer
	if len(slots) > 0 {
		pin.Pin(&slots[0])
		ptrs := make([]unsafe.Pointer, len(slots))
		for i := range slots {
			ptrs[i] = unsafe.Pointer(&slots[i])
		}
		pin.Pin(&ptrs[0])
		params = unsafe.Pointer(&ptrs[0])
	}
	return d.timedLocked(name, func() error {
		r := d.drv.LaunchKernel(fn, grid.x, grid.y, grid.z, block.x, block.y, block.z, shmem, d.stream, params, nil)
		if r != cudalib.CUDASuccess {
			return fmt.Errorf("cuda: launch %s grid %v block %v: %w", name, grid, block, d.drv.Check("cuLaunchKernel", r))
		}
		return nil
	})
}
