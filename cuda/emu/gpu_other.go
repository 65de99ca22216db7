//go:build !linux

package emu

import (
	"fmt"
	"runtime"

	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
)

// The emulated GPU needs Linux: memfd device memory shared with the kernel process. Elsewhere
// Open fails (tests skip as without a compiler) and a GPU is never made.

// GPU is an emulated GPU; on this system there is none.
type GPU struct{}

// Open fails: the emulated GPU needs Linux.
func Open(o Options) (*GPU, error) {
	return nil, fmt.Errorf("cuda: the emulated GPU needs Linux, not %s: %w", runtime.GOOS, ErrNoCompiler)
}

func (e *GPU) Close() error                         { return nil }
func (e *GPU) Poison(p uint64, n int)               {}
func (e *GPU) NotLaunched() []string                { return nil }
func (e *GPU) Function(name string) (uintptr, bool) { return 0, false }
func (e *GPU) Compiler() string                     { return "" }
func (e *GPU) Path() string                         { return "" }
func (e *GPU) SMs() int                             { return 0 }
func (e *GPU) TotalMem() int64                      { return 0 }
func (e *GPU) Driver() *cudalib.Driver              { return nil }
func (e *GPU) CUBLAS() *cudalib.CUBLAS              { return nil }
func (e *GPU) PendingCopies() int                   { return 0 }
