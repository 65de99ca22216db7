// Package cuda is the project's GPU device: Open gives a Device (primary context, one stream,
// caching allocator, copies, events, profiles) on the NVIDIA driver that package cuda/cudalib
// loads at run time (purego, no cgo: one binary runs on CPU-only machines and on GPUs, and
// building needs no CUDA). Device.Kernels compiles the CUDA C kernels of package cuda/kernels
// with NVRTC for the device, caching the result on disk, and returns typed launchers, one per
// nn op, forward and backward (ops.go); matrix products go to cuBLAS (gemm.go). Every kernel
// file names its CPU twin in ops/, and the GPU tests compare each op with that twin.
//
// BeginCapture and EndCapture record the operations queued between them as a CUDA graph, which
// Graph.Launch replays with one host call (graph.go), on a GPU and on the emulated GPU alike.
//
// OpenEmulator gives the same Device on the emulated GPU of package cuda/emu: the real kernels
// compiled as C++ and run on CPU threads, behind the driver's and cuBLAS's function tables.
//
// The packages depend downwards only: cuda → cuda/emu → cuda/kernels → cuda/cudalib.
//
// See docs/gpu.md for the library search, version choice, threading model and the op table.
package cuda
