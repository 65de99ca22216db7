package cuda

import (
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/cuda/emu"
	"github.com/rewiregnn/rewiregnn/gpuopt"
)

// TestEmulatorTakesOptions: the GPU options a device is opened with reach it (no environment
// variable read): batched products off make the cuBLAS handle run a batch one product at a
// time, narrow weight gradients turn gemm.cu's kernels on, and an architecture is refused on the
// emulated GPU, naming gpu.arch. The defaults are today's behaviour.
func TestEmulatorTakesOptions(t *testing.T) {
	needCompiler(t)
	open := func(g gpuopt.Options) *Device {
		t.Helper()
		d, err := OpenEmulatorWith(emu.Options{Deterministic: true}, g)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	def := open(gpuopt.Default())
	if def.blas.oneByOne || def.kernels.NarrowGradW() {
		t.Errorf("defaults: one by one %t, narrow weight gradients %t", def.blas.oneByOne, def.kernels.NarrowGradW())
	}
	o := gpuopt.Default()
	o.BatchedProducts, o.NarrowGradW = false, true
	d := open(o)
	if !d.blas.oneByOne || !d.kernels.NarrowGradW() || d.Options().NarrowGradW != true {
		t.Errorf("batched products off, narrow on: one by one %t, narrow weight gradients %t", d.blas.oneByOne, d.kernels.NarrowGradW())
	}
	o = gpuopt.Default()
	o.Arch = 70
	if _, err := OpenEmulatorWith(emu.Options{Deterministic: true}, o); err == nil || !strings.Contains(err.Error(), "gpu.arch 70") {
		t.Errorf("gpu.arch 70 on the emulated GPU: %v", err)
	}
}
