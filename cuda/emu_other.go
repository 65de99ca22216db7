//go:build !linux

package cuda

import (
	"errors"
	"runtime"
)

// The emulated GPU (emu.go) needs Linux: memfd device memory shared with the kernel process.

type emulator struct{}

func (e *emulator) close() error           { return nil }
func (e *emulator) poison(p DevPtr, n int) {}
func OpenEmulator(o EmuOptions) (*Device, error) {
	return nil, errors.New("cuda: the emulated GPU needs Linux, not " + runtime.GOOS)
}
