// Package gpuexec is the GPU executor: it lays a program (package prog) out for a device
// (Compile: steps, fused gradient groups, activation slots planned with prog.AssignSlots) and
// runs it through one launch table (launch.go: one function per op) on a Backend, the
// cuda launchers of a GPU or of the emulated GPU. It knows neither Gorgonia nor the front end:
// parameters and batch-norm statistics are found by name (Exec), a batch comes in through the
// program's prog.Feed.
package gpuexec
