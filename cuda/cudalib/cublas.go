package cudalib

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"
)

// cuBLAS operations and library properties.
const (
	CublasOpN         = 0 // CUBLAS_OP_N
	CublasOpT         = 1 // CUBLAS_OP_T
	CublasPropMajor   = 0 // libraryPropertyType MAJOR_VERSION
	CublasPropMinor   = 1 // libraryPropertyType MINOR_VERSION
	CublasDefaultMath = 0 // CUBLAS_DEFAULT_MATH: exact float32, no TF32
	// CublasTF32TensorOpMath is CUBLAS_TF32_TENSOR_OP_MATH (cublasMath_t value 3 in
	// cublas_api.h): float32 products on the TF32 tensor cores of compute capability 8.0 and
	// up, their inputs rounded to TF32 (10 explicit mantissa bits) and accumulated in float32.
	// Older GPUs ignore it and compute in float32.
	CublasTF32TensorOpMath = 3
)

// CUBLAS is a loaded cuBLAS library (process-wide, LoadCUBLAS), or a table of Go functions
// standing in for one (the emulated GPU). Each function field is the cuBLAS function of the
// same name with the "cublas" prefix and any _v2 suffix dropped; each returns a
// cublasStatus_t.
type CUBLAS struct {
	Path    string
	Version Version
	LtPath  string // the libcublasLt preloaded from cuBLAS's folder ("" if the loader found it)
	lib     *library
	lt      *library

	Create      func(h unsafe.Pointer) int32
	Destroy     func(h uintptr) int32
	SetStream   func(h, s uintptr) int32
	SetMathMode func(h uintptr, mode int32) int32
	Sgemm       func(h uintptr, ta, tb int32, m, n, k int32, alpha unsafe.Pointer, a uint64, lda int32, b uint64, ldb int32, beta unsafe.Pointer, c uint64, ldc int32) int32
	GetProperty func(t int32, v unsafe.Pointer) int32
	// SetWorkspace is cublasSetWorkspace_v2 (cuBLAS 11.0 and later; nil where the library
	// lacks it): the device memory cuBLAS uses for its scratch instead of its own pool, which
	// is what makes a matrix product safe to capture into a CUDA graph.
	SetWorkspace func(h uintptr, ws uint64, size uintptr) int32
	// SgemmBatched is cublasSgemmBatched (nil where the library lacks it): count products, the
	// operands' addresses read from arrays in device memory (a, b, c: device addresses of
	// count device addresses each).
	SgemmBatched func(h uintptr, ta, tb int32, m, n, k int32, alpha unsafe.Pointer, a uint64, lda int32, b uint64, ldb int32, beta unsafe.Pointer, c uint64, ldc int32, count int32) int32
}

var cublasNames = []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"}

var (
	cublasOnce sync.Once
	cublasVal  *CUBLAS
	cublasErr  error
)

// LoadCUBLAS finds cuBLAS once per process: the newest whose major version the driver supports
// (cuBLAS 12 runs on any CUDA 12 driver; a CUDA 13 cuBLAS does not run on a CUDA 12 driver).
func LoadCUBLAS(driver Version) (*CUBLAS, error) {
	cublasOnce.Do(func() { cublasVal, cublasErr = openCUBLAS(driver) })
	return cublasVal, cublasErr
}

// openCUBLAS probes the candidates one at a time (each opened with its own libcublasLt, asked
// its version and closed before the next) and opens the chosen one again.
func openCUBLAS(driver Version) (*CUBLAS, error) {
	all, tried := probeEach(EnvCUBLAS, cublasNames, func(f string) (Version, string, string, error) {
		b, err := bindCUBLAS(f)
		if err != nil {
			return Version{}, "", "", err
		}
		defer b.close()
		note := ""
		if b.LtPath != "" {
			note = " with " + b.LtPath
		}
		return b.Version, realFile(b.lib, "cublasGetProperty"), note, nil
	})
	pick := -1
	for i, c := range all {
		if c.version.Major > driver.Major {
			tried[c.idx].Result += fmt.Sprintf(": needs a CUDA %d driver, this one supports %v", c.version.Major, driver)
		} else if pick < 0 {
			pick = i
		}
	}
	if pick < 0 {
		return nil, &ProbeError{Lib: "cuBLAS", Reason: fmt.Sprintf("no cuBLAS usable with the driver's CUDA %v", driver), Attempts: tried}
	}
	c := all[pick]
	b, err := bindCUBLAS(c.file)
	if err != nil {
		tried[c.idx].Result += ": chosen, but opening it again failed: " + err.Error()
		return nil, &ProbeError{Lib: "cuBLAS", Reason: "the chosen cuBLAS could not be opened again", Attempts: tried}
	}
	tried[c.idx].Result += ": chosen"
	return b, nil
}

// ltName is the libcublasLt that the cuBLAS file named base needs: libcublas.so.13 needs
// libcublasLt.so.13.
func ltName(base string) string { return strings.Replace(base, "libcublas", "libcublasLt", 1) }

// bindCUBLAS opens the cuBLAS file path, after preloading the libcublasLt of the same version
// from the folder the file lies in (cuBLAS asks the system loader for libcublasLt.so.<major>,
// which would otherwise be any installation's, or none when the folder is not on its path).
func bindCUBLAS(path string) (*CUBLAS, error) {
	var lt *library
	if d := dirOf(path); d != "" {
		real := path
		if r, err := filepath.EvalSymlinks(path); err == nil {
			real = r
		}
		var err error
		// The name as searched (libcublas.so.13) first, then the file's own (…so.13.1.0.3).
		for _, base := range []string{filepath.Base(path), filepath.Base(real)} {
			if lt, err = preload(filepath.Dir(real), ltName(base)); lt != nil || err != nil {
				break
			}
		}
		if err != nil {
			return nil, err
		}
	}
	lib, err := openLibrary(path)
	if err != nil {
		lt.close()
		return nil, err
	}
	b := &CUBLAS{Path: path, lib: lib, lt: lt}
	if lt != nil {
		b.LtPath = lt.path
	}
	if err := lib.bindAll(map[string]any{
		"cublasCreate_v2":    &b.Create,
		"cublasDestroy_v2":   &b.Destroy,
		"cublasSetStream_v2": &b.SetStream,
		"cublasSetMathMode":  &b.SetMathMode,
		"cublasSgemm_v2":     &b.Sgemm,
		"cublasGetProperty":  &b.GetProperty,
	}); err != nil {
		b.close()
		return nil, err
	}
	if lib.bind(&b.SetWorkspace, "cublasSetWorkspace_v2") != nil {
		b.SetWorkspace = nil // optional: only graph capture needs it
	}
	if lib.bind(&b.SgemmBatched, "cublasSgemmBatched") != nil {
		b.SgemmBatched = nil // optional: batched products then run one by one
	}
	var maj, min int32
	if r := b.GetProperty(CublasPropMajor, unsafe.Pointer(&maj)); r != 0 {
		b.close()
		return nil, fmt.Errorf("cublasGetProperty: status %d", r)
	}
	if r := b.GetProperty(CublasPropMinor, unsafe.Pointer(&min)); r != 0 {
		b.close()
		return nil, fmt.Errorf("cublasGetProperty: status %d", r)
	}
	b.Version = Version{int(maj), int(min)}
	return b, nil
}

// close unloads cuBLAS, then its libcublasLt.
func (b *CUBLAS) close() {
	b.lib.close()
	b.lt.close()
}
