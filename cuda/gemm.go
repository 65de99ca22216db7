package cuda

// The device's matrix products: a cuBLAS handle on the device's stream, and the row-major
// products of the launchers mapped to cuBLAS's column-major sgemm.

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
)

// cublasHandle is a cuBLAS handle bound to a device's context and stream, with its workspace.
type cublasHandle struct {
	lib *cudalib.CUBLAS
	h   uintptr
	ws  uint64 // the workspace given to cuBLAS (0: cuBLAS's own pool)
	// oneByOne: batched products (MatMulBatch, MatMulGradWBatch) as one cublasSgemm each
	// instead of one cublasSgemmBatched (gpuopt.Options.BatchedProducts off, gpu.batched_products:
	// for measuring which is faster on a GPU). The bits are cuBLAS's either way (within float32
	// rounding of each other); the operations per step grow by the batches' sizes less one each.
	oneByOne bool
}

// destroy releases the handle, then its workspace.
func (h *cublasHandle) destroy(drv *cudalib.Driver) error {
	if r := h.lib.Destroy(h.h); r != 0 {
		return fmt.Errorf("cuda: cublasDestroy: status %d", r)
	}
	if h.ws != 0 {
		return drv.Check("cuMemFree (cuBLAS workspace)", drv.MemFree(h.ws))
	}
	return nil
}

// blasWorkspaceBytes is the workspace given to cuBLAS: NVIDIA's recommendation, 32 MiB on
// Hopper and newer (compute capability 9.0 and up), 4 MiB before, the sizes of cuBLAS's own
// default pool. cuBLAS 12 needs a workspace of the caller's to be captured into a CUDA graph
// safely (its own pool is allocated outside the stream's order); with one, a product picks the
// same algorithm captured and eager, so a replay gives the bits eager work gives.
func blasWorkspaceBytes(cc int) int {
	if cc >= 90 {
		return 32 << 20
	}
	return 4 << 20
}

// setWorkspaceLocked allocates the handle's workspace (from the driver, outside the caching
// allocator: it lives as long as the handle and is not the allocator's to count) and gives it
// to cuBLAS, where the library has cublasSetWorkspace. It must come after cublasSetStream,
// which puts the handle back on cuBLAS's own pool. The caller holds the device.
func (d *Device) setWorkspaceLocked(h *cublasHandle) error {
	if h.lib.SetWorkspace == nil {
		return nil // an old cuBLAS: eager products are unaffected; see BeginCapture
	}
	n := blasWorkspaceBytes(d.CC)
	var p uint64
	if err := d.drv.Check(fmt.Sprintf("cuMemAlloc (cuBLAS workspace, %d bytes)", n), d.drv.MemAlloc(unsafe.Pointer(&p), uintptr(n))); err != nil {
		return err
	}
	if r := h.lib.SetWorkspace(h.h, p, uintptr(n)); r != 0 {
		d.drv.MemFree(p)
		return fmt.Errorf("cuda: cublasSetWorkspace (%s, %d bytes): status %d", h.lib.Path, n, r)
	}
	h.ws = p
	return nil
}

// blasLocked returns the device's cuBLAS handle, creating it on first use.
func (d *Device) blasLocked() (*cublasHandle, error) {
	if d.blas != nil {
		return d.blas, nil
	}
	lib, err := cudalib.LoadCUBLAS(d.Driver)
	if err != nil {
		return nil, err
	}
	h := &cublasHandle{lib: lib, oneByOne: !d.opts.BatchedProducts}
	if r := lib.Create(unsafe.Pointer(&h.h)); r != 0 {
		return nil, fmt.Errorf("cuda: cublasCreate (%s): status %d", lib.Path, r)
	}
	if r := lib.SetStream(h.h, d.stream); r != 0 {
		lib.Destroy(h.h)
		return nil, fmt.Errorf("cuda: cublasSetStream (%s): status %d", lib.Path, r)
	}
	if r := lib.SetMathMode(h.h, int32(d.math)); r != 0 {
		lib.Destroy(h.h)
		return nil, fmt.Errorf("cuda: cublasSetMathMode (%s): status %d", lib.Path, r)
	}
	if err := d.setWorkspaceLocked(h); err != nil {
		lib.Destroy(h.h)
		return nil, err
	}
	d.blas = h
	return h, nil
}

// MathMode is how the device's cuBLAS computes float32 matrix products (its handle's math
// mode). Only the products change: the project's own kernels compute in float32 either way.
type MathMode int32

const (
	// MathFP32 is CUBLAS_DEFAULT_MATH: float32 products (the default).
	MathFP32 MathMode = cudalib.CublasDefaultMath
	// MathTF32 is CUBLAS_TF32_TENSOR_OP_MATH: the products run on the TF32 tensor cores, their
	// inputs rounded to TF32 (10 mantissa bits) and summed in float32; GPUs before compute
	// capability 8.0 have none and compute in float32 (TF32).
	MathTF32 MathMode = cudalib.CublasTF32TensorOpMath
)

func (m MathMode) String() string {
	switch m {
	case MathFP32:
		return "fp32"
	case MathTF32:
		return "tf32"
	}
	return fmt.Sprintf("math mode %d", int32(m))
}

// TF32 reports whether the device's GPU has TF32 tensor cores (compute capability 8.0 and
// up; the emulated GPU emulates them): where it has none, MathTF32 computes in float32.
func (d *Device) TF32() bool { return d.CC >= 80 || d.emu != nil }

// MathMode is the math mode of the device's matrix products (MathFP32 until SetMathMode).
func (d *Device) MathMode() MathMode {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.math
}

// SetMathMode sets how the products queued from now on compute (those queued before are
// unaffected): it switches the cuBLAS handle's math mode, and a handle created later starts
// in it. It is refused while the stream is being captured (a captured graph keeps the mode
// it was captured with).
func (d *Device) SetMathMode(m MathMode) error {
	if m != MathFP32 && m != MathTF32 {
		return fmt.Errorf("cuda: %v: want %v or %v", m, MathFP32, MathTF32)
	}
	return d.do(func() error {
		if err := d.refuseInCaptureLocked("setting the cuBLAS math mode to " + m.String()); err != nil {
			return err
		}
		if h := d.blas; h != nil {
			if r := h.lib.SetMathMode(h.h, int32(m)); r != 0 {
				return fmt.Errorf("cuda: cublasSetMathMode(%v) (%s): status %d", m, h.lib.Path, r)
			}
		}
		d.math = m
		return nil
	})
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
	g := gemmArgs{ta: cudalib.CublasOpN, tb: cudalib.CublasOpN, m: int32(n), n: int32(m), k: int32(k), a: b, b: a}
	lda, ldb := k, n // stored row lengths of A and B
	if transA {
		lda = m
		g.tb = cudalib.CublasOpT
	}
	if transB {
		ldb = k
		g.ta = cudalib.CublasOpT
	}
	g.lda, g.ldb, g.ldc = int32(max(ldb, 1)), int32(max(lda, 1)), int32(max(n, 1))
	g.outIsEmpty = m == 0 || n == 0
	return g, nil
}

// gemmLocked queues C = op(A)·op(B) in row-major order (see rowMajorGemm); C is overwritten.
func (d *Device) gemmLocked(transA, transB bool, m, n, k int, a, b, c DevPtr) error {
	return d.gemmBetaLocked(transA, transB, m, n, k, a, b, c, false)
}

// gemmBetaLocked queues C = op(A)·op(B), or C += op(A)·op(B) when acc is set.
func (d *Device) gemmBetaLocked(transA, transB bool, m, n, k int, a, b, c DevPtr, acc bool) error {
	g, err := rowMajorGemm(transA, transB, m, n, k, a, b)
	if err != nil {
		return err
	}
	if g.outIsEmpty {
		return nil
	}
	if k == 0 { // an empty inner dimension: C = 0, or C unchanged
		if acc {
			return nil
		}
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
	if acc {
		*beta = 1
	}
	pin.Pin(alpha)
	pin.Pin(beta)
	return d.timedLocked(d.gemmLabel("sgemm", transA, transB, m, n, k, acc, 1), func() error {
		r := h.lib.Sgemm(h.h, g.ta, g.tb, g.m, g.n, g.k, unsafe.Pointer(alpha), uint64(g.a), g.lda, uint64(g.b), g.ldb, unsafe.Pointer(beta), uint64(c), g.ldc)
		if r != 0 {
			return fmt.Errorf("cuda: cublasSgemm (%s) for a row-major %d×%d·%d×%d product: status %d", h.lib.Path, m, k, k, n, r)
		}
		return nil
	})
}

// gemmLabel is a matrix product's name in a profile: base alone, and while a profile runs also
// its row-major shape, transposes and accumulation ("sgemm 3000x70·70x70 TN +=", "×4" for a
// batch of 4), so that a step's products can be told apart. The caller holds the device.
func (d *Device) gemmLabel(base string, transA, transB bool, m, n, k int, acc bool, count int) string {
	if d.prof == nil {
		return base
	}
	op := func(t bool) string {
		if t {
			return "T"
		}
		return "N"
	}
	s := fmt.Sprintf("%s %dx%d·%dx%d %s%s", base, m, k, k, n, op(transA), op(transB))
	if acc {
		s += " +="
	}
	if count > 1 {
		s += fmt.Sprintf(" ×%d", count)
	}
	return s
}
