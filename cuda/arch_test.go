package cuda

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
)

// TestKernelArch: REWIREGNN_CUDA_ARCH picks the kernels' virtual architecture (70 or
// compute_70) on a newer GPU and is refused, naming the variable, when it is not a number,
// newer than the GPU, or unknown to NVRTC; unset, NVRTC's choice stands. Needs an NVRTC (CI
// has 11.8, which knows compute_70); no GPU.
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
	t.Setenv(EnvArch, "")
	if a, err := KernelArch(nv, high); err != nil || a != high {
		t.Errorf("unset: architecture %d, %v; want %d", a, err, high)
	}
	for _, v := range []string{itoa(low), "compute_" + itoa(low)} {
		t.Setenv(EnvArch, v)
		if a, err := KernelArch(nv, high); err != nil || a != low {
			t.Errorf("%s=%s on compute capability %d: %d, %v; want %d", EnvArch, v, high, a, err, low)
		}
	}
	for _, c := range []struct {
		v, want string
		cc      int
	}{
		{"sm_70", "want a virtual architecture", high},
		{itoa(high + 10), "does not run on a GPU", high},
		{"1", "does not compile for compute_1", high},
	} {
		t.Setenv(EnvArch, c.v)
		if _, err := KernelArch(nv, c.cc); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), EnvArch) {
			t.Errorf("%s=%s: %v; want an error naming %s: %q", EnvArch, c.v, err, EnvArch, c.want)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
