// Package gpuspeed holds the test of scripts/gpu-speed.sh (the GPU speed comparison: this build
// with and without CUDA graphs, an earlier build, PyTorch): it builds the bundle and runs it on
// the emulated GPU. No code.
package gpuspeed
