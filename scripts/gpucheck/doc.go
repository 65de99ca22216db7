// Package gpucheck holds the test of scripts/gpu-check.sh, the GPU verification bundle: it
// builds the bundle and runs it in simulated mode (-sim -quick), so the script is checked by
// go test ./... on machines without a GPU. It has no code of its own.
package gpucheck
