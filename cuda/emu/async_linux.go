//go:build linux

package emu

// Streams, page-locked host memory and events that streams wait for, on the emulated GPU.
//
// Work on the emulated device runs when it is queued, in the order of the calls, which is a
// schedule a GPU may also take. Copies between the device and page-locked host memory are the
// exception: as late as a GPU may run them, they run only when something has to see them done
// (later work on their own stream, a wait for an event recorded after them, a synchronisation,
// a free), so a host that writes page-locked memory an upload still reads, or reads memory a
// download has not yet written, or a stream that reads an upload of another stream without
// waiting for its event, sees the wrong bytes here as it could on a GPU. Copies to and from
// pageable memory are synchronous, as the driver stages them.

import (
	"fmt"
	"sort"
	"unsafe"

	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
	"golang.org/x/sys/unix"
)

// emuAsync is the device's streams, its page-locked host buffers and the copies not yet run.
type emuAsync struct {
	streams  uintptr              // streams created so far (handles 1…streams; 0 is the default)
	pinned   map[uintptr][]byte   // page-locked host buffers by address (anonymous mappings)
	pending  map[uintptr][]func() // by stream: copies touching page-locked memory, in order
	evStream map[uintptr]uintptr  // event → the stream it was last recorded on
	blas     uintptr              // the stream cuBLAS queues on (cublasSetStream)
}

// asyncDriver fills the stream, event and page-locked memory entries of the driver table and
// wraps the entries that queue work, so that each first runs the copies queued before it on
// its stream.
func (e *GPU) asyncDriver(d *cudalib.Driver) {
	a := &e.async
	a.pinned, a.pending, a.evStream = map[uintptr][]byte{}, map[uintptr][]func(){}, map[uintptr]uintptr{}
	d.StreamCreate = func(s unsafe.Pointer, _ uint32) int32 {
		a.streams++
		*(*uintptr)(s) = a.streams
		return cudalib.CUDASuccess
	}
	d.StreamDestroy = func(s uintptr) int32 { e.flush(s); return cudalib.CUDASuccess }
	sync := d.StreamSynchronize
	d.StreamSynchronize = func(s uintptr) int32 {
		if !e.graphs.capturing {
			e.flush(s)
		}
		return sync(s)
	}
	d.CtxSynchronize = func() int32 { e.flushAll(); return cudalib.CUDASuccess }
	free := d.MemFree
	d.MemFree = func(p uint64) int32 { e.flushAll(); return free(p) }
	d.MemcpyHtoDAsync = func(dst uint64, src unsafe.Pointer, size uintptr, s uintptr) int32 {
		return e.hostCopy("cuMemcpyHtoD", dst, src, size, s, true)
	}
	d.MemcpyDtoHAsync = func(dst unsafe.Pointer, src uint64, size uintptr, s uintptr) int32 {
		return e.hostCopy("cuMemcpyDtoH", src, dst, size, s, false)
	}
	dtod, memset, launch := d.MemcpyDtoDAsync, d.MemsetD32Async, d.LaunchKernel
	d.MemcpyDtoDAsync = func(dst, src uint64, size uintptr, s uintptr) int32 {
		e.flush(s)
		return dtod(dst, src, size, s)
	}
	d.MemsetD32Async = func(dst uint64, v uint32, n uintptr, s uintptr) int32 {
		e.flush(s)
		return memset(dst, v, n, s)
	}
	d.LaunchKernel = func(f uintptr, gx, gy, gz, bx, by, bz, shmem uint32, s uintptr, params, extra unsafe.Pointer) int32 {
		e.flush(s)
		return launch(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra)
	}
	record := d.EventRecord
	d.EventRecord = func(ev, s uintptr) int32 { a.evStream[ev] = s; return record(ev, s) }
	d.EventSynchronize = func(ev uintptr) int32 { e.flushEvent(ev); return cudalib.CUDASuccess }
	// Waiting for an event never recorded has no effect, as with the driver.
	d.StreamWaitEvent = func(s, ev uintptr, _ uint32) int32 { e.flushEvent(ev); return cudalib.CUDASuccess }
	d.MemHostAlloc = func(p unsafe.Pointer, size uintptr, _ uint32) int32 {
		n := (int(size) + pageSize - 1) &^ (pageSize - 1)
		mem, err := unix.Mmap(-1, 0, max(n, pageSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return e.fail(cudalib.CUDAErrorOutOfMemory, "cuMemHostAlloc(%d bytes): %v", size, err)
		}
		at := uintptr(unsafe.Pointer(&mem[0]))
		a.pinned[at] = mem
		*(*unsafe.Pointer)(p) = unsafe.Pointer(&mem[0])
		return cudalib.CUDASuccess
	}
	d.MemFreeHost = func(p unsafe.Pointer) int32 {
		mem, ok := a.pinned[uintptr(p)]
		if !ok {
			return e.fail(emuErrInvalidValue, "cuMemFreeHost: %p is not page-locked memory from cuMemHostAlloc", p)
		}
		e.flushAll()
		delete(a.pinned, uintptr(p))
		if err := unix.Munmap(mem); err != nil {
			return e.fail(emuErrInvalidValue, "cuMemFreeHost: %v", err)
		}
		return cudalib.CUDASuccess
	}
	if launch := d.GraphLaunch; launch != nil {
		d.GraphLaunch = func(exec, s uintptr) int32 { e.flush(s); return launch(exec, s) }
	}
}

// hostCopy queues a copy of size bytes between device address dev and host memory at host on
// stream s, to the device (up) or from it: later, where the host memory is page-locked (the
// device bytes are those at this point of the stream: later work on it runs the copy first,
// and other streams' writes are races), else now, after the stream's queued copies.
func (e *GPU) hostCopy(call string, dev uint64, host unsafe.Pointer, size uintptr, s uintptr, up bool) int32 {
	if r := e.refuseInCapture(call + "Async (host memory)"); r != cudalib.CUDASuccess {
		return r
	}
	b, err := e.bytesAt(dev, uint64(size))
	if err != nil {
		return e.fail(emuErrInvalidValue, "%s: %v", call, err)
	}
	h := unsafe.Slice((*byte)(host), size)
	run := func() { copy(h, b) }
	if up {
		run = func() { copy(b, h) }
	}
	if e.isPinned(host, size) {
		e.async.pending[s] = append(e.async.pending[s], run)
		return cudalib.CUDASuccess
	}
	e.flush(s)
	run()
	return cudalib.CUDASuccess
}

// isPinned reports whether the n bytes at p lie in one page-locked buffer.
func (e *GPU) isPinned(p unsafe.Pointer, n uintptr) bool {
	at := uintptr(p)
	for start, mem := range e.async.pinned {
		if at >= start && at+n <= start+uintptr(len(mem)) {
			return true
		}
	}
	return false
}

// flush runs the copies queued on stream s.
func (e *GPU) flush(s uintptr) {
	q := e.async.pending[s]
	if len(q) == 0 {
		return
	}
	delete(e.async.pending, s)
	for _, f := range q {
		f()
	}
}

// flushEvent runs what the stream event ev was last recorded on has queued: everything
// before the record, and what followed it (a GPU may have run that too).
func (e *GPU) flushEvent(ev uintptr) {
	if s, ok := e.async.evStream[ev]; ok {
		e.flush(s)
	}
}

// flushAll runs every stream's queued copies, streams in handle order.
func (e *GPU) flushAll() {
	ss := make([]uintptr, 0, len(e.async.pending))
	for s := range e.async.pending {
		ss = append(ss, s)
	}
	sort.Slice(ss, func(i, j int) bool { return ss[i] < ss[j] })
	for _, s := range ss {
		e.flush(s)
	}
}

// PendingCopies is the number of copies to or from page-locked memory queued and not yet run
// (for tests of the schedule).
func (e *GPU) PendingCopies() int {
	n := 0
	for _, q := range e.async.pending {
		n += len(q)
	}
	return n
}

// releasePinned unmaps the page-locked buffers still held when the device closes.
func (e *GPU) releasePinned() error {
	var err error
	for at, mem := range e.async.pinned {
		if uerr := unix.Munmap(mem); uerr != nil && err == nil {
			err = fmt.Errorf("cuda: emulator: unmapping page-locked host memory: %w", uerr)
		}
		delete(e.async.pinned, at)
	}
	return err
}
