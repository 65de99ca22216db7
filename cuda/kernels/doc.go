// Package kernels holds the project's CUDA C kernels, embedded: one *.cu file per op family,
// each naming its CPU twin in nn/, and the *.cuh headers they share (Sources, Headers). Sigs
// declares every kernel's parameter list, which package cuda's launchers are checked against;
// CompileGate compiles every file with NVRTC without a GPU (CI runs it with Debian's NVRTC
// 11.8); Cache keeps compiled kernels on disk.
//
// Package cuda loads these kernels on a GPU and launches them; package cuda/emu builds the same
// files as C++ for the emulated GPU.
package kernels
