//go:build linux

package emu

// The emulated device's driver and cuBLAS: the function tables of cudalib filled with Go
// functions over the emulator's device memory, which the kernel process (proc.go) shares.

import (
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
	"github.com/rewiregnn/rewiregnn/cuda/kernels"
	"golang.org/x/sys/unix"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

const pageSize = 4096

// CUresult codes the emulated driver returns.
const (
	emuErrInvalidValue  = 1
	emuErrIllegalAddr   = 700
	emuErrLaunchFailed  = 719
	emuErrInvalidHandle = 400
	emuErrIllegalState  = 401
	emuErrCaptureUnsupp = 900 // CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
	emuErrCaptureInval  = 901 // CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
)

var emuErrNames = map[int32]string{
	cudalib.CUDASuccess:          "CUDA_SUCCESS",
	emuErrInvalidValue:           "CUDA_ERROR_INVALID_VALUE",
	cudalib.CUDAErrorOutOfMemory: "CUDA_ERROR_OUT_OF_MEMORY",
	emuErrInvalidHandle:          "CUDA_ERROR_INVALID_HANDLE",
	emuErrIllegalAddr:            "CUDA_ERROR_ILLEGAL_ADDRESS",
	emuErrLaunchFailed:           "CUDA_ERROR_LAUNCH_FAILED",
	emuErrIllegalState:           "CUDA_ERROR_ILLEGAL_STATE",
	emuErrCaptureUnsupp:          "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
	emuErrCaptureInval:           "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
}

// emuSpan is a range of device memory, in bytes from the start of the arena.
type emuSpan struct{ off, len uint64 }

// emuBuf is one allocation: its pages (the last one the guard) and its size; the data ends
// where the guard page starts.
type emuBuf struct {
	pages emuSpan
	size  uint64
}

func (b emuBuf) dataOff() uint64 { return b.pages.off + b.pages.len - pageSize - b.size }

type emuKernel struct{ name, kinds string }

// GPU is an emulated GPU: the kernel process, its device memory, and the state behind the
// driver and cuBLAS function tables it hands out (Driver, CUBLAS).
type GPU struct {
	prog    *emuProgram
	proc    *emuProc
	sms     int
	file    *os.File
	mem     []byte
	base    uint64 // the Go address of mem[0]
	next    uint64 // first never-used page offset
	free    []emuSpan
	bufs    map[uint64]emuBuf // data address → buffer
	starts  []uint64          // data addresses, sorted
	used    uint64            // bytes in pages of live buffers
	kernels []emuKernel
	events  map[uintptr]time.Time
	nextEv  uintptr
	msg     []byte // the last error's detail, NUL-terminated (cuGetErrorString)
	names   map[int32][]byte
	// launched counts the launches of each kernel (by index in kernels).
	launched []int
	graphs   emuGraphs // stream capture and the graphs made from it (graph_linux.go)
	// mathMode is the cuBLAS handle's math mode (cublasSetMathMode): CublasDefaultMath, or
	// CublasTF32TensorOpMath, under which sgemm rounds its inputs to TF32 (RoundTF32).
	mathMode int32
	async    emuAsync // streams, page-locked memory and the copies not yet run (async_linux.go)
}

// NotLaunched lists the kernels of kernels.go (kernels.Sigs) that this device has never
// launched.
func (e *GPU) NotLaunched() []string {
	var out []string
	for _, s := range kernels.Sigs {
		i := slices.IndexFunc(e.kernels, func(k emuKernel) bool { return k.name == s.Name })
		if i < 0 || e.launched[i] == 0 {
			out = append(out, s.Name)
		}
	}
	return out
}

// Open builds (or takes from the cache) the emulated kernels, starts the kernel process and
// checks the kernels' parameter lists against kernels.Sigs. Without a C++ compiler the error
// wraps ErrNoCompiler.
func Open(o Options) (*GPU, error) {
	o = o.withDefaults()
	prog, err := buildEmulator(o)
	if err != nil {
		return nil, err
	}
	e, err := startEmulator(prog, o.MemoryBytes, o.Deterministic)
	if err != nil {
		prog.cleanup()
		return nil, err
	}
	e.sms = o.SMs
	var bad []string
	for _, s := range kernels.Sigs {
		i := slices.IndexFunc(e.kernels, func(k emuKernel) bool { return k.name == s.Name })
		if i < 0 {
			continue // a test's patched sources may leave files out; launching it says so
		}
		if e.kernels[i].kinds != s.Params {
			bad = append(bad, fmt.Sprintf("%s in %s takes %q, kernels.go declares %q", s.Name, s.File, e.kernels[i].kinds, s.Params))
		}
	}
	if len(bad) > 0 {
		e.Close()
		prog.cleanup()
		return nil, fmt.Errorf("cuda: emulator: kernel parameter lists differ from kernels.go: %s", strings.Join(bad, "; "))
	}
	return e, nil
}

// Function returns the handle of kernel name for the driver table's LaunchKernel, as
// cuModuleGetFunction would; ok is false when the sources built have no such kernel.
func (e *GPU) Function(name string) (fn uintptr, ok bool) {
	i := slices.IndexFunc(e.kernels, func(k emuKernel) bool { return k.name == name })
	return uintptr(i + 1), i >= 0
}

// Compiler is the C++ compiler that built the kernels: "g++ (Debian 12.2.0-14) 12.2.0".
func (e *GPU) Compiler() string { return e.prog.compiler }

// Path is the built kernel program.
func (e *GPU) Path() string { return e.prog.path }

// SMs is the number of multiprocessors the device reports (Options.SMs).
func (e *GPU) SMs() int { return e.sms }

// TotalMem is the device memory in bytes.
func (e *GPU) TotalMem() int64 { return int64(len(e.mem)) }

func (p *emuProgram) cleanup() {
	if p.tmp != "" {
		os.RemoveAll(p.tmp)
	}
}

func startEmulator(prog *emuProgram, size int64, serial bool) (*GPU, error) {
	size = (size + pageSize - 1) &^ (pageSize - 1)
	f, err := newMemFile(size)
	if err != nil {
		return nil, err
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_NORESERVE)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("cuda: emulator: mapping %d bytes of device memory: %w", size, err)
	}
	e := &GPU{prog: prog, file: f, mem: mem, base: uint64(uintptr(unsafe.Pointer(&mem[0]))),
		bufs: map[uint64]emuBuf{}, events: map[uintptr]time.Time{}, names: map[int32][]byte{}}
	e.next = pageSize // address base+0 is never handed out
	if e.proc, err = startProc(prog, f); err != nil {
		e.Close()
		return nil, err
	}
	flags := uint32(0)
	if serial {
		flags |= 1
	}
	if st, msg, err := e.proc.call(request(emuInit, e.base, uint64(size), flags)); err != nil || st != 0 {
		e.Close()
		return nil, fmt.Errorf("cuda: emulator: start: %v%s", err, msg)
	}
	st, list, err := e.proc.call(request(emuKernels))
	if err != nil || st != 0 {
		e.Close()
		return nil, fmt.Errorf("cuda: emulator: kernel list: %v%s", err, list)
	}
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		name, kinds, _ := strings.Cut(line, " ")
		e.kernels = append(e.kernels, emuKernel{name, kinds})
	}
	e.launched = make([]int, len(e.kernels))
	return e, nil
}

// Close ends the kernel process and releases the device memory.
func (e *GPU) Close() error {
	e.flushAll()
	err := e.releasePinned()
	if e.proc != nil {
		err = errors.Join(err, e.proc.close())
	}
	if e.mem != nil {
		syscall.Munmap(e.mem)
		e.mem = nil
	}
	e.file.Close()
	e.prog.cleanup()
	return err
}

// fail records the detail of an error and returns its code.
func (e *GPU) fail(code int32, format string, a ...any) int32 {
	e.msg = append([]byte(fmt.Sprintf(format, a...)), 0)
	return code
}

// bytesAt returns the n bytes at device address p, which must lie in one live buffer.
func (e *GPU) bytesAt(p, n uint64) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	b, start, ok := e.find(p)
	if !ok {
		return nil, fmt.Errorf("%s", e.describe(p))
	}
	if p+n > start+b.size {
		return nil, fmt.Errorf("%d bytes at 0x%x run %d bytes past the end of the %d-byte buffer at 0x%x", n, p, p+n-start-b.size, b.size, start)
	}
	off := p - e.base
	return e.mem[off : off+n : off+n], nil
}

// find returns the live buffer that contains address p.
func (e *GPU) find(p uint64) (emuBuf, uint64, bool) {
	i := sort.Search(len(e.starts), func(i int) bool { return e.starts[i] > p }) - 1
	if i < 0 {
		return emuBuf{}, 0, false
	}
	s := e.starts[i]
	b := e.bufs[s]
	if p >= s+b.size && !(b.size == 0 && p == s) {
		return b, s, false
	}
	return b, s, true
}

// describe says where address p lies relative to the buffers (for faults and bad arguments).
func (e *GPU) describe(p uint64) string {
	if p < e.base || p >= e.base+uint64(len(e.mem)) {
		return fmt.Sprintf("address 0x%x is not device memory", p)
	}
	i := sort.Search(len(e.starts), func(i int) bool { return e.starts[i] > p }) - 1
	if i >= 0 {
		s := e.starts[i]
		b := e.bufs[s]
		if p < s+b.size {
			return fmt.Sprintf("address 0x%x is byte %d of the %d-byte buffer at 0x%x", p, p-s, b.size, s)
		}
		if p < s+b.size+pageSize {
			where := "just past the end"
			if p > s+b.size {
				where = fmt.Sprintf("%d bytes past the end", p-s-b.size)
			}
			return fmt.Sprintf("address 0x%x is %s of the %d-byte buffer at 0x%x (4-byte element %d of %d)", p, where, b.size, s, (p-s)/4, b.size/4)
		}
	}
	return fmt.Sprintf("address 0x%x is in no allocated buffer", p)
}

// alloc hands out size bytes ending at a guard page.
func (e *GPU) alloc(size uint64) (uint64, int32) {
	size = (size + 3) &^ 3
	pages := (size+pageSize-1)/pageSize*pageSize + pageSize
	var sp emuSpan
	found := false
	for i, f := range e.free {
		if f.len >= pages {
			sp = emuSpan{f.off, pages}
			e.free[i] = emuSpan{f.off + pages, f.len - pages}
			if e.free[i].len == 0 {
				e.free = append(e.free[:i], e.free[i+1:]...)
			}
			found = true
			break
		}
	}
	if !found {
		if e.next+pages > uint64(len(e.mem)) {
			return 0, e.fail(cudalib.CUDAErrorOutOfMemory, "%d bytes requested, %d of %d in use", size, e.used, len(e.mem))
		}
		sp = emuSpan{e.next, pages}
		e.next += pages
	}
	b := emuBuf{pages: sp, size: size}
	guard := e.base + sp.off + sp.len - pageSize
	if st, msg, err := e.proc.call(request(emuProtect, guard, uint64(pageSize), uint32(1))); err != nil || st != 0 {
		e.release(sp)
		return 0, e.fail(emuErrLaunchFailed, "guard page: %v%s", err, msg)
	}
	p := e.base + b.dataOff()
	e.bufs[p] = b
	i := sort.Search(len(e.starts), func(i int) bool { return e.starts[i] >= p })
	e.starts = append(e.starts, 0)
	copy(e.starts[i+1:], e.starts[i:])
	e.starts[i] = p
	e.used += pages
	return p, cudalib.CUDASuccess
}

func (e *GPU) freeBuf(p uint64) int32 {
	b, ok := e.bufs[p]
	if !ok {
		return e.fail(emuErrInvalidValue, "cuMemFree of 0x%x, which is not an allocated buffer", p)
	}
	delete(e.bufs, p)
	i := sort.Search(len(e.starts), func(i int) bool { return e.starts[i] >= p })
	e.starts = append(e.starts[:i], e.starts[i+1:]...)
	e.used -= b.pages.len
	guard := e.base + b.pages.off + b.pages.len - pageSize
	if st, msg, err := e.proc.call(request(emuProtect, guard, uint64(pageSize), uint32(0))); err != nil || st != 0 {
		return e.fail(emuErrLaunchFailed, "guard page: %v%s", err, msg)
	}
	// Give the pages back to the system; they read as zeros until written again.
	_ = syscall.Fallocate(int(e.file.Fd()), 0x01|0x02, int64(b.pages.off), int64(b.pages.len)) // KEEP_SIZE|PUNCH_HOLE
	e.release(b.pages)
	return cudalib.CUDASuccess
}

// release returns pages to the free list, merging neighbours.
func (e *GPU) release(sp emuSpan) {
	i := sort.Search(len(e.free), func(i int) bool { return e.free[i].off >= sp.off })
	e.free = append(e.free, emuSpan{})
	copy(e.free[i+1:], e.free[i:])
	e.free[i] = sp
	if i+1 < len(e.free) && e.free[i].off+e.free[i].len == e.free[i+1].off {
		e.free[i].len += e.free[i+1].len
		e.free = append(e.free[:i+1], e.free[i+2:]...)
	}
	if i > 0 && e.free[i-1].off+e.free[i-1].len == e.free[i].off {
		e.free[i-1].len += e.free[i].len
		e.free = append(e.free[:i], e.free[i+1:]...)
	}
}

// Poison fills n bytes at device address p with NaN (a fresh buffer: reading it before
// writing shows).
func (e *GPU) Poison(p uint64, n int) {
	b, err := e.bytesAt(p, uint64(n))
	if err != nil {
		return
	}
	fillWords(b, math.Float32bits(float32(math.NaN())))
}

func fillWords(b []byte, w uint32) {
	if len(b) < 4 {
		return
	}
	words := unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4)
	for i := range words {
		words[i] = w
	}
}

var faultAddr = regexp.MustCompile(`fault: signal \d+ at address 0x([0-9a-f]+)`)

// emuKernelCall is one kernel launch with its argument values copied out of the caller's slots.
type emuKernelCall struct {
	id                     int
	gx, gy, gz, bx, by, bz uint32
	shmem                  uint32
	slots                  []uint64
}

// launch queues kernel f (an index into e.kernels, plus 1) with the arguments cuLaunchKernel
// would get: params points at one pointer per argument, each to its 8-byte slot. The values
// are copied at once, as the driver does (the caller may reuse its slots when this returns).
func (e *GPU) launch(f uintptr, gx, gy, gz, bx, by, bz, shmem uint32, params unsafe.Pointer) int32 {
	id := int(f) - 1
	if id < 0 || id >= len(e.kernels) {
		return e.fail(emuErrInvalidHandle, "no kernel with handle %d", f)
	}
	l := emuKernelCall{id: id, gx: gx, gy: gy, gz: gz, bx: bx, by: by, bz: bz, shmem: shmem, slots: make([]uint64, len(e.kernels[id].kinds))}
	if len(l.slots) > 0 {
		ptrs := unsafe.Slice((*unsafe.Pointer)(params), len(l.slots))
		for i := range l.slots {
			l.slots[i] = *(*uint64)(ptrs[i])
		}
	}
	return e.enqueue(e.kernels[id].name, func(dry bool) int32 { return e.runLaunch(l, dry) })
}

// runLaunch checks that every pointer argument lies in a live buffer and, unless dry, runs the
// kernel in the kernel process.
func (e *GPU) runLaunch(l emuKernelCall, dry bool) int32 {
	k := e.kernels[l.id]
	for i, v := range l.slots {
		if k.kinds[i] == 'p' && v != 0 {
			if _, _, ok := e.find(v); !ok {
				return e.fail(emuErrInvalidValue, "%s argument %d: %s", k.name, i, e.describe(v))
			}
		}
	}
	if dry {
		return cudalib.CUDASuccess
	}
	e.launched[l.id]++
	st, msg, err := e.proc.call(request(emuLaunch, uint32(l.id), l.gx, l.gy, l.gz, l.bx, l.by, l.bz, l.shmem, uint32(len(l.slots)), l.slots))
	if err != nil {
		detail := err.Error()
		if m := faultAddr.FindStringSubmatch(detail); m != nil {
			if a, perr := strconv.ParseUint(m[1], 16, 64); perr == nil {
				detail += ": " + e.describe(a)
			}
		}
		return e.fail(emuErrLaunchFailed, "emulated kernel %s: %s", k.name, detail)
	}
	if st != 0 {
		return e.fail(emuErrInvalidValue, "%s", msg)
	}
	return cudalib.CUDASuccess
}

// memset sets n 4-byte words at dst to v (cuMemsetD32Async); dry only checks.
func (e *GPU) memset(dst uint64, v uint32, n uintptr, dry bool) int32 {
	b, err := e.bytesAt(dst, 4*uint64(n))
	if err != nil {
		return e.fail(emuErrInvalidValue, "cuMemsetD32: %v", err)
	}
	if !dry {
		fillWords(b, v)
	}
	return cudalib.CUDASuccess
}

// copyDtoD copies size bytes from src to dst (cuMemcpyDtoDAsync); dry only checks.
func (e *GPU) copyDtoD(dst, src uint64, size uintptr, dry bool) int32 {
	to, err := e.bytesAt(dst, uint64(size))
	if err != nil {
		return e.fail(emuErrInvalidValue, "cuMemcpyDtoD destination: %v", err)
	}
	from, err := e.bytesAt(src, uint64(size))
	if err != nil {
		return e.fail(emuErrInvalidValue, "cuMemcpyDtoD source: %v", err)
	}
	if !dry {
		copy(to, from)
	}
	return cudalib.CUDASuccess
}

func (e *GPU) errName(r int32, s **byte) int32 {
	name, ok := emuErrNames[r]
	if !ok {
		return emuErrInvalidValue
	}
	b, ok := e.names[r]
	if !ok {
		b = append([]byte(name), 0)
		e.names[r] = b
	}
	*s = &b[0]
	return cudalib.CUDASuccess
}

func (e *GPU) errString(r int32, s **byte) int32 {
	if r == cudalib.CUDASuccess || len(e.msg) == 0 {
		return e.errName(r, s)
	}
	*s = &e.msg[0]
	return cudalib.CUDASuccess
}

// Driver returns the driver function table of the emulated device. Every call is
// synchronous: when it returns, the work is done.
func (e *GPU) Driver() *cudalib.Driver {
	ok := func() int32 { return cudalib.CUDASuccess }
	d := &cudalib.Driver{Path: e.prog.path, Version: cudalib.Version{Major: 13, Minor: 0}, Devices: 1}
	d.CtxSetCurrent = func(uintptr) int32 { return ok() }
	d.StreamSynchronize = func(uintptr) int32 {
		if r := e.refuseInCapture("cuStreamSynchronize"); r != cudalib.CUDASuccess {
			return r
		}
		if e.proc.dead != nil {
			return e.fail(emuErrLaunchFailed, "%v", e.proc.dead)
		}
		return ok()
	}
	d.PrimaryCtxRelease = func(int32) int32 { return ok() }
	d.MemAlloc = func(p unsafe.Pointer, size uintptr) int32 {
		a, r := e.alloc(uint64(size))
		*(*uint64)(p) = a
		return r
	}
	d.MemFree = func(p uint64) int32 { return e.freeBuf(p) }
	d.MemGetInfo = func(free, total unsafe.Pointer) int32 {
		*(*uint64)(total) = uint64(len(e.mem))
		*(*uint64)(free) = uint64(len(e.mem)) - e.used
		return ok()
	}
	d.MemcpyDtoDAsync = func(dst, src uint64, size uintptr, _ uintptr) int32 {
		return e.enqueue("cuMemcpyDtoDAsync", func(dry bool) int32 { return e.copyDtoD(dst, src, size, dry) })
	}
	d.MemsetD32Async = func(dst uint64, v uint32, n uintptr, _ uintptr) int32 {
		return e.enqueue("cuMemsetD32Async", func(dry bool) int32 { return e.memset(dst, v, n, dry) })
	}
	d.ModuleUnload = func(uintptr) int32 { return ok() }
	d.LaunchKernel = func(f uintptr, gx, gy, gz, bx, by, bz, shmem uint32, _ uintptr, params, _ unsafe.Pointer) int32 {
		return e.launch(f, gx, gy, gz, bx, by, bz, shmem, params)
	}
	d.EventCreate = func(ev unsafe.Pointer, _ uint32) int32 {
		e.nextEv++
		*(*uintptr)(ev) = e.nextEv
		return ok()
	}
	d.EventRecord = func(ev, _ uintptr) int32 { e.events[ev] = time.Now(); return ok() }
	d.EventElapsedTime = func(ms unsafe.Pointer, start, end uintptr) int32 {
		*(*float32)(ms) = float32(e.events[end].Sub(e.events[start]).Seconds() * 1e3)
		return ok()
	}
	d.EventDestroy = func(ev uintptr) int32 { delete(e.events, ev); return ok() }
	d.GetErrorName = e.errName
	d.GetErrorString = e.errString
	e.graphDriver(d)
	e.asyncDriver(d) // streams, host copies, event waits and page-locked memory
	return d
}

// CUBLAS returns the emulated cuBLAS: column-major sgemm by gonum's CPU sgemm.
func (e *GPU) CUBLAS() *cudalib.CUBLAS {
	c := &cudalib.CUBLAS{Path: "emulated cuBLAS (gonum sgemm on the CPU)", Version: cudalib.Version{Major: 13, Minor: 0}}
	c.Create = func(h unsafe.Pointer) int32 { *(*uintptr)(h) = 1; return 0 }
	c.Destroy = func(uintptr) int32 { return 0 }
	c.SetStream = func(_, s uintptr) int32 { e.async.blas = s; return 0 }
	c.SetMathMode = e.setMathMode
	c.GetProperty = func(t int32, v unsafe.Pointer) int32 {
		*(*int32)(v) = map[int32]int32{cudalib.CublasPropMajor: 13, cudalib.CublasPropMinor: 0}[t]
		return 0
	}
	c.Sgemm = func(h uintptr, ta, tb int32, m, n, k int32, alpha unsafe.Pointer, a uint64, lda int32, b uint64, ldb int32, beta unsafe.Pointer, cc uint64, ldc int32) int32 {
		e.flush(e.async.blas)
		return e.sgemm(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, cc, ldc)
	}
	c.SgemmBatched = func(h uintptr, ta, tb int32, m, n, k int32, alpha unsafe.Pointer, a uint64, lda int32, b uint64, ldb int32, beta unsafe.Pointer, cc uint64, ldc int32, count int32) int32 {
		e.flush(e.async.blas)
		return e.sgemmBatched(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, cc, ldc, count)
	}
	c.SetWorkspace = e.setWorkspace
	return c
}

// setMathMode is cublasSetMathMode for the math modes the device uses: CublasDefaultMath and
// CublasTF32TensorOpMath; any other is CUBLAS_STATUS_INVALID_VALUE (7), as the emulator does
// not model it.
func (e *GPU) setMathMode(_ uintptr, mode int32) int32 {
	switch mode {
	case cudalib.CublasDefaultMath, cudalib.CublasTF32TensorOpMath:
		e.mathMode = mode
		return 0
	}
	e.fail(emuErrInvalidValue, "cublasSetMathMode(%d): the emulated cuBLAS models only CUBLAS_DEFAULT_MATH (0) and CUBLAS_TF32_TENSOR_OP_MATH (3)", mode)
	return 7
}

// tf32 reports whether products queued now round their inputs to TF32: the math mode at the
// call, as cuBLAS picks its kernel when called (and a captured product keeps it).
func (e *GPU) tf32() bool { return e.mathMode == cudalib.CublasTF32TensorOpMath }

// sgemm is cublasSgemm: column-major C [m, n] = α·op(A)·op(B) + β·C with host scalars, which
// are read now (as cuBLAS does: under capture they become the kernel's arguments).
func (e *GPU) sgemm(_ uintptr, ta, tb int32, m, n, k int32, alpha unsafe.Pointer, a uint64, lda int32, b uint64, ldb int32, beta unsafe.Pointer, c uint64, ldc int32) int32 {
	al, be := *(*float32)(alpha), *(*float32)(beta)
	g := emuGemm{ta, tb, m, n, k, al, a, lda, b, ldb, be, c, ldc, e.tf32()}
	if e.graphs.capturing && e.graphs.ws == 0 {
		// cuBLAS 12 and later need a workspace of the caller's (cublasSetWorkspace) to be
		// captured safely: the emulator insists, so a device that forgot it fails here.
		return 15 // CUBLAS_STATUS_NOT_SUPPORTED
	}
	return e.enqueue("cublasSgemm", func(dry bool) int32 { return e.runSgemm(g, dry) })
}

// sgemmBatched is cublasSgemmBatched: count products whose operands' addresses it reads from
// the arrays a, b and c in device memory when the products run (as the GPU does, so a replayed
// graph reads the arrays as they are then).
func (e *GPU) sgemmBatched(_ uintptr, ta, tb int32, m, n, k int32, alpha unsafe.Pointer, a uint64, lda int32, b uint64, ldb int32, beta unsafe.Pointer, c uint64, ldc int32, count int32) int32 {
	al, be := *(*float32)(alpha), *(*float32)(beta)
	if e.graphs.capturing && e.graphs.ws == 0 {
		return 15 // CUBLAS_STATUS_NOT_SUPPORTED, as sgemm
	}
	if count < 0 {
		return 7
	}
	tf32 := e.tf32()
	return e.enqueue("cublasSgemmBatched", func(dry bool) int32 {
		if count == 0 {
			return 0
		}
		var arrs [3][]uint64
		for i, p := range []uint64{a, b, c} {
			bs, err := e.bytesAt(p, 8*uint64(count))
			if err != nil {
				e.fail(emuErrInvalidValue, "cublasSgemmBatched pointer array %c: %v", "ABC"[i], err)
				return 14
			}
			arrs[i] = unsafe.Slice((*uint64)(unsafe.Pointer(&bs[0])), count)
		}
		for i := range count {
			g := emuGemm{ta, tb, m, n, k, al, arrs[0][i], lda, arrs[1][i], ldb, be, arrs[2][i], ldc, tf32}
			if r := e.runSgemm(g, dry); r != 0 {
				return r
			}
		}
		return 0
	})
}

// emuGemm is one cublasSgemm call with its scalars' values.
type emuGemm struct {
	ta, tb  int32
	m, n, k int32
	alpha   float32
	a       uint64
	lda     int32
	b       uint64
	ldb     int32
	beta    float32
	c       uint64
	ldc     int32
	tf32    bool // CUBLAS_TF32_TENSOR_OP_MATH: A and B rounded to TF32, float32 accumulation
}

// runSgemm checks the operands and, unless dry, computes the product. Status 7 is
// CUBLAS_STATUS_INVALID_VALUE, 14 CUBLAS_STATUS_INTERNAL_ERROR (an operand outside its buffer,
// described in the error string of the driver table).
func (e *GPU) runSgemm(g emuGemm, dry bool) int32 {
	m, n, k := g.m, g.n, g.k
	if m < 0 || n < 0 || k < 0 {
		return 7
	}
	if m == 0 || n == 0 {
		return 0
	}
	// Stored (column-major) shapes: A is m×k, or k×m when transposed; B is k×n, or n×k.
	aRows, aCols := m, k
	if g.ta == cudalib.CublasOpT {
		aRows, aCols = k, m
	}
	bRows, bCols := k, n
	if g.tb == cudalib.CublasOpT {
		bRows, bCols = n, k
	}
	if g.lda < max(1, aRows) || g.ldb < max(1, bRows) || g.ldc < max(1, m) {
		return 7
	}
	var bad error
	view := func(name string, p uint64, rows, cols, ld int32) []float32 {
		if rows == 0 || cols == 0 {
			return nil
		}
		n := uint64(cols-1)*uint64(ld) + uint64(rows)
		bs, err := e.bytesAt(p, 4*n)
		if err != nil {
			bad = fmt.Errorf("cublasSgemm operand %s: %v", name, err)
			return nil
		}
		return unsafe.Slice((*float32)(unsafe.Pointer(&bs[0])), n)
	}
	av, bv, cv := view("A", g.a, aRows, aCols, g.lda), view("B", g.b, bRows, bCols, g.ldb), view("C", g.c, m, n, g.ldc)
	if cv == nil || (k > 0 && (av == nil || bv == nil)) {
		e.fail(emuErrInvalidValue, "%v", bad)
		return 14
	}
	if dry {
		return 0
	}
	// Column-major C = op(A)·op(B) is row-major Cᵀ = op(B)ᵀ·op(A)ᵀ over the same memory, with
	// the same transposition flags: one row-major sgemm.
	if g.tf32 {
		// The tensor cores' inputs: copies of A and B rounded to TF32 (device memory is
		// left as it is); the products and sums stay float32, as on the GPU.
		av, bv = tf32Copy(av), tf32Copy(bv)
	}
	flag := func(t int32) blas.Transpose {
		if t == cudalib.CublasOpT {
			return blas.Trans
		}
		return blas.NoTrans
	}
	gonum.Implementation{}.Sgemm(flag(g.tb), flag(g.ta), int(n), int(m), int(k), g.alpha, bv, int(g.ldb), av, int(g.lda), g.beta, cv, int(g.ldc))
	return 0
}

// tf32Copy is a copy of xs rounded to TF32 (RoundTF32).
func tf32Copy(xs []float32) []float32 {
	out := make([]float32, len(xs))
	for i, x := range xs {
		out[i] = RoundTF32(x)
	}
	return out
}

// newMemFile returns a sparse file of size bytes for the device memory: a memfd, or an
// unlinked temporary file where memfd_create is not available.
func newMemFile(size int64) (*os.File, error) {
	var f *os.File
	if fd, err := unix.MemfdCreate("rewiregnn-emu", unix.MFD_CLOEXEC); err == nil {
		f = os.NewFile(uintptr(fd), "memfd:rewiregnn-emu")
	} else {
		t, err := os.CreateTemp("", "rewiregnn-emu-*")
		if err != nil {
			return nil, fmt.Errorf("cuda: emulator: device memory: %w", err)
		}
		os.Remove(t.Name())
		f = t
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return nil, fmt.Errorf("cuda: emulator: device memory of %d bytes: %w", size, err)
	}
	return f, nil
}
