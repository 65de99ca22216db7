package emu

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/cuda/kernels"
)

// needCompiler skips a test where the emulator cannot be built (unless it is required).
func needCompiler(t *testing.T) {
	t.Helper()
	if err := Skip(); err != nil {
		t.Skip(err)
	}
}

// TestEmuFeatures: the embedded kernels use only features the emulation header provides, and
// a kernel that uses one it lacks is named, by the static scan and by the build.
func TestEmuFeatures(t *testing.T) {
	if got := Unsupported(kernels.Sources(), kernels.Headers()); len(got) > 0 {
		t.Fatalf("the kernels use CUDA features that emu/cuda_emu.h lacks: %v", got)
	}
	srcs := kernels.Sources()
	i := slices.IndexFunc(srcs, func(s kernels.Source) bool { return s.Name == "elementwise.cu" })
	old := "extern \"C\" __global__ void ew_add("
	if i < 0 || !strings.Contains(srcs[i].Code, old) {
		t.Fatal("elementwise.cu: ew_add not found")
	}
	srcs[i].Code = strings.Replace(srcs[i].Code, old, `extern "C" __global__ void ew_vote(int* out, const float* x, int n) {
  RW_FOR(j, n) out[j] = __ballot_sync(0xffffffffu, x[j] > 0.0f);
}

`+old, 1)
	got := Unsupported(srcs, kernels.Headers())
	if len(got) != 1 || !strings.HasPrefix(got[0], "elementwise.cu:") || !strings.HasSuffix(got[0], ": __ballot_sync") {
		t.Fatalf("static scan of a kernel using __ballot_sync: %v", got)
	}
	needCompiler(t)
	_, err := Open(Options{Sources: srcs})
	var be *BuildError
	if !errors.As(err, &be) || len(be.Missing) != 1 || !strings.HasSuffix(be.Missing[0], ": __ballot_sync") || !strings.Contains(err.Error(), "__ballot_sync") {
		t.Fatalf("building a kernel that uses __ballot_sync: %v", err)
	}
	t.Logf("named: %s (static scan: %s)", be.Missing[0], got[0])
}
