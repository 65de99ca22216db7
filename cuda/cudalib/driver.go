package cudalib

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// CUresult values the binding and its users act on.
const (
	CUDASuccess           = 0 // CUDA_SUCCESS
	CUDAErrorOutOfMemory  = 2 // CUDA_ERROR_OUT_OF_MEMORY
	cudaErrStubLibrary    = 34
	cudaErrInsuffDriver   = 35
	cudaErrNoDevice       = 100
	cudaErrUnsupportedPTX = 222
)

// StreamCaptureModeRelaxed is CU_STREAM_CAPTURE_MODE_RELAXED: a capture that does not forbid
// potentially unsafe calls (cuMemAlloc, …) in other threads. The package's capture needs it
// because each Device call may run on another OS thread than the one that began the capture.
const StreamCaptureModeRelaxed = 2

// Device attributes (CUdevice_attribute).
const (
	AttrMaxThreadsPerBlock = 1
	AttrMaxSharedPerBlock  = 8
	AttrMultiprocessors    = 16
	AttrCCMajor            = 75
	AttrCCMinor            = 76
)

// JIT options of cuModuleLoadDataEx (CUjit_option).
const (
	jitErrorLogBuffer     = 5
	jitErrorLogBufferSize = 6
)

// Driver is the function table of the driver API: the process-wide binding of libcuda.so.1
// (LoadDriver), or a table of Go functions standing in for it (the emulated GPU of package
// cuda/emu). Each field is the driver function of the same name with the "cu" prefix and any
// _v2 suffix dropped; each returns a CUresult. A nil EventCreate means the driver has no usable
// event functions.
type Driver struct {
	Path    string  // the library file (for the emulated GPU, its kernel program)
	Version Version // the newest CUDA version the driver supports
	Devices int     // the GPUs the driver reported when it was loaded
	// Attempts are the places libcuda was looked for (empty for a stand-in).
	Attempts []Attempt
	lib      *library

	Init               func(flags uint32) int32
	DriverGetVersion   func(v unsafe.Pointer) int32
	DeviceGetCount     func(n unsafe.Pointer) int32
	DeviceGet          func(dev unsafe.Pointer, ordinal int32) int32
	DeviceGetName      func(name unsafe.Pointer, n int32, dev int32) int32
	DeviceGetAttribute func(v unsafe.Pointer, attr int32, dev int32) int32
	DeviceTotalMem     func(bytes unsafe.Pointer, dev int32) int32
	PrimaryCtxRetain   func(ctx unsafe.Pointer, dev int32) int32
	PrimaryCtxRelease  func(dev int32) int32
	CtxSetCurrent      func(ctx uintptr) int32
	CtxSynchronize     func() int32
	StreamCreate       func(s unsafe.Pointer, flags uint32) int32
	StreamDestroy      func(s uintptr) int32
	StreamSynchronize  func(s uintptr) int32
	MemAlloc           func(p unsafe.Pointer, size uintptr) int32
	MemFree            func(p uint64) int32
	MemGetInfo         func(free, total unsafe.Pointer) int32
	MemcpyHtoDAsync    func(dst uint64, src unsafe.Pointer, size uintptr, s uintptr) int32
	MemcpyDtoHAsync    func(dst unsafe.Pointer, src uint64, size uintptr, s uintptr) int32
	MemcpyDtoDAsync    func(dst, src uint64, size uintptr, s uintptr) int32
	MemsetD32Async     func(dst uint64, v uint32, n uintptr, s uintptr) int32
	ModuleLoadDataEx   func(mod unsafe.Pointer, image unsafe.Pointer, nopt uint32, opts, vals unsafe.Pointer) int32
	ModuleGetFunction  func(fn unsafe.Pointer, mod uintptr, name unsafe.Pointer) int32
	ModuleUnload       func(mod uintptr) int32
	LaunchKernel       func(f uintptr, gx, gy, gz, bx, by, bz, shmem uint32, s uintptr, params, extra unsafe.Pointer) int32
	EventCreate        func(e unsafe.Pointer, flags uint32) int32
	EventRecord        func(e, s uintptr) int32
	EventSynchronize   func(e uintptr) int32
	EventElapsedTime   func(ms unsafe.Pointer, start, end uintptr) int32
	EventDestroy       func(e uintptr) int32
	GetErrorName       func(r int32, s **byte) int32
	GetErrorString     func(r int32, s **byte) int32

	// CUDA graphs (stream capture and replay; graph.go). Optional: a driver older than CUDA
	// 11.4 lacks cuGraphInstantiateWithFlags (and the _v2 fallback) or the capture calls, and
	// still computes. A nil StreamBeginCapture means no graphs; GraphsMissing says why.
	StreamBeginCapture func(s uintptr, mode uint32) int32
	StreamEndCapture   func(s uintptr, graph unsafe.Pointer) int32
	GraphInstantiate   func(exec unsafe.Pointer, graph uintptr, flags uint64) int32
	GraphLaunch        func(exec, s uintptr) int32
	GraphExecDestroy   func(exec uintptr) int32
	GraphDestroy       func(graph uintptr) int32
	GraphsMissing      string

	// Page-locked host memory and streams waiting for events (the pipelined uploads of
	// cuda.Device.UploadSide). Optional, all or none: without them a Device uploads from
	// pageable memory on its one stream. A nil MemHostAlloc means none; AsyncMissing says why.
	MemHostAlloc    func(p unsafe.Pointer, size uintptr, flags uint32) int32
	MemFreeHost     func(p unsafe.Pointer) int32
	StreamWaitEvent func(s, e uintptr, flags uint32) int32
	AsyncMissing    string
}

var (
	driverOnce sync.Once
	driverVal  *Driver
	driverErr  error
)

// libcudaNames are the driver library's names: the soname, then the development link.
var libcudaNames = []string{"libcuda.so.1", "libcuda.so"}

// LoadDriver opens and initialises the driver library once per process. A stub library (the
// toolkit's link-time stand-in) or a machine without a GPU is reported as an error that
// satisfies ErrNoDevice (a *ProbeError naming every place tried).
func LoadDriver() (*Driver, error) {
	driverOnce.Do(func() { driverVal, driverErr = openDriver() })
	return driverVal, driverErr
}

func openDriver() (*Driver, error) {
	var files []string
	var tried []Attempt
	if p := getenv(EnvLibCUDA); p != "" {
		files = []string{p}
	} else {
		files, tried = candidates(libcudaNames, searchDirs())
	}
	var lastNoDevice error
	for _, f := range files {
		lib, err := openLibrary(f)
		if err != nil {
			tried = append(tried, Attempt{f, err.Error()})
			continue
		}
		d, err := bindDriver(lib)
		if err != nil {
			lib.close()
			tried = append(tried, Attempt{f, err.Error()})
			continue
		}
		r := d.Init(0)
		if r != CUDASuccess {
			msg := fmt.Sprintf("cuInit: %s", d.ErrString(r))
			tried = append(tried, Attempt{f, msg})
			lib.close()
			if r == cudaErrNoDevice {
				lastNoDevice = fmt.Errorf("cuda: %s: %s: %w", f, msg, errNoDevice)
			}
			continue // a stub library, a driver without a GPU, …: try the next candidate
		}
		var v int32
		if r := d.DriverGetVersion(unsafe.Pointer(&v)); r != CUDASuccess {
			tried = append(tried, Attempt{f, "cuDriverGetVersion: " + d.ErrString(r)})
			lib.close()
			continue
		}
		d.Version = driverVersion(v)
		var n int32
		if r := d.DeviceGetCount(unsafe.Pointer(&n)); r != CUDASuccess {
			tried = append(tried, Attempt{f, "cuDeviceGetCount: " + d.ErrString(r)})
			lib.close()
			continue
		}
		d.Devices = int(n)
		tried = append(tried, Attempt{f, fmt.Sprintf("driver CUDA %v, %d devices: chosen", d.Version, n)})
		d.Attempts = tried
		return d, nil
	}
	if lastNoDevice != nil {
		return nil, fmt.Errorf("%w\n%v", lastNoDevice, &ProbeError{Lib: "libcuda", Reason: "no usable driver", Attempts: tried})
	}
	return nil, &ProbeError{Lib: "libcuda", Reason: "no usable NVIDIA driver library (is this a GPU machine?)", Attempts: tried}
}

func bindDriver(lib *library) (*Driver, error) {
	d := &Driver{Path: lib.path, lib: lib}
	err := lib.bindAll(map[string]any{
		"cuInit":                       &d.Init,
		"cuDriverGetVersion":           &d.DriverGetVersion,
		"cuDeviceGetCount":             &d.DeviceGetCount,
		"cuDeviceGet":                  &d.DeviceGet,
		"cuDeviceGetName":              &d.DeviceGetName,
		"cuDeviceGetAttribute":         &d.DeviceGetAttribute,
		"cuDeviceTotalMem_v2":          &d.DeviceTotalMem,
		"cuDevicePrimaryCtxRetain":     &d.PrimaryCtxRetain,
		"cuDevicePrimaryCtxRelease_v2": &d.PrimaryCtxRelease,
		"cuCtxSetCurrent":              &d.CtxSetCurrent,
		"cuCtxSynchronize":             &d.CtxSynchronize,
		"cuStreamCreate":               &d.StreamCreate,
		"cuStreamDestroy_v2":           &d.StreamDestroy,
		"cuStreamSynchronize":          &d.StreamSynchronize,
		"cuMemAlloc_v2":                &d.MemAlloc,
		"cuMemFree_v2":                 &d.MemFree,
		"cuMemGetInfo_v2":              &d.MemGetInfo,
		"cuMemcpyHtoDAsync_v2":         &d.MemcpyHtoDAsync,
		"cuMemcpyDtoHAsync_v2":         &d.MemcpyDtoHAsync,
		"cuMemcpyDtoDAsync_v2":         &d.MemcpyDtoDAsync,
		"cuMemsetD32Async":             &d.MemsetD32Async,
		"cuModuleLoadDataEx":           &d.ModuleLoadDataEx,
		"cuModuleGetFunction":          &d.ModuleGetFunction,
		"cuModuleUnload":               &d.ModuleUnload,
		"cuLaunchKernel":               &d.LaunchKernel,
		"cuGetErrorName":               &d.GetErrorName,
		"cuGetErrorString":             &d.GetErrorString,
	})
	if err != nil {
		return nil, err
	}
	// Events are for timing only: a driver without them still computes. The elapsed-time call
	// has a _v2 twin (same parameters) in newer drivers, used if the original name is gone.
	elapsed := lib.bind(&d.EventElapsedTime, "cuEventElapsedTime")
	if elapsed != nil {
		elapsed = lib.bind(&d.EventElapsedTime, "cuEventElapsedTime_v2")
	}
	if errors.Join(elapsed, lib.bind(&d.EventCreate, "cuEventCreate"), lib.bind(&d.EventRecord, "cuEventRecord"),
		lib.bind(&d.EventSynchronize, "cuEventSynchronize"), lib.bind(&d.EventDestroy, "cuEventDestroy_v2")) != nil {
		d.EventCreate = nil
	}
	bindGraphs(d, lib)
	bindAsync(d, lib)
	return d, nil
}

// bindAsync binds the page-locked memory and event-wait functions, all or none (AsyncMissing
// then names what is missing). They need the event functions too.
func bindAsync(d *Driver, lib *library) {
	var noEvents error
	if d.EventCreate == nil {
		noEvents = errors.New("no usable event functions")
	}
	if err := errors.Join(noEvents, lib.bind(&d.MemHostAlloc, "cuMemHostAlloc"), lib.bind(&d.MemFreeHost, "cuMemFreeHost"),
		lib.bind(&d.StreamWaitEvent, "cuStreamWaitEvent")); err != nil {
		d.MemHostAlloc, d.MemFreeHost, d.StreamWaitEvent = nil, nil, nil
		d.AsyncMissing = strings.ReplaceAll(err.Error(), "\n", "; ")
	}
}

// bindGraphs binds the graph functions, all or none (GraphsMissing then names what is missing).
// cuGraphInstantiate has had two forms: CUDA 11's cuGraphInstantiate_v2 (error node and log
// buffer) and, since 11.4, cuGraphInstantiateWithFlags, which CUDA 12's header maps
// cuGraphInstantiate to; the flags form is used where the driver exports it.
func bindGraphs(d *Driver, lib *library) {
	inst := lib.bind(&d.GraphInstantiate, "cuGraphInstantiateWithFlags")
	if inst != nil {
		var v2 func(exec unsafe.Pointer, graph uintptr, errNode, log unsafe.Pointer, logSize uintptr) int32
		if lib.bind(&v2, "cuGraphInstantiate_v2") == nil {
			inst = nil
			d.GraphInstantiate = func(exec unsafe.Pointer, graph uintptr, _ uint64) int32 { return v2(exec, graph, nil, nil, 0) }
		} else {
			inst = fmt.Errorf("%w (nor cuGraphInstantiate_v2)", inst)
		}
	}
	if err := errors.Join(inst, lib.bind(&d.StreamBeginCapture, "cuStreamBeginCapture_v2"), lib.bind(&d.StreamEndCapture, "cuStreamEndCapture"),
		lib.bind(&d.GraphLaunch, "cuGraphLaunch"), lib.bind(&d.GraphExecDestroy, "cuGraphExecDestroy"), lib.bind(&d.GraphDestroy, "cuGraphDestroy")); err != nil {
		d.StreamBeginCapture, d.StreamEndCapture, d.GraphInstantiate, d.GraphLaunch, d.GraphExecDestroy, d.GraphDestroy = nil, nil, nil, nil, nil, nil
		d.GraphsMissing = strings.ReplaceAll(err.Error(), "\n", "; ")
	}
}

// ErrString names a CUresult: "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory".
func (d *Driver) ErrString(r int32) string {
	var name, desc *byte
	if d.GetErrorName != nil {
		d.GetErrorName(r, &name)
	}
	if d.GetErrorString != nil {
		d.GetErrorString(r, &desc)
	}
	n, s := CString(name), CString(desc)
	switch {
	case n != "" && s != "":
		return fmt.Sprintf("%s (%d): %s", n, r, s)
	case n != "":
		return fmt.Sprintf("%s (%d)", n, r)
	}
	return fmt.Sprintf("CUresult %d", r)
}

// Result is a failed driver call.
type Result struct {
	Call string
	Code int32
	Text string
}

func (e *Result) Error() string { return fmt.Sprintf("cuda: %s: %s", e.Call, e.Text) }

// Check turns a CUresult into an error naming the call (nil for CUDA_SUCCESS).
func (d *Driver) Check(call string, r int32) error {
	if r == CUDASuccess {
		return nil
	}
	return &Result{Call: call, Code: r, Text: d.ErrString(r)}
}

// CString copies a NUL-terminated C string (owned by the library) into Go.
func CString(p *byte) string {
	if p == nil {
		return ""
	}
	var b []byte
	for i := 0; i < 1<<16; i++ {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(p), i))
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}

// CheckOrdinal fails, with an error that satisfies ErrNoDevice, when the driver reported no GPU
// numbered ordinal.
func (d *Driver) CheckOrdinal(ordinal int) error {
	if ordinal < 0 || ordinal >= d.Devices {
		return fmt.Errorf("cuda: device %d requested, %s reports %d devices: %w", ordinal, d.Path, d.Devices, errNoDevice)
	}
	return nil
}

// LoadModule loads PTX or device code into the current context; JIT errors come back with the
// JIT's log.
func (d *Driver) LoadModule(name string, image []byte) (uintptr, error) {
	var pin runtime.Pinner
	defer pin.Unpin()
	img := append(append([]byte(nil), image...), 0) // PTX must be NUL-terminated
	logBuf := make([]byte, 8192)
	pin.Pin(&img[0])
	pin.Pin(&logBuf[0])
	opts := []int32{jitErrorLogBuffer, jitErrorLogBufferSize}
	vals := []uintptr{uintptr(unsafe.Pointer(&logBuf[0])), uintptr(len(logBuf))}
	pin.Pin(&opts[0])
	pin.Pin(&vals[0])
	var mod uintptr
	r := d.ModuleLoadDataEx(unsafe.Pointer(&mod), unsafe.Pointer(&img[0]), uint32(len(opts)), unsafe.Pointer(&opts[0]), unsafe.Pointer(&vals[0]))
	if r != CUDASuccess {
		err := d.Check("cuModuleLoadDataEx("+name+")", r)
		if log := CString(&logBuf[0]); log != "" {
			err = fmt.Errorf("%w\nJIT log:\n%s", err, log)
		}
		return 0, err
	}
	return mod, nil
}

// Function looks kernel name up in module mod.
func (d *Driver) Function(mod uintptr, name string) (uintptr, error) {
	var pin runtime.Pinner
	defer pin.Unpin()
	var fn uintptr
	if err := d.Check("cuModuleGetFunction("+name+")", d.ModuleGetFunction(unsafe.Pointer(&fn), mod, cstr(&pin, name))); err != nil {
		return 0, err
	}
	return fn, nil
}
