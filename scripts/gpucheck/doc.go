// Package gpucheck holds the test of scripts/gpu-check.sh, the GPU verification bundle: it
// builds the bundle and runs it on the emulated GPU (-emu -quick), so the script is checked by
// go test ./... on machines without a GPU. It has no code of its own.
package gpucheck
