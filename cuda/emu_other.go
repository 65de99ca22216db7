//go:build !linux

package cuda

import (
	"fmt"
	"runtime"
)

// The emulated GPU (emu.go) needs Linux: memfd device memory shared with the kernel process.

type emulator struct{}

func (e *emulator) close() error           { return nil }
func (e *emulator) poison(p DevPtr, n int) {}
func (e *emulator) notLaunched() []string  { return nil }

// OpenEmulator fails: the emulated GPU needs Linux (tests skip as without a compiler).
func OpenEmulator(o EmuOptions) (*Device, error) {
	return nil, fmt.Errorf("cuda: the emulated GPU needs Linux, not %s: %w", runtime.GOOS, ErrNoCompiler)
}
