package cuda

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
	"github.com/rewiregnn/rewiregnn/cuda/emu"
	"github.com/rewiregnn/rewiregnn/cuda/kernels"
	"github.com/rewiregnn/rewiregnn/gpuopt"
)

// OpenEmulator builds (or takes from the cache) the emulated kernels and opens an emulated
// device with them (package cuda/emu): the driver and cuBLAS function tables are the
// emulator's, everything above them is this package's. Its Kernels are ready; it is closed
// like a GPU. Without a C++ compiler the error wraps emu.ErrNoCompiler.
func OpenEmulator(o emu.Options) (*Device, error) { return OpenEmulatorWith(o, gpuopt.Default()) }

// OpenEmulatorWith is OpenEmulator with the run's GPU options g: batched products, the narrow
// weight gradients and the kernel definitions (emu.Options.Defines) as on a GPU. The emulated
// kernels are built as C++ for the CPU, without NVRTC: an architecture (gpu.arch) is refused.
func OpenEmulatorWith(o emu.Options, g gpuopt.Options) (*Device, error) {
	if g.Arch != 0 {
		return nil, fmt.Errorf("cuda: gpu.arch %d: the emulated GPU builds its kernels as C++ for the CPU, for no virtual architecture; leave gpu.arch at 0", g.Arch)
	}
	o.Defines = append(o.Defines, g.KernelDefines...)
	e, err := emu.Open(o)
	if err != nil {
		return nil, err
	}
	d := &Device{
		Ordinal: 0, Name: "emulated GPU", CC: 90, SMs: e.SMs(), MaxThreads: 1024, SharedMem: 48 << 10,
		TotalMem: e.TotalMem(), Driver: cudalib.Version{Major: 13, Minor: 0}, DriverPath: e.Path(), drv: e.Driver(), emu: e, opts: g,
	}
	d.alloc.free = map[int][]DevPtr{}
	d.alloc.size = map[DevPtr]int{}
	d.blas = &cublasHandle{lib: e.CUBLAS(), h: 1, oneByOne: !g.BatchedProducts}
	if err := d.openSideLocked(); err != nil {
		e.Close()
		return nil, err
	}
	if err := d.setWorkspaceLocked(d.blas); err != nil {
		e.Close()
		return nil, err
	}
	k := &Kernels{d: d, Target: "the CPU (" + e.Compiler() + ")", fns: map[string]uintptr{}, sigs: map[string]string{}}
	for _, s := range kernels.Sigs {
		if fn, ok := e.Function(s.Name); ok {
			k.fns[s.Name] = fn
			k.sigs[s.Name] = s.Params
		}
	}
	if err := d.do(k.prepareLocked); err != nil {
		d.Close()
		return nil, err
	}
	d.kernels = k
	return d, nil
}
