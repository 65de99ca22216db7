// Package gpuexec is the GPU executor: it lays a program (package prog) out for a device
// (Compile: steps, fused gradient groups, activation slots planned with prog.AssignSlots) and
// runs each step through the dispatch table (package dispatch, the one both executors use) into
// its backend (launch.go: the kernel methods over the cuda launchers of a Backend, a GPU's or
// the emulated GPU's). It knows neither Gorgonia nor the front end:
// parameters and batch-norm statistics are found by name (Exec), a batch comes in through the
// program's prog.Feed.
package gpuexec
