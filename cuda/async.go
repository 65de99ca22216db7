package cuda

// Pipelined uploads: page-locked host buffers, a side stream that copies them to the device
// while the device's stream computes, and events through which the two streams (and the host)
// wait for each other. A driver without page-locked memory or event waits (cudalib.Driver's
// AsyncMissing) gets the same calls on the one stream, from pageable memory: slower, in the
// same order.

import (
	"fmt"
	"runtime"
	"unsafe"
)

// cuEventDisableTiming is CU_EVENT_DISABLE_TIMING: an event only for ordering, which the
// driver records and waits for more cheaply than a timing event.
const cuEventDisableTiming = 2

// Pipelined reports whether the device has a side stream and page-locked host memory (else
// UploadSide queues on the device's stream, and HostAlloc returns pageable memory).
func (d *Device) Pipelined() bool { return d.side != 0 }

// openSideLocked creates the side stream where the driver has what pipelining needs.
func (d *Device) openSideLocked() error {
	if d.drv.MemHostAlloc == nil {
		return nil
	}
	return d.drv.Check("cuStreamCreate (side stream)", d.drv.StreamCreate(unsafe.Pointer(&d.side), cuStreamNonBlocking))
}

// syncLocked waits for the device's stream and its side stream.
func (d *Device) syncLocked() error {
	if d.side != 0 {
		if err := d.drv.Check("cuStreamSynchronize (side stream)", d.drv.StreamSynchronize(d.side)); err != nil {
			return err
		}
	}
	return d.drv.Check("cuStreamSynchronize", d.drv.StreamSynchronize(d.stream))
}

// HostBuf is host memory for copies to and from the device: page-locked (cuMemHostAlloc)
// where the device is Pipelined, which the device reads or writes when the copy runs, not
// when it is queued; pageable Go memory otherwise.
type HostBuf struct {
	d     *Device
	p     unsafe.Pointer
	bytes int
	heap  []byte // the pageable fallback
}

// HostAlloc returns a host buffer of at least bytes bytes (4-byte aligned), freed by Free.
func (d *Device) HostAlloc(bytes int) (*HostBuf, error) {
	h := &HostBuf{d: d, bytes: max(bytes, 4)}
	if !d.Pipelined() {
		h.heap = make([]byte, h.bytes)
		h.p = unsafe.Pointer(&h.heap[0])
		return h, nil
	}
	err := d.do(func() error {
		return d.drv.Check(fmt.Sprintf("cuMemHostAlloc(%d bytes)", h.bytes), d.drv.MemHostAlloc(unsafe.Pointer(&h.p), uintptr(h.bytes), 0))
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// Int32s is the buffer as int32 values (all of it).
func (h *HostBuf) Int32s() []int32 { return unsafe.Slice((*int32)(h.p), h.bytes/4) }

// Float32s is the buffer as float32 values (the same memory as Int32s).
func (h *HostBuf) Float32s() []float32 { return unsafe.Slice((*float32)(h.p), h.bytes/4) }

// Free releases the buffer after the work queued on it (cuMemFreeHost waits for it).
func (h *HostBuf) Free() error {
	if h == nil || h.p == nil {
		return nil
	}
	p := h.p
	h.p, h.heap = nil, nil
	if !h.d.Pipelined() {
		return nil
	}
	return h.d.do(func() error { return h.d.drv.Check("cuMemFreeHost", h.d.drv.MemFreeHost(p)) })
}

// NewEvent creates an event for ordering (not timing). Record it with RecordEvent or as
// UploadSide's done; wait for it with WaitEvent (the device's stream) or Sync (the host).
func (d *Device) NewEvent() (*Event, error) {
	ev := &Event{d: d}
	if d.drv.EventCreate == nil {
		return nil, fmt.Errorf("cuda: %s has no usable event functions", d.DriverPath)
	}
	err := d.do(func() error {
		return d.drv.Check("cuEventCreate", d.drv.EventCreate(unsafe.Pointer(&ev.e), cuEventDisableTiming))
	})
	return ev, err
}

// RecordEvent records ev at this point of the device's stream (nil: nothing).
func (d *Device) RecordEvent(ev *Event) error {
	if ev == nil {
		return nil
	}
	return d.do(func() error {
		if err := d.refuseInCaptureLocked("event record"); err != nil {
			return err
		}
		return d.drv.Check("cuEventRecord", d.drv.EventRecord(ev.e, d.stream))
	})
}

// WaitEvent makes the work queued on the device's stream from now on wait for ev (recorded on
// either stream). On a device that is not Pipelined everything is on one stream already.
func (d *Device) WaitEvent(ev *Event) error {
	if !d.Pipelined() || ev == nil {
		return nil
	}
	return d.do(func() error {
		if err := d.refuseInCaptureLocked("event wait"); err != nil {
			return err
		}
		return d.drv.Check("cuStreamWaitEvent", d.drv.StreamWaitEvent(d.stream, ev.e, 0))
	})
}

// Sync waits on the host until the work before ev's last record has run (nil: nothing).
func (e *Event) Sync() error {
	if e == nil {
		return nil
	}
	return e.d.do(func() error { return e.d.drv.Check("cuEventSynchronize", e.d.drv.EventSynchronize(e.e)) })
}

// UploadSide queues, on the side stream, a wait for after (nil: none), a copy of src into dst
// (which must hold len(src) elements), and a record of done (nil: none). src should lie in a HostBuf:
// the copy reads it when it runs, so src must not change before done (done.Sync). On a device
// that is not Pipelined the copy is queued on the device's stream and done recorded there.
func (d *Device) UploadSide(dst DevPtr, src []int32, after, done *Event) error {
	if len(src) == 0 {
		return nil
	}
	if dst == 0 {
		return fmt.Errorf("cuda: copy of %d elements to a nil device buffer", len(src))
	}
	s := d.side
	if s == 0 {
		s, after = d.stream, nil
	}
	return d.do(func() error {
		if err := d.refuseInCaptureLocked("upload"); err != nil {
			return err
		}
		if after != nil {
			if err := d.drv.Check("cuStreamWaitEvent (side stream)", d.drv.StreamWaitEvent(s, after.e, 0)); err != nil {
				return err
			}
		}
		var pin runtime.Pinner // a pageable src is Go memory
		defer pin.Unpin()
		pin.Pin(&src[0])
		n := uintptr(len(src)) * 4
		if err := d.queueOnLocked(s, "upload", 1, func() error {
			return d.drv.Check(fmt.Sprintf("cuMemcpyHtoDAsync(%d bytes)", n), d.drv.MemcpyHtoDAsync(uint64(dst), unsafe.Pointer(&src[0]), n, s))
		}); err != nil {
			return err
		}
		if done == nil {
			return nil
		}
		return d.drv.Check("cuEventRecord", d.drv.EventRecord(done.e, s))
	})
}

// CopyFromDeviceAsync queues a copy of src into dst (len(dst) elements) on the device's stream
// and returns without waiting: dst (a HostBuf's memory, for the copy to be asynchronous) holds
// the values once an event recorded after it has passed (RecordEvent, Event.Sync).
func CopyFromDeviceAsync[T Elem](d *Device, dst []T, src DevPtr) error {
	return copyFrom(d, dst, src, false)
}
