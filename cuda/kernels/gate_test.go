package kernels

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
)

// EnvRequireNVRTC makes the compile gate fail, instead of skip, when NVRTC cannot be loaded
// (CI sets it after installing Debian's libnvrtc11.2).
const EnvRequireNVRTC = "REWIREGNN_REQUIRE_NVRTC"

// gateNVRTC loads NVRTC for the compile-gate tests: no driver is needed.
func gateNVRTC(t *testing.T) *cudalib.NVRTC {
	t.Helper()
	n, err := cudalib.LoadNVRTC(nil)
	if err != nil {
		if os.Getenv(EnvRequireNVRTC) == "1" {
			t.Fatalf("%s=1 but NVRTC cannot be loaded: %v", EnvRequireNVRTC, err)
		}
		t.Skipf("no NVRTC here, compile gate skipped (CI installs libnvrtc11.2 and sets %s=1): %v", EnvRequireNVRTC, err)
	}
	t.Cleanup(n.Close)
	return n
}

// gateTargets returns the gate's architectures that n can compile for, logging those it
// cannot. Under REWIREGNN_REQUIRE_NVRTC=1 an NVRTC of CUDA 12 or older (CI's is 11.8) must
// compile for every one of them: only CUDA 13 dropped compute_70.
func gateTargets(t *testing.T, n *cudalib.NVRTC) []int {
	t.Helper()
	use, skipped := GateTargets(n.Archs())
	if len(skipped) > 0 {
		t.Logf("compile gate: NVRTC %v (%s) cannot compile for compute_%v (it knows %v): skipped", n.Version, n.Path, skipped, n.Archs())
		if os.Getenv(EnvRequireNVRTC) == "1" && n.Version.Major <= 12 {
			t.Fatalf("NVRTC %v must compile for every gate architecture %v", n.Version, GateArchs)
		}
	}
	if len(use) == 0 {
		t.Fatalf("NVRTC %v compiles for none of the gate architectures %v", n.Version, GateArchs)
	}
	return use
}

// TestGateTargets: an NVRTC that lists its architectures is given only those it knows.
func TestGateTargets(t *testing.T) {
	for _, c := range []struct {
		archs, use, skipped []int
	}{
		{nil, GateArchs, nil}, // before 11.2: cannot tell
		{[]int{35, 50, 60, 70, 75, 80, 86, 90}, GateArchs, nil},     // 11.8
		{[]int{75, 80, 86, 89, 90, 100, 120}, []int{90}, []int{70}}, // 13.0
	} {
		use, skipped := GateTargets(c.archs)
		if !slices.Equal(use, c.use) || !slices.Equal(skipped, c.skipped) {
			t.Errorf("archs %v: use %v skip %v, want %v and %v", c.archs, use, skipped, c.use, c.skipped)
		}
	}
}

// TestCompileGate compiles every embedded kernel file for compute_70 and compute_90 (those of
// them the NVRTC found knows).
func TestCompileGate(t *testing.T) {
	n := gateNVRTC(t)
	srcs := Sources()
	if len(srcs) == 0 {
		t.Fatal("no kernel sources embedded")
	}
	archs := gateTargets(t, n)
	t0 := time.Now()
	res, err := CompileGate(n, srcs, archs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if strings.TrimSpace(r.Log) != "" {
			t.Logf("%s compute_%d: NVRTC log:\n%s", r.Kernel, r.Arch, r.Log)
		}
	}
	t.Logf("compile gate: NVRTC %v (%s): %d kernel files, %d compilations for compute_%v in %.1f s",
		n.Version, n.Path, len(srcs), len(res), archs, time.Since(t0).Seconds())
}

// TestCompileGateCatchesBrokenKernel shows the gate failing on a kernel that does not compile,
// through the same function CI runs, with NVRTC's log in the error.
func TestCompileGateCatchesBrokenKernel(t *testing.T) {
	n := gateNVRTC(t)
	broken := Source{Name: "broken.cu", Code: `#include "common.cuh"
extern "C" __global__ void broken(float* out, int n) {
  RW_FOR(i, n) { out[i] = undeclared_variable; }
}
`}
	archs := gateTargets(t, n)
	_, err := CompileGate(n, []Source{broken}, archs)
	if err == nil {
		t.Fatal("the compile gate accepted a kernel that uses an undeclared variable")
	}
	var ce *cudalib.CompileError
	if _, _, cerr := n.Compile(broken.Name, broken.Code, Headers(), archs[0], false); !errors.As(cerr, &ce) {
		t.Fatalf("compile error is %T (%v), want *CompileError", cerr, cerr)
	}
	if ce.Kernel != "broken.cu" || ce.Target != fmt.Sprintf("compute_%d", archs[0]) || !strings.Contains(ce.Log, "undeclared_variable") {
		t.Fatalf("compile error does not name the kernel, target and problem: %+v", ce)
	}
	t.Logf("the gate rejects the broken kernel as it should:\n%v", err)
}

// TestKernelSignaturesMatchPTX checks every launcher's declared parameter list against the
// parameters NVRTC wrote into the PTX, and that every kernel in the PTX is declared.
func TestKernelSignaturesMatchPTX(t *testing.T) {
	n := gateNVRTC(t)
	arch := gateTargets(t, n)[0]
	ptxType := map[byte]string{'p': ".u64", 'i': ".u32", 'f': ".f32", 'u': ".u64"}
	entries := map[string][]string{} // kernel → PTX parameter types
	file := map[string]string{}
	for _, s := range Sources() {
		ptx, _, err := n.Compile(s.Name, s.Code, Headers(), arch, false)
		if err != nil {
			t.Fatal(err)
		}
		for name, params := range ptxEntries(string(ptx)) {
			entries[name] = params
			file[name] = s.Name
		}
	}
	declared := map[string]bool{}
	for _, sig := range Sigs {
		declared[sig.Name] = true
		got, ok := entries[sig.Name]
		if !ok {
			t.Errorf("kernel %s (declared in %s) is not in the compiled PTX", sig.Name, sig.File)
			continue
		}
		if file[sig.Name] != sig.File {
			t.Errorf("kernel %s is in %s, declared in %s", sig.Name, file[sig.Name], sig.File)
		}
		want := make([]string, len(sig.Params))
		for i := range sig.Params {
			want[i] = ptxType[sig.Params[i]]
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("kernel %s: PTX parameters %v, Go declares %q = %v", sig.Name, got, sig.Params, want)
		}
	}
	for name := range entries {
		if !declared[name] {
			t.Errorf("kernel %s in %s has no launcher signature in Sigs", name, file[name])
		}
	}
	t.Logf("%d kernels: parameter lists match", len(Sigs))
}

// ptxEntries returns the parameter types of every .entry in a PTX text.
func ptxEntries(ptx string) map[string][]string {
	out := map[string][]string{}
	for _, chunk := range strings.Split(ptx, ".entry ")[1:] {
		name, rest, ok := strings.Cut(chunk, "(")
		if !ok {
			continue
		}
		params, _, _ := strings.Cut(rest, ")")
		var types []string
		for _, line := range strings.Split(params, ",") {
			f := strings.Fields(line)
			if len(f) >= 2 && f[0] == ".param" {
				types = append(types, f[1])
			}
		}
		out[strings.TrimSpace(name)] = types
	}
	return out
}
