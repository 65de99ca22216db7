package gpuexec

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/cuda"
	"github.com/rewiregnn/rewiregnn/cuda/emu"
	"github.com/rewiregnn/rewiregnn/gpuopt"
)

// Backend is the device the executor drives: memory, copies and the launchers. Work is queued
// in order on one stream, but for UploadSide's copies on a side stream, which events order
// against it (pipeline.go); Download waits for everything queued on the stream before it.
type Backend interface {
	Launchers
	Alloc(elems int) (cuda.DevPtr, error) // float32 or int32 elements
	Free(p cuda.DevPtr) error
	UploadF32(dst cuda.DevPtr, src []float32) error
	UploadI32(dst cuda.DevPtr, src []int32) error
	Download(dst []float32, src cuda.DevPtr) error
	Copy(dst, src cuda.DevPtr, n int) error
	Fill(p cuda.DevPtr, n int, v float32) error
	// Trim hands the allocator's cached blocks back to the device (after the work queued).
	Trim() error
	// BeginCapture and EndCapture record the work queued between them, instead of running
	// it, as a graph that replays it (cuda.Device.BeginCapture).
	BeginCapture() error
	EndCapture() (Graph, error)
	// Pipelined uploads (cuda/async.go): host images, the side stream and the events that
	// order it against the device's stream and the host.
	HostAlloc(bytes int) (*cuda.HostBuf, error)
	NewEvent() (*cuda.Event, error)
	UploadSide(dst cuda.DevPtr, src []int32, after, done *cuda.Event) error
	WaitEvent(ev *cuda.Event) error
	RecordEvent(ev *cuda.Event) error
	// DownloadAsync queues a copy into dst (a HostBuf's memory) and returns at once: an event
	// recorded after it says when dst holds the values.
	DownloadAsync(dst []float32, src cuda.DevPtr) error
	// Offset is the address of element i of the buffer at p.
	Offset(p cuda.DevPtr, i int) cuda.DevPtr
	// Memory reports the high-water mark of the allocator (bytes) and, where the device can
	// tell, the device's used and total memory (ok false where it cannot).
	Memory() (peak, used, total int64, ok bool)
	ResetPeak()
	String() string
}

// Graph is a captured run: Launch replays it with one host call (*cuda.Graph).
type Graph interface {
	Launch() error
	Nodes() int
	Destroy() error
}

// CUDA is the Backend of a GPU: a *cuda.Device and its compiled kernels.
type CUDA struct {
	*cuda.Kernels
	Dev *cuda.Device
}

// OpenCUDA opens GPU ordinal and compiles (or loads from the kernel cache) every kernel. Where
// no driver or GPU exists the error satisfies cudalib.ErrNoDevice and lists every place probed.
func OpenCUDA(ordinal int) (*CUDA, error) { return OpenCUDAWith(ordinal, gpuopt.Default()) }

// OpenCUDAWith is OpenCUDA with the run's GPU options o (cuda.OpenWith: batched products,
// narrow weight gradients, kernel definitions and architecture).
func OpenCUDAWith(ordinal int, o gpuopt.Options) (*CUDA, error) {
	return withKernels(cuda.OpenWith(ordinal, o))
}

// OpenEmulated opens the emulated GPU (cuda.OpenEmulator): the same kernels, launchers,
// allocator and executor as on a GPU, with the kernels compiled for the CPU by the system C++
// compiler. It is slow (every GPU thread is an OS thread, or a fiber in the deterministic
// schedule) and meant for tests and for checking the GPU path on a machine without one.
// Without a C++ compiler the error wraps emu.ErrNoCompiler.
func OpenEmulated(o emu.Options) (*CUDA, error) { return OpenEmulatedWith(o, gpuopt.Default()) }

// OpenEmulatedWith is OpenEmulated with the run's GPU options g (cuda.OpenEmulatorWith).
func OpenEmulatedWith(o emu.Options, g gpuopt.Options) (*CUDA, error) {
	return withKernels(cuda.OpenEmulatorWith(o, g))
}

// withKernels completes an opened device with its kernels.
func withKernels(d *cuda.Device, err error) (*CUDA, error) {
	if err != nil {
		return nil, err
	}
	k, err := d.Kernels()
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("gpu: %v: kernels: %w", d, err)
	}
	return &CUDA{Kernels: k, Dev: d}, nil
}

func (c *CUDA) Alloc(elems int) (cuda.DevPtr, error) { return c.Dev.Alloc(4 * elems) }
func (c *CUDA) Free(p cuda.DevPtr) error             { return c.Dev.Free(p) }
func (c *CUDA) UploadF32(dst cuda.DevPtr, src []float32) error {
	return cuda.CopyToDevice(c.Dev, dst, src)
}
func (c *CUDA) UploadI32(dst cuda.DevPtr, src []int32) error {
	return cuda.CopyToDevice(c.Dev, dst, src)
}
func (c *CUDA) Download(dst []float32, src cuda.DevPtr) error {
	return cuda.CopyFromDevice(c.Dev, dst, src)
}
func (c *CUDA) HostAlloc(bytes int) (*cuda.HostBuf, error) { return c.Dev.HostAlloc(bytes) }
func (c *CUDA) NewEvent() (*cuda.Event, error)             { return c.Dev.NewEvent() }
func (c *CUDA) UploadSide(dst cuda.DevPtr, src []int32, after, done *cuda.Event) error {
	return c.Dev.UploadSide(dst, src, after, done)
}
func (c *CUDA) WaitEvent(ev *cuda.Event) error { return c.Dev.WaitEvent(ev) }
func (c *CUDA) DownloadAsync(dst []float32, src cuda.DevPtr) error {
	return cuda.CopyFromDeviceAsync(c.Dev, dst, src)
}
func (c *CUDA) RecordEvent(ev *cuda.Event) error           { return c.Dev.RecordEvent(ev) }
func (c *CUDA) Copy(dst, src cuda.DevPtr, n int) error     { return c.Dev.Copy(dst, src, n) }
func (c *CUDA) Fill(p cuda.DevPtr, n int, v float32) error { return c.Dev.Fill(p, n, v) }
func (c *CUDA) Offset(p cuda.DevPtr, i int) cuda.DevPtr    { return p + cuda.DevPtr(4*i) }
func (c *CUDA) Trim() error                                { return c.Dev.Trim() }
func (c *CUDA) BeginCapture() error                        { return c.Dev.BeginCapture() }
func (c *CUDA) EndCapture() (Graph, error) {
	g, err := c.Dev.EndCapture()
	if err != nil {
		return nil, err
	}
	return g, nil
}
func (c *CUDA) Memory() (peak, used, total int64, ok bool) {
	peak = c.Dev.PeakLive()
	free, total, err := c.Dev.MemInfo()
	if err != nil {
		return peak, 0, 0, true
	}
	return peak, total - free, total, true
}
func (c *CUDA) ResetPeak()     { c.Dev.ResetPeak() }
func (c *CUDA) String() string { return c.Dev.String() + "; " + c.Kernels.String() }

// Close releases the device.
func (c *CUDA) Close() error { return c.Dev.Close() }

var _ Backend = (*CUDA)(nil)
