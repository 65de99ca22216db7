package cuda

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
)

// TestKernelArch: gpu.arch (gpuopt.Options.Arch) picks the kernels' virtual architecture on
// a newer GPU and is refused, naming the key, when it is newer than the GPU or unknown to
// NVRTC; 0, NVRTC's choice stands. Needs an NVRTC (CI has 11.8, which knows compute_70); no GPU.
func TestKernelArch(t *testing.T) {
	nv, err := cudalib.LoadNVRTC(nil)
	if err != nil {
		t.Skipf("no NVRTC here: %v", err)
	}
	defer nv.Close()
	archs := nv.Archs()
	if len(archs) == 0 || nv.Cubin {
		t.Skipf("NVRTC %v lists no architectures", nv.Version)
	}
	low, high := slices.Min(archs), slices.Max(archs)
	if a, err := KernelArch(nv, high, 0); err != nil || a != high {
		t.Errorf("0: architecture %d, %v; want %d", a, err, high)
	}
	if a, err := KernelArch(nv, high, low); err != nil || a != low {
		t.Errorf("gpu.arch %d on compute capability %d: %d, %v; want %d", low, high, a, err, low)
	}
	for _, c := range []struct {
		v    int
		want string
	}{
		{-70, "want a virtual architecture"},
		{high + 10, "does not run on a GPU"},
		{1, "does not compile for compute_1"},
	} {
		if _, err := KernelArch(nv, high, c.v); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "gpu.arch") {
			t.Errorf("gpu.arch %d: %v; want an error naming gpu.arch: %q", c.v, err, c.want)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
