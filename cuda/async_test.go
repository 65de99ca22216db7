package cuda

import (
	"math/rand/v2"
	"testing"
)

// TestGPUPipelinedUpload: an upload on the side stream from page-locked memory, waited for by
// the device's stream, reaches a kernel there; a download into page-locked memory is there
// once an event after it has passed; each buffer and event is reused for a second round, as
// the executor reuses them batch after batch.
func TestGPUPipelinedUpload(t *testing.T) {
	defer skipWithoutGPU(t)
	d, k := gpu(t)
	g := dev{t, d}
	const n = 1000
	rng := rand.New(rand.NewPCG(3, 4))
	in, out := hostBuf(t, d, n), hostBuf(t, d, n)
	if d.Pipelined() != (d.drv.MemHostAlloc != nil) {
		t.Fatalf("Pipelined %v, yet the driver's page-locked memory is bound: %v", d.Pipelined(), d.drv.MemHostAlloc != nil)
	}
	uploaded, consumed, read := newEvent(t, d), newEvent(t, d), newEvent(t, d)
	x, y := g.poison(n), g.poison(n)
	for round := 0; round < 2; round++ {
		if round > 0 {
			must(t, uploaded.Sync()) // the host may write in again
		}
		want := make([]float32, n)
		xs := in.Float32s()[:n]
		for i := range xs {
			xs[i] = float32(rng.NormFloat64())
			want[i] = max(xs[i], 0)
		}
		var after *Event
		if round > 0 {
			after = consumed // the kernel of round 0 has read x
		}
		must(t, d.UploadSide(x, in.Int32s()[:n], after, uploaded))
		must(t, d.WaitEvent(uploaded))
		must(t, k.Relu(y, x, n))
		must(t, d.RecordEvent(consumed))
		must(t, CopyFromDeviceAsync(d, out.Float32s()[:n], y))
		must(t, d.RecordEvent(read))
		must(t, read.Sync())
		sameBits32(t, "relu of the pipelined upload", out.Float32s()[:n], want)
	}
}

// TestEmulatedCopiesRunLate: on the emulated GPU a copy to or from page-locked memory runs
// only when something must see it done, so a missing wait shows as wrong values: a host write
// before the upload's event reaches the device; the device's stream without WaitEvent reads
// what was there before; the host reads a download's destination unchanged until its event.
func TestEmulatedCopiesRunLate(t *testing.T) {
	d, _ := graphDevice(t)
	if d.emu == nil || !d.Pipelined() {
		t.Skip("the late copies are the emulated GPU's schedule")
	}
	g := dev{t, d}
	const n = 8
	in, out := hostBuf(t, d, n), hostBuf(t, d, n)
	x := g.up([]float32{1, 1, 1, 1, 1, 1, 1, 1})
	done := newEvent(t, d)
	xs := in.Float32s()[:n]
	for i := range xs {
		xs[i] = 2
	}
	must(t, d.UploadSide(x, in.Int32s()[:n], nil, done))
	if p := d.emu.PendingCopies(); p != 1 {
		t.Fatalf("%d copies pending after the upload, want 1", p)
	}
	xs[0] = 3 // too early: the copy has not run
	ys := out.Float32s()[:n]
	must(t, CopyFromDeviceAsync(d, ys, x)) // on the device's stream, which did not wait
	if ys[0] != 0 {
		t.Fatalf("the download ran before its event: %v", ys)
	}
	read := newEvent(t, d)
	must(t, d.RecordEvent(read))
	must(t, read.Sync())
	if ys[0] != 1 || ys[1] != 1 {
		t.Fatalf("without waiting for the upload the device's stream read %v, want the old values 1", ys)
	}
	must(t, d.WaitEvent(done))
	must(t, CopyFromDeviceAsync(d, ys, x))
	must(t, d.RecordEvent(read))
	must(t, read.Sync())
	if ys[0] != 3 || ys[1] != 2 {
		t.Fatalf("after the wait the device holds %v, want the host's values when the copy ran (3, 2, …)", ys)
	}
}

func newEvent(t *testing.T, d *Device) *Event {
	t.Helper()
	ev, err := d.NewEvent()
	must(t, err)
	t.Cleanup(func() { ev.Destroy() })
	return ev
}

// hostBuf returns a host buffer of n 4-byte values, freed with the test.
func hostBuf(t *testing.T, d *Device, n int) *HostBuf {
	t.Helper()
	h, err := d.HostAlloc(4 * n)
	must(t, err)
	t.Cleanup(func() { h.Free() })
	return h
}
