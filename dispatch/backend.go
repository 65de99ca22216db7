// Package dispatch runs one step of a program on a backend: the one table, keyed by prog.Op,
// that reads a step's operands, shapes and attributes and calls the backend's kernel for the
// op. Both executors drive it: the CPU (package cpuexec, over kern) and the GPU (package
// gpuexec, over the CUDA launchers). A new op declares its kernel method in the op table
// (prog/op.go), from which `go generate ./prog` writes Kernels (zz_kernels.go) and the entries
// of element-wise ops; others add their entry here; each backend implements the method.
//
// A backend is generic in three buffer types: F for float tensors (a []float32 or []float64
// slice on the CPU, a device address on the GPU), X for index inputs (entries and weights) and
// M for masks. The zero value of F means "not computed" (a gradient the step does not need) or
// "not there" (an optional operand).
package dispatch

import "github.com/rewiregnn/rewiregnn/prog"

// Backend is what the dispatcher drives: the step being run (Frame) and the kernels.
type Backend[F, X, M any] interface {
	Frame[F, X, M]
	Kernels[F, X, M]
}

// Frame is a backend's view of the step being run. A step has members (Node.Which: a gradient
// group's results computed by one pass, or one member for a single node); member w reads its
// inputs and writes its result. The primary member is the first one present.
type Frame[F, X, M any] interface {
	Program() *prog.Program
	Feed() prog.Feed
	// Members is the number of members of the step.
	Members() int
	// Has reports whether member w is present (its inputs are known).
	Has(w int) bool
	// Computes reports whether the step writes member w's result.
	Computes(w int) bool
	// NumIn is the number of inputs of member w.
	NumIn(w int) int
	// In is member w's input i; Shape its rows and columns (a vector is one row, a scalar
	// 1×1); Elems its number of elements; IsScalar whether it is a scalar (on the CPU a value
	// of nil shape, as the front end's scalars; on the GPU any one-value operand).
	In(w, i int) F
	Shape(w, i int) (rows, cols int)
	Elems(w, i int) int
	IsScalar(w, i int) bool
	// Out is member w's result (zero where the step does not compute it); OutElems its size.
	Out(w int) F
	OutElems(w int) int
	// Index is index input ix. A backend checks every index once per batch, before the run,
	// against the bound prog.Program.IndexBounds gives (the rows of what each reader indexes).
	Index(ix int) X
	// Mask is mask input m as the kernels read it.
	Mask(m int) M
}
