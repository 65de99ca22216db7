package cpuexec

import (
	"github.com/rewiregnn/rewiregnn/kern"
	"github.com/rewiregnn/rewiregnn/prog"
)

// kernels returns the kernel table of element type T: one function per op the CPU runs.
func kernels[T kern.Float]() map[prog.Op]func(*call[T]) error {
	return map[prog.Op]func(*call[T]) error{}
}

var (
	kernels32 = kernels[float32]()
	kernels64 = kernels[float64]()
)
