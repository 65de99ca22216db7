package cuda

import (
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// cuBLAS operations and library properties.
const (
	cublasOpN        = 0
	cublasOpT        = 1
	cublasMajor      = 0 // libraryPropertyType MAJOR_VERSION
	cublasMinor      = 1
	cublasDefaultMth = 0 // CUBLAS_DEFAULT_MATH: exact float32, no TF32
)

// CUBLAS is a loaded cuBLAS library (process-wide).
type CUBLAS struct {
	Path    string
	Version Version
	LtPath  string // the libcublasLt preloaded from cuBLAS's folder ("" if the loader found it)
	lib     *library
	lt      *library

	create      func(h unsafe.Pointer) int32
	destroy     func(h uintptr) int32
	setStream   func(h, s uintptr) int32
	setMathMode func(h uintptr, mode int32) int32
	sgemm       func(h uintptr, ta, tb int32, m, n, k int32, alpha unsafe.Pointer, a uint64, lda int32, b uint64, ldb int32, beta unsafe.Pointer, c uint64, ldc int32) int32
	getProperty func(t int32, v unsafe.Pointer) int32
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
		"cublasCreate_v2":    &b.create,
		"cublasDestroy_v2":   &b.destroy,
		"cublasSetStream_v2": &b.setStream,
		"cublasSetMathMode":  &b.setMathMode,
		"cublasSgemm_v2":     &b.sgemm,
		"cublasGetProperty":  &b.getProperty,
	}); err != nil {
		b.close()
		return nil, err
	}
	var maj, min int32
	if r := b.getProperty(cublasMajor, unsafe.Pointer(&maj)); r != 0 {
		b.close()
		return nil, fmt.Errorf("cublasGetProperty: status %d", r)
	}
	if r := b.getProperty(cublasMinor, unsafe.Pointer(&min)); r != 0 {
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

// cublasHandle is a cuBLAS handle bound to a device's context and stream.
type cublasHandle struct {
	lib *CUBLAS
	h   uintptr
}

func (h *cublasHandle) destroy() error {
	if r := h.lib.destroy(h.h); r != 0 {
		return fmt.Errorf("cuda: cublasDestroy: status %d", r)
	}
	return nil
}

// blasLocked returns the device's cuBLAS handle, creating it on first use.
func (d *Device) blasLocked() (*cublasHandle, error) {
	if d.blas != nil {
		return d.blas, nil
	}
	lib, err := LoadCUBLAS(d.Driver)
	if err != nil {
		return nil, err
	}
	h := &cublasHandle{lib: lib}
	if r := lib.create(unsafe.Pointer(&h.h)); r != 0 {
		return nil, fmt.Errorf("cuda: cublasCreate (%s): status %d", lib.Path, r)
	}
	if r := lib.setStream(h.h, d.stream); r != 0 {
		lib.destroy(h.h)
		return nil, fmt.Errorf("cuda: cublasSetStream (%s): status %d", lib.Path, r)
	}
	if r := lib.setMathMode(h.h, cublasDefaultMth); r != 0 {
		lib.destroy(h.h)
		return nil, fmt.Errorf("cuda: cublasSetMathMode (%s): status %d", lib.Path, r)
	}
	d.blas = h
	return h, nil
}

// gemmArgs are the column-major cuBLAS arguments that compute a row-major product.
type gemmArgs struct {
	ta, tb        int32
	m, n, k       int32
	a, b          DevPtr
	lda, ldb, ldc int32
	outIsEmpty    bool
}

// rowMajorGemm maps the row-major product C [m, n] = op(A)·op(B) (op(A) [m, k], op(B) [k, n];
// A stored [m, k], or [k, m] when transA; B stored [k, n], or [n, k] when transB) to cuBLAS's
// column-major sgemm. A row-major matrix is its transpose in column-major order, so the call
// computes Cᵀ = op(B)ᵀ·op(A)ᵀ: the operands are swapped, the transpose flags kept, m and n
// swapped, and each leading dimension is the stored row length.
func rowMajorGemm(transA, transB bool, m, n, k int, a, b DevPtr) (gemmArgs, error) {
	for _, v := range []int{m, n, k} {
		if v < 0 || v > math.MaxInt32 {
			return gemmArgs{}, fmt.Errorf("cuda: gemm size %d×%d×%d out of range", m, n, k)
		}
	}
	g := gemmArgs{ta: cublasOpN, tb: cublasOpN, m: int32(n), n: int32(m), k: int32(k), a: b, b: a}
	lda, ldb := k, n // stored row lengths of A and B
	if transA {
		lda = m
		g.tb = cublasOpT
	}
	if transB {
		ldb = k
		g.ta = cublasOpT
	}
	g.lda, g.ldb, g.ldc = int32(max(ldb, 1)), int32(max(lda, 1)), int32(max(n, 1))
	g.outIsEmpty = m == 0 || n == 0
	return g, nil
}

// gemmLocked queues C = op(A)·op(B) in row-major order (see rowMajorGemm); C is overwritten.
func (d *Device) gemmLocked(transA, transB bool, m, n, k int, a, b, c DevPtr) error {
	g, err := rowMajorGemm(transA, transB, m, n, k, a, b)
	if err != nil {
		return err
	}
	if g.outIsEmpty {
		return nil
	}
	if k == 0 { // an empty inner dimension: C = 0
		return d.fillLocked(c, m*n, 0)
	}
	h, err := d.blasLocked()
	if err != nil {
		return err
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	alpha, beta := new(float32), new(float32)
	*alpha = 1
	pin.Pin(alpha)
	pin.Pin(beta)
	return d.timedLocked("sgemm", func() error {
		r := h.lib.sgemm(h.h, g.ta, g.tb, g.m, g.n, g.k, unsafe.Pointer(alpha), uint64(g.a), g.lda, uint64(g.b), g.ldb, unsafe.Pointer(beta), uint64(c), g.ldc)
		if r != 0 {
			return fmt.Errorf("cuda: cublasSgemm (%s) for a row-major %d×%d·%d×%d product: status %d", h.lib.Path, m, k, k, n, r)
		}
		return nil
	})
}
