package cudalib

// Library discovery on fake installations: small shared libraries built here with the system C
// compiler, laid out as a CUDA toolkit, as CUDA 13's Python wheels in a virtual environment that
// is not activated, and as both at once. The fakes export the few symbols the binding calls;
// fake NVRTC dlopens its builtins by name at compile time as the real one does, and fake cuBLAS
// reads its minor version from its libcublasLt, so a cuBLAS bound to another installation's
// libcublasLt reports the wrong version.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const fakeNVRTC = `#include <dlfcn.h>
#include <string.h>
static const char* marker(void) {
  void* h = dlopen("libnvrtc-builtins.so.%[1]d.%[2]d", RTLD_NOW);
  if (!h) return 0;
  const char* (*m)(void) = (const char* (*)(void))dlsym(h, "fake_builtins_marker");
  static char mark[64];
  mark[0] = 0;
  if (m) strncpy(mark, m(), sizeof mark - 1);
  dlclose(h);
  return m ? mark : 0;
}
int nvrtcVersion(int* a, int* b) { if (%[3]d) return 3; *a = %[1]d; *b = %[2]d; return 0; }
const char* nvrtcGetErrorString(int r) { return r == 7 ? "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE" : "NVRTC_ERROR_FAKE"; }
int nvrtcCreateProgram(void** p, const char* s, const char* n, int k, const char** h, const char** i) { *p = (void*)1; return 0; }
int nvrtcDestroyProgram(void** p) { return 0; }
static char out[256];
int nvrtcCompileProgram(void* p, int n, const char** o) {
  const char* m = marker();
  if (!m) return 7;
  strcpy(out, "// PTX from fake NVRTC %[1]d.%[2]d with builtins ");
  strcat(out, m);
  return 0;
}
int nvrtcGetPTXSize(void* p, size_t* n) { *n = strlen(out) + 1; return 0; }
int nvrtcGetPTX(void* p, char* b) { strcpy(b, out); return 0; }
int nvrtcGetProgramLogSize(void* p, size_t* n) { *n = 1; return 0; }
int nvrtcGetProgramLog(void* p, char* b) { b[0] = 0; return 0; }
int nvrtcGetNumSupportedArchs(int* n) { *n = 2; return 0; }
int nvrtcGetSupportedArchs(int* a) { a[0] = 75; a[1] = 90; return 0; }
`

const fakeBuiltins = `const char* fake_builtins_marker(void) { return "%s"; }
`

const fakeLt = `int fake_lt_minor(void) { return %d; }
`

const fakeCUBLAS = `int fake_lt_minor(void);
int cublasCreate_v2(void** h) { return 0; }
int cublasDestroy_v2(void* h) { return 0; }
int cublasSetStream_v2(void* h, void* s) { return 0; }
int cublasSetMathMode(void* h, int m) { return 0; }
int cublasSgemm_v2(void) { return 0; }
int cublasGetProperty(int t, int* v) { *v = t == 0 ? %d : fake_lt_minor(); return 0; }
`

// cc compiles C source into the shared library dir/file with the given soname, linked against
// the libraries in needed (full paths: recorded as DT_NEEDED by their sonames, with no search
// path, so the loader finds them only if they are already loaded).
func cc(t *testing.T, dir, file, soname, src string, needed ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := filepath.Join(t.TempDir(), "src.c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-shared", "-fPIC", "-o", filepath.Join(dir, file), "-Wl,-soname," + soname, c}, needed...)
	cmd := exec.Command(ccPath, append(args, "-ldl")...)
	cmd.Env = append(os.Environ(), "PATH="+ccEnvPath)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cc %v: %v\n%s", args, err, out)
	}
}

// fakeInstall lays out NVRTC major.minor with its builtins and cuBLAS major.minor with its
// libcublasLt in dir, each with a marker naming the installation.
func fakeInstall(t *testing.T, dir, name string, major, minor int) {
	t.Helper()
	cc(t, dir, fmt.Sprintf("libnvrtc-builtins.so.%d.%d", major, minor), fmt.Sprintf("libnvrtc-builtins.so.%d.%d", major, minor), fmt.Sprintf(fakeBuiltins, name))
	cc(t, dir, fmt.Sprintf("libnvrtc.so.%d", major), fmt.Sprintf("libnvrtc.so.%d", major), fmt.Sprintf(fakeNVRTC, major, minor, 0))
	lt := fmt.Sprintf("libcublasLt.so.%d.%d.0", major, minor)
	cc(t, dir, lt, fmt.Sprintf("libcublasLt.so.%d", major), fmt.Sprintf(fakeLt, minor))
	link(t, filepath.Join(dir, lt), filepath.Join(dir, fmt.Sprintf("libcublasLt.so.%d", major)))
	cb := fmt.Sprintf("libcublas.so.%d.%d.0", major, minor)
	cc(t, dir, cb, fmt.Sprintf("libcublas.so.%d", major), fmt.Sprintf(fakeCUBLAS, major), filepath.Join(dir, lt))
	link(t, filepath.Join(dir, cb), filepath.Join(dir, fmt.Sprintf("libcublas.so.%d", major)))
}

// ccPath is the C compiler and ccEnvPath the PATH it runs with, both from before the tests
// replace PATH.
var ccPath, ccEnvPath string

func link(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(filepath.Base(target), name); err != nil {
		t.Fatal(err)
	}
}

// fakeSystem makes an empty machine under a temporary root: no search variables, a home and a
// PATH of its own, and sysRoot pointing there. It returns the root.
func fakeSystem(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler to build the fake libraries")
	}
	ccPath, ccEnvPath = p, os.Getenv("PATH")
	// NVIDIA's libraries stay mapped after dlclose, and a real libnvrtc-builtins or
	// libcublasLt already in this process (after the GPU tests) answers the fakes' requests by
	// soname: the fakes only mean something in a process that has not loaded the real ones.
	if maps, err := os.ReadFile("/proc/self/maps"); err == nil {
		for _, line := range strings.Split(string(maps), "\n") {
			for _, real := range []string{"libnvrtc-builtins", "libcublasLt"} {
				if strings.Contains(line, real) && !strings.Contains(line, "/TestDiscovery") {
					t.Skipf("a real %s is loaded in this test process; run the discovery tests alone (-run Discovery)", real)
				}
			}
		}
	}
	root := t.TempDir()
	old := sysRoot
	sysRoot = root
	t.Cleanup(func() { sysRoot = old })
	for _, v := range []string{EnvLibDir, EnvNVRTC, EnvCUBLAS, EnvLibCUDA, "LD_LIBRARY_PATH", "VIRTUAL_ENV", "CONDA_PREFIX", "CUDA_HOME", "CUDA_PATH"} {
		t.Setenv(v, "")
	}
	t.Setenv("HOME", filepath.Join(root, "home"))
	t.Setenv("PATH", filepath.Join(root, "usr", "bin"))
	return root
}

// fakeVenv makes root/opt/torch/.venv as `python -m venv` does, its python3 a link to
// root/usr/bin/python3.12, with PATH leading to the venv's bin (not activated: no VIRTUAL_ENV),
// and returns the folder the CUDA 13 wheels put their libraries in.
func fakeVenv(t *testing.T, root string) string {
	t.Helper()
	venv := filepath.Join(root, "opt", "torch", ".venv")
	for _, d := range []string{filepath.Join(venv, "bin"), filepath.Join(root, "usr", "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	py := filepath.Join(root, "usr", "bin", "python3.12")
	if err := os.WriteFile(py, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(py, filepath.Join(venv, "bin", "python3")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", filepath.Join(venv, "bin")+string(os.PathListSeparator)+filepath.Join(root, "usr", "bin"))
	return filepath.Join(venv, "lib", "python3.12", "site-packages", "nvidia", "cu13", "lib")
}

// compileMarker compiles through n and returns the builtins marker the fake PTX names.
func compileMarker(t *testing.T, n *NVRTC) string {
	t.Helper()
	ptx, _, err := n.Compile("k.cu", "", nil, 90, false)
	if err != nil {
		t.Fatalf("compile with %s: %v", n.Path, err)
	}
	_, m, _ := strings.Cut(string(ptx), "with builtins ")
	return m
}

func loadFakeCUBLAS(t *testing.T, driver Version) *CUBLAS {
	t.Helper()
	b, err := openCUBLAS(driver)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.close)
	return b
}

func TestDiscoveryToolkitOnly(t *testing.T) {
	root := fakeSystem(t)
	lib := filepath.Join(root, "usr", "local", "cuda-13.0", "targets", "x86_64-linux", "lib")
	fakeInstall(t, lib, "toolkit", 13, 0)
	// The toolkit's stubs: loadable, but every call fails. Never chosen, even on LD_LIBRARY_PATH.
	stubs := filepath.Join(lib, "stubs")
	cc(t, stubs, "libnvrtc.so.13", "libnvrtc.so.13", fmt.Sprintf(fakeNVRTC, 13, 9, 1))
	t.Setenv("LD_LIBRARY_PATH", stubs)

	n, err := LoadNVRTC(&Version{13, 0})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if !strings.HasPrefix(n.Path, lib) || n.Version != (Version{13, 0}) {
		t.Fatalf("NVRTC %v from %s, want 13.0 from %s", n.Version, n.Path, lib)
	}
	if want := filepath.Join(lib, "libnvrtc-builtins.so.13.0"); n.Builtins != want {
		t.Errorf("builtins %q preloaded, want %s", n.Builtins, want)
	}
	// The toolkit folder is not on the loader's path: only the preload lets NVRTC find them.
	if m := compileMarker(t, n); m != "toolkit" {
		t.Errorf("compiled with builtins %q, want the toolkit's", m)
	}
	b := loadFakeCUBLAS(t, Version{13, 0})
	if b.Version != (Version{13, 0}) || !strings.HasPrefix(b.LtPath, lib) {
		t.Errorf("cuBLAS %v from %s with Lt %q", b.Version, b.Path, b.LtPath)
	}
}

func TestDiscoveryWheelsOnly(t *testing.T) {
	root := fakeSystem(t)
	wheel := fakeVenv(t, root)
	fakeInstall(t, wheel, "wheel", 13, 1)

	n, err := LoadNVRTC(&Version{13, 1})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if !strings.HasPrefix(n.Path, wheel) || !strings.HasPrefix(n.Builtins, wheel) {
		t.Fatalf("NVRTC %s with builtins %q, want both from the unactivated venv's %s", n.Path, n.Builtins, wheel)
	}
	if m := compileMarker(t, n); m != "wheel" {
		t.Errorf("compiled with builtins %q, want the wheel's", m)
	}
	b := loadFakeCUBLAS(t, Version{13, 1})
	if !strings.HasPrefix(b.Path, wheel) || b.Version != (Version{13, 1}) {
		t.Errorf("cuBLAS %v from %s, want 13.1 from the wheel", b.Version, b.Path)
	}
}

// TestDiscoveryToolkitAndWheels: a toolkit 13.0 and wheels 13.1 on one machine. Each NVRTC
// compiles with its own builtins and each cuBLAS runs with its own libcublasLt, whichever was
// probed first; the driver's version decides which is used.
func TestDiscoveryToolkitAndWheels(t *testing.T) {
	root := fakeSystem(t)
	lib := filepath.Join(root, "usr", "local", "cuda-13.0", "targets", "x86_64-linux", "lib")
	fakeInstall(t, lib, "toolkit", 13, 0)
	wheel := fakeVenv(t, root)
	fakeInstall(t, wheel, "wheel", 13, 1)

	for _, c := range []struct {
		driver Version
		dir    string
		marker string
		minor  int
	}{{Version{13, 0}, lib, "toolkit", 0}, {Version{13, 1}, wheel, "wheel", 1}} {
		n, err := LoadNVRTC(&c.driver)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(n.Path, c.dir) {
			t.Errorf("driver %v: NVRTC %v from %s, want the one in %s", c.driver, n.Version, n.Path, c.dir)
		}
		if m := compileMarker(t, n); m != c.marker {
			t.Errorf("driver %v: NVRTC %s compiled with the %s builtins", c.driver, n.Path, m)
		}
		n.Close()
	}
	// cuBLAS: the toolkit's (probed first) and the wheel's; the newest is chosen, and its
	// version comes from its own libcublasLt.
	b := loadFakeCUBLAS(t, Version{13, 1})
	if !strings.HasPrefix(b.Path, wheel) || b.Version != (Version{13, 1}) || !strings.HasPrefix(b.LtPath, wheel) {
		t.Errorf("cuBLAS %v from %s with Lt %s, want 13.1 with the wheel's Lt", b.Version, b.Path, b.LtPath)
	}
}

// TestDiscoveryBrokenNVRTC: an NVRTC whose version call fails is reported, not a crash (its
// error string was once read after the library had been closed), and missing builtins give an
// error that names the file.
func TestDiscoveryBrokenNVRTC(t *testing.T) {
	root := fakeSystem(t)
	bad := filepath.Join(root, "bad")
	cc(t, bad, "libnvrtc.so.13", "libnvrtc.so.13", fmt.Sprintf(fakeNVRTC, 13, 0, 1))
	t.Setenv(EnvNVRTC, filepath.Join(bad, "libnvrtc.so.13"))
	_, err := LoadNVRTC(nil)
	var pe *ProbeError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "nvrtcVersion: NVRTC_ERROR_FAKE") {
		t.Fatalf("broken NVRTC: %v", err)
	}

	nob := filepath.Join(root, "nobuiltins")
	cc(t, nob, "libnvrtc.so.13", "libnvrtc.so.13", fmt.Sprintf(fakeNVRTC, 13, 7, 0))
	t.Setenv(EnvNVRTC, filepath.Join(nob, "libnvrtc.so.13"))
	n, err := LoadNVRTC(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	_, _, err = n.Compile("k.cu", "", nil, 90, false)
	if err == nil || !strings.Contains(err.Error(), "libnvrtc-builtins.so.13.7") || !strings.Contains(err.Error(), nob) {
		t.Fatalf("compile without builtins: %v", err)
	}
	t.Logf("as a user sees it: %v", err)
}
