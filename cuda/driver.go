package cuda

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// CUresult values this package acts on.
const (
	cudaSuccess           = 0
	cudaErrOutOfMemory    = 2
	cudaErrStubLibrary    = 34
	cudaErrInsuffDriver   = 35
	cudaErrNoDevice       = 100
	cudaErrUnsupportedPTX = 222
)

// Device attributes (CUdevice_attribute).
const (
	attrMaxThreadsPerBlock = 1
	attrMaxSharedPerBlock  = 8
	attrMultiprocessors    = 16
	attrCCMajor            = 75
	attrCCMinor            = 76
)

// JIT options of cuModuleLoadDataEx (CUjit_option).
const (
	jitErrorLogBuffer     = 5
	jitErrorLogBufferSize = 6
)

// driver is the process-wide binding of libcuda.so.1 (the driver API).
type driver struct {
	lib     *library
	version Version

	init                 func(flags uint32) int32
	driverGetVersion     func(v unsafe.Pointer) int32
	deviceGetCount       func(n unsafe.Pointer) int32
	deviceGet            func(dev unsafe.Pointer, ordinal int32) int32
	deviceGetName        func(name unsafe.Pointer, n int32, dev int32) int32
	deviceGetAttribute   func(v unsafe.Pointer, attr int32, dev int32) int32
	deviceTotalMem       func(bytes unsafe.Pointer, dev int32) int32
	primaryCtxRetain     func(ctx unsafe.Pointer, dev int32) int32
	primaryCtxRelease    func(dev int32) int32
	ctxSetCurrent        func(ctx uintptr) int32
	ctxSynchronize       func() int32
	streamCreate         func(s unsafe.Pointer, flags uint32) int32
	streamDestroy        func(s uintptr) int32
	streamSynchronize    func(s uintptr) int32
	memAlloc             func(p unsafe.Pointer, size uintptr) int32
	memFree              func(p uint64) int32
	memGetInfo           func(free, total unsafe.Pointer) int32
	memcpyHtoDAsync      func(dst uint64, src unsafe.Pointer, size uintptr, s uintptr) int32
	memcpyDtoHAsync      func(dst unsafe.Pointer, src uint64, size uintptr, s uintptr) int32
	memcpyDtoDAsync      func(dst, src uint64, size uintptr, s uintptr) int32
	memsetD32Async       func(dst uint64, v uint32, n uintptr, s uintptr) int32
	moduleLoadDataEx     func(mod unsafe.Pointer, image unsafe.Pointer, nopt uint32, opts, vals unsafe.Pointer) int32
	moduleGetFunction    func(fn unsafe.Pointer, mod uintptr, name unsafe.Pointer) int32
	moduleUnload         func(mod uintptr) int32
	launchKernel         func(f uintptr, gx, gy, gz, bx, by, bz, shmem uint32, s uintptr, params, extra unsafe.Pointer) int32
	eventCreate          func(e unsafe.Pointer, flags uint32) int32
	eventRecord          func(e, s uintptr) int32
	eventSynchronize     func(e uintptr) int32
	eventElapsedTime     func(ms unsafe.Pointer, start, end uintptr) int32
	eventDestroy         func(e uintptr) int32
	getErrorName         func(r int32, s **byte) int32
	getErrorString       func(r int32, s **byte) int32
	deviceCountAtLoad    int
	attemptsWhenSelected []Attempt
}

var (
	driverOnce sync.Once
	driverVal  *driver
	driverErr  error
)

// libcudaNames are the driver library's names: the soname, then the development link.
var libcudaNames = []string{"libcuda.so.1", "libcuda.so"}

// loadDriver opens and initialises the driver library once per process. A stub library (the
// toolkit's link-time stand-in) or a machine without a GPU is reported as a *ProbeError or an
// error wrapping errNoDevice.
func loadDriver() (*driver, error) {
	driverOnce.Do(func() { driverVal, driverErr = openDriver() })
	return driverVal, driverErr
}

func openDriver() (*driver, error) {
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
		r := d.init(0)
		if r != cudaSuccess {
			msg := fmt.Sprintf("cuInit: %s", d.errString(r))
			tried = append(tried, Attempt{f, msg})
			lib.close()
			if r == cudaErrNoDevice {
				lastNoDevice = fmt.Errorf("cuda: %s: %s: %w", f, msg, errNoDevice)
			}
			continue // a stub library, a driver without a GPU, …: try the next candidate
		}
		var v int32
		if r := d.driverGetVersion(unsafe.Pointer(&v)); r != cudaSuccess {
			tried = append(tried, Attempt{f, "cuDriverGetVersion: " + d.errString(r)})
			lib.close()
			continue
		}
		d.version = driverVersion(v)
		var n int32
		if r := d.deviceGetCount(unsafe.Pointer(&n)); r != cudaSuccess {
			tried = append(tried, Attempt{f, "cuDeviceGetCount: " + d.errString(r)})
			lib.close()
			continue
		}
		d.deviceCountAtLoad = int(n)
		tried = append(tried, Attempt{f, fmt.Sprintf("driver CUDA %v, %d devices: chosen", d.version, n)})
		d.attemptsWhenSelected = tried
		return d, nil
	}
	if lastNoDevice != nil {
		return nil, fmt.Errorf("%w\n%v", lastNoDevice, &ProbeError{Lib: "libcuda", Reason: "no usable driver", Attempts: tried})
	}
	return nil, &ProbeError{Lib: "libcuda", Reason: "no usable NVIDIA driver library (is this a GPU machine?)", Attempts: tried}
}

func bindDriver(lib *library) (*driver, error) {
	d := &driver{lib: lib}
	err := lib.bindAll(map[string]any{
		"cuInit":                       &d.init,
		"cuDriverGetVersion":           &d.driverGetVersion,
		"cuDeviceGetCount":             &d.deviceGetCount,
		"cuDeviceGet":                  &d.deviceGet,
		"cuDeviceGetName":              &d.deviceGetName,
		"cuDeviceGetAttribute":         &d.deviceGetAttribute,
		"cuDeviceTotalMem_v2":          &d.deviceTotalMem,
		"cuDevicePrimaryCtxRetain":     &d.primaryCtxRetain,
		"cuDevicePrimaryCtxRelease_v2": &d.primaryCtxRelease,
		"cuCtxSetCurrent":              &d.ctxSetCurrent,
		"cuCtxSynchronize":             &d.ctxSynchronize,
		"cuStreamCreate":               &d.streamCreate,
		"cuStreamDestroy_v2":           &d.streamDestroy,
		"cuStreamSynchronize":          &d.streamSynchronize,
		"cuMemAlloc_v2":                &d.memAlloc,
		"cuMemFree_v2":                 &d.memFree,
		"cuMemGetInfo_v2":              &d.memGetInfo,
		"cuMemcpyHtoDAsync_v2":         &d.memcpyHtoDAsync,
		"cuMemcpyDtoHAsync_v2":         &d.memcpyDtoHAsync,
		"cuMemcpyDtoDAsync_v2":         &d.memcpyDtoDAsync,
		"cuMemsetD32Async":             &d.memsetD32Async,
		"cuModuleLoadDataEx":           &d.moduleLoadDataEx,
		"cuModuleGetFunction":          &d.moduleGetFunction,
		"cuModuleUnload":               &d.moduleUnload,
		"cuLaunchKernel":               &d.launchKernel,
		"cuGetErrorName":               &d.getErrorName,
		"cuGetErrorString":             &d.getErrorString,
	})
	if err != nil {
		return nil, err
	}
	// Events are for timing only: a driver without them still computes. The elapsed-time call
	// has a _v2 twin (same parameters) in newer drivers, used if the original name is gone.
	elapsed := lib.bind(&d.eventElapsedTime, "cuEventElapsedTime")
	if elapsed != nil {
		elapsed = lib.bind(&d.eventElapsedTime, "cuEventElapsedTime_v2")
	}
	if errors.Join(elapsed, lib.bind(&d.eventCreate, "cuEventCreate"), lib.bind(&d.eventRecord, "cuEventRecord"),
		lib.bind(&d.eventSynchronize, "cuEventSynchronize"), lib.bind(&d.eventDestroy, "cuEventDestroy_v2")) != nil {
		d.eventCreate = nil
	}
	return d, nil
}

// errString names a CUresult: "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory".
func (d *driver) errString(r int32) string {
	var name, desc *byte
	if d.getErrorName != nil {
		d.getErrorName(r, &name)
	}
	if d.getErrorString != nil {
		d.getErrorString(r, &desc)
	}
	n, s := cString(name), cString(desc)
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

// check turns a CUresult into an error naming the call.
func (d *driver) check(call string, r int32) error {
	if r == cudaSuccess {
		return nil
	}
	return &Result{Call: call, Code: r, Text: d.errString(r)}
}

// cString copies a NUL-terminated C string (owned by the library) into Go.
func cString(p *byte) string {
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

// DriverInfo describes the loaded driver library.
type DriverInfo struct {
	Path     string
	Version  Version // the newest CUDA version the driver supports
	Devices  int
	Attempts []Attempt // where libcuda was looked for
}

// LoadDriver loads libcuda once per process and describes it.
func LoadDriver() (DriverInfo, error) {
	d, err := loadDriver()
	if err != nil {
		return DriverInfo{}, err
	}
	return DriverInfo{Path: d.lib.path, Version: d.version, Devices: d.deviceCountAtLoad, Attempts: d.attemptsWhenSelected}, nil
}
