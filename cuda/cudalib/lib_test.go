package cudalib

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestProbeErrorNamesEveryPath(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvLibDir, dir)
	t.Setenv(EnvNVRTC, "")
	files, tried := candidates([]string{"libnvrtc.so.12", "libnvrtc.so.11.2"}, searchDirs())
	if !slices.Contains(files, "libnvrtc.so.12") {
		t.Errorf("bare soname not offered to the system loader: %v", files)
	}
	want := filepath.Join(dir, "libnvrtc.so.12")
	found := false
	for _, a := range tried {
		found = found || (a.Path == want && a.Result == "not found")
	}
	if !found {
		t.Fatalf("override folder not probed first: %v", tried[:min(3, len(tried))])
	}

	// An explicit file that does not exist is the only candidate, and the error names it.
	missing := filepath.Join(dir, "nope", "libnvrtc.so.12")
	t.Setenv(EnvNVRTC, missing)
	_, err := LoadNVRTC(nil)
	var pe *ProbeError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), missing) || ErrNoDevice(err) {
		t.Fatalf("LoadNVRTC with %s=%s: %v", EnvNVRTC, missing, err)
	}
	if len(pe.Attempts) != 1 {
		t.Fatalf("with an explicit file, %d places probed, want 1: %v", len(pe.Attempts), pe.Attempts)
	}
	t.Logf("error as a user sees it:\n%v", err)
}

func TestSearchDirsCoverWheelsAndToolkits(t *testing.T) {
	venv := t.TempDir()
	wheel := filepath.Join(venv, "lib", "python3.11", "site-packages", "nvidia", "cuda_nvrtc", "lib")
	if err := os.MkdirAll(wheel, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("VIRTUAL_ENV", venv)
	t.Setenv(EnvLibDir, "/opt/a:/opt/b")
	t.Setenv("LD_LIBRARY_PATH", "/opt/ld")
	dirs := searchDirs()
	for _, want := range []string{"/opt/a", "/opt/b", "/opt/ld", wheel, "/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu"} {
		if !slices.Contains(dirs, want) {
			t.Errorf("search folders miss %s", want)
		}
	}
	if dirs[0] != "/opt/a" || dirs[1] != "/opt/b" {
		t.Errorf("override folders are not searched first: %v", dirs[:3])
	}
}

func TestNewestFirst(t *testing.T) {
	got := newestFirst([]string{"/usr/local/cuda-11.8", "/usr/local/cuda-12.10", "/usr/local/cuda-12.4", "/usr/local/cuda-9.2"})
	want := []string{"/usr/local/cuda-12.10", "/usr/local/cuda-12.4", "/usr/local/cuda-11.8", "/usr/local/cuda-9.2"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestChooseNVRTC(t *testing.T) {
	v := func(a, b int) Version { return Version{a, b} }
	drv := func(a, b int) *Version { x := v(a, b); return &x }
	for _, c := range []struct {
		have      []Version // newest first
		driver    *Version
		pick      int
		wantCubin bool
	}{
		{[]Version{v(12, 4), v(11, 8)}, nil, 0, false},                  // compile gate: newest
		{[]Version{v(12, 4), v(11, 8)}, drv(12, 4), 0, false},           // equal is fine
		{[]Version{v(12, 6), v(12, 2), v(11, 8)}, drv(12, 4), 1, false}, // 12.6 would emit PTX the 12.4 driver refuses
		{[]Version{v(12, 9), v(12, 6)}, drv(12, 2), 1, true},            // only newer 12.x: device code from the closest
		{[]Version{v(13, 0)}, drv(12, 8), -1, false},                    // a CUDA 13 compiler for a CUDA 12 driver: none
		{nil, drv(12, 0), -1, false},
	} {
		p, cubin := chooseNVRTC(c.have, c.driver)
		if p != c.pick || cubin != c.wantCubin {
			t.Errorf("chooseNVRTC(%v, %v) = %d, %v; want %d, %v", c.have, c.driver, p, cubin, c.pick, c.wantCubin)
		}
	}
}

func TestDriverVersion(t *testing.T) {
	if v := driverVersion(12040); v != (Version{12, 4}) {
		t.Fatalf("12040 → %v", v)
	}
	if v := driverVersion(13000); v != (Version{13, 0}) {
		t.Fatalf("13000 → %v", v)
	}
	if v, err := ParseVersion("11.8"); err != nil || v != (Version{11, 8}) {
		t.Fatalf("ParseVersion(11.8) = %v, %v", v, err)
	}
	if _, err := ParseVersion("x"); err == nil {
		t.Fatal("ParseVersion(x) accepted")
	}
}

// TestKernelDefines: each definition (gpu.kernel_defines) becomes one -D of NVRTC's options.
func TestKernelDefines(t *testing.T) {
	got := CompileOptions("compute_90", "RW_UNROLL=1", "X=2")
	want := []string{"--gpu-architecture=compute_90", "--std=c++14", "-default-device", "-DRW_UNROLL=1", "-DX=2"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("options %q, want %q", got, want)
	}
	if got := CompileOptions("compute_70"); len(got) != 3 {
		t.Fatalf("without definitions: %q", got)
	}
}
