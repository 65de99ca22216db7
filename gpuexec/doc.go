// Package gpuexec is the GPU executor: it lays a program (package prog) out for a device
// (Compile: steps, fused gradient groups, gradient sums folded into products, activation slots
// planned with prog.AssignSlots, the gradient and result buffers) and runs each step through
// the dispatch table (package dispatch, the one both executors use) into its backend
// (launch.go: the kernel methods over the cuda launchers of a Backend, a GPU's or the emulated
// GPU's), launch by launch or as a captured CUDA graph replayed with one launch (Exec.Run). It knows neither Gorgonia nor the front end:
// parameters and batch-norm statistics are found by name (Exec), a batch comes in through the
// program's prog.Feed.
package gpuexec
