// Package emu is the emulated GPU: the real kernels of cuda/kernels, compiled as C++ by the
// system compiler with the emulation header cuda_emu.h and run on CPU threads in a child
// process (runtime.cc), behind the same Device, allocator and launchers as a GPU
// (cuda.OpenEmulator). Only the bottom layer differs: the driver's function table
// (cudalib.Driver) and cuBLAS's (cudalib.CUBLAS) are Go functions here (gpu_linux.go), so a
// launcher's grid, block and argument slots reach the emulated kernel exactly as
// cuLaunchKernel would get them.
//
// Device memory is a memfd mapped by both processes; the Go side copies and fills in its own
// mapping and the child runs kernels in its own, one request at a time (proc.go). Every buffer
// ends at a page boundary followed by a guard page (PROT_NONE in the child), so a kernel that
// reads or writes one element past the end of its buffer faults, and the fault is reported
// with the kernel, block, thread and the buffer it overran. Fresh buffers are filled with NaN.
//
// No cgo: the product binary stays CGO-free; the emulator needs a C++17 compiler (g++ or
// clang++) when it is opened (build.go), and keeps the built program in the kernel cache
// folder. It needs Linux (gpu_other.go: elsewhere Open fails as without a compiler).
package emu
