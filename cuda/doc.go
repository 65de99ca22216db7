// Package cuda is the project's GPU binding (ARCHITECTURE constraint 3): it loads the NVIDIA
// driver (libcuda.so.1), NVRTC and cuBLAS at run time through purego, so one binary without
// cgo runs on CPU-only machines and on GPUs, and building needs no CUDA.
//
// Open gives a Device (primary context, one stream, caching allocator); Device.Kernels
// compiles the embedded CUDA C kernels (kernels/*.cu) with NVRTC for the device, caching the
// result on disk, and returns typed launchers, one per nn op, forward and backward. Every
// kernel file names its CPU twin in ops/, and the GPU tests compare each op with that twin.
// CompileGate compiles every kernel without a GPU; CI runs it with Debian's NVRTC 11.8.
//
// See docs/gpu.md for the library search, version choice, threading model and the op table.
package cuda
