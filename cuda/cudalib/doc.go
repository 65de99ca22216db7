// Package cudalib loads NVIDIA's libraries at run time through purego, without cgo: the
// driver (libcuda.so.1) as a function table (Driver), the runtime compiler NVRTC (with its
// builtins) and cuBLAS (with its libcublasLt). It finds them (lib.go: override variables,
// toolkits, driver folders, Python wheels; one installation probed at a time), picks the
// versions that fit the driver, and reports every place it tried when something is missing
// (ProbeError).
//
// Nothing here knows the project's kernels or devices: package cuda builds its Device on a
// Driver and a CUBLAS, and package cuda/emu fills the same two tables with Go functions for the
// emulated GPU.
package cudalib
