package cudalib

// The optional bindings that CUDA graphs need, on fake libraries built here: a driver without
// the graph functions still binds (and says what is missing), a CUDA 11 driver's
// cuGraphInstantiate_v2 stands in for cuGraphInstantiateWithFlags, and cublasSetWorkspace_v2
// is bound where cuBLAS has it.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"
)

// fakeDriverBase is every symbol bindDriver requires, as a stub that succeeds.
var fakeDriverBase = []string{"cuInit", "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName",
	"cuDeviceGetAttribute", "cuDeviceTotalMem_v2", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2",
	"cuCtxSetCurrent", "cuCtxSynchronize", "cuStreamCreate", "cuStreamDestroy_v2", "cuStreamSynchronize",
	"cuMemAlloc_v2", "cuMemFree_v2", "cuMemGetInfo_v2", "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2",
	"cuMemcpyDtoDAsync_v2", "cuMemsetD32Async", "cuModuleLoadDataEx", "cuModuleGetFunction", "cuModuleUnload",
	"cuLaunchKernel", "cuGetErrorName", "cuGetErrorString"}

// The graph functions but instantiation, which each fake adds in one of its two forms.
const fakeGraphCalls = `int cuStreamBeginCapture_v2(void* s, unsigned mode) { return mode == 2 ? 0 : 1; }
int cuStreamEndCapture(void* s, void** g) { *g = (void*)5; return 0; }
int cuGraphLaunch(void* e, void* s) { return 0; }
int cuGraphExecDestroy(void* e) { return 0; }
int cuGraphDestroy(void* g) { return 0; }
`

// The two forms of cuGraphInstantiate: each sets *exec from its arguments, so the test sees
// what reached it (the _v2 form must get no error node and no log buffer).
const (
	fakeInstWithFlags = "int cuGraphInstantiateWithFlags(void** e, void* g, unsigned long long f) { *e = (char*)g + 100 + f; return 0; }\n"
	fakeInstV2        = "int cuGraphInstantiate_v2(void** e, void* g, void* node, char* log, unsigned long n) { if (node || log || n) return 1; *e = (char*)g + 200; return 0; }\n"
)

func fakeCompiler(t *testing.T) {
	t.Helper()
	p, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler to build the fake libraries")
	}
	ccPath, ccEnvPath = p, os.Getenv("PATH")
}

func fakeDriver(t *testing.T, extra string) *Driver {
	t.Helper()
	var src strings.Builder
	for _, s := range fakeDriverBase {
		src.WriteString("int " + s + "(void) { return 0; }\n")
	}
	src.WriteString(extra)
	dir := t.TempDir()
	cc(t, dir, "libcuda-graphfake.so", "libcuda-graphfake.so", src.String()) // a soname no other test loads
	lib, err := openLibrary(filepath.Join(dir, "libcuda-graphfake.so"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lib.close)
	d, err := bindDriver(lib)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestBindGraphs(t *testing.T) {
	fakeCompiler(t)
	old := fakeDriver(t, "")
	if old.StreamBeginCapture != nil || old.GraphInstantiate != nil || old.GraphLaunch != nil {
		t.Error("a driver without graph functions got some bound")
	}
	for _, s := range []string{"cuGraphInstantiateWithFlags", "cuGraphInstantiate_v2", "cuStreamBeginCapture_v2"} {
		if !strings.Contains(old.GraphsMissing, s) {
			t.Errorf("GraphsMissing %q does not name %s", old.GraphsMissing, s)
		}
	}
	for _, c := range []struct {
		name, inst string
		want       uintptr // exec for graph 7, flags 0
	}{{"CUDA 12 (WithFlags)", fakeInstWithFlags, 107}, {"CUDA 11 (_v2)", fakeInstV2, 207}, {"both", fakeInstWithFlags + fakeInstV2, 107}} {
		d := fakeDriver(t, fakeGraphCalls+c.inst)
		if d.GraphsMissing != "" || d.StreamBeginCapture == nil || d.GraphInstantiate == nil {
			t.Fatalf("%s: graph functions not bound: %s", c.name, d.GraphsMissing)
		}
		var exec uintptr
		if r := d.GraphInstantiate(unsafe.Pointer(&exec), 7, 0); r != 0 || exec != c.want {
			t.Errorf("%s: instantiate gave %d, exec %d, want exec %d", c.name, r, exec, c.want)
		}
		if r := d.StreamBeginCapture(1, StreamCaptureModeRelaxed); r != 0 {
			t.Errorf("%s: cuStreamBeginCapture_v2 did not get the relaxed mode (2)", c.name)
		}
	}
}

func TestBindCUBLASWorkspace(t *testing.T) {
	fakeCompiler(t)
	const base = `int cublasCreate_v2(void** h) { return 0; }
int cublasDestroy_v2(void* h) { return 0; }
int cublasSetStream_v2(void* h, void* s) { return 0; }
int cublasSetMathMode(void* h, int m) { return 0; }
int cublasSgemm_v2(void) { return 0; }
int cublasGetProperty(int t, int* v) { *v = t == 0 ? 12 : 4; return 0; }
`
	for _, withWS := range []bool{false, true} {
		src := base
		if withWS {
			src += "int cublasSetWorkspace_v2(void* h, void* w, unsigned long n) { return n == 1234 ? 0 : 7; }\n"
		}
		dir := t.TempDir()
		cc(t, dir, "libcublas-graphfake.so", "libcublas-graphfake.so", src)
		b, err := bindCUBLAS(filepath.Join(dir, "libcublas-graphfake.so"))
		if err != nil {
			t.Fatalf("cuBLAS with workspace call %v: %v", withWS, err)
		}
		if (b.SetWorkspace != nil) != withWS {
			t.Errorf("cuBLAS with workspace call %v: SetWorkspace bound %v", withWS, b.SetWorkspace != nil)
		}
		if withWS && b.SetWorkspace(1, 4096, 1234) != 0 {
			t.Error("cublasSetWorkspace_v2 did not get its size")
		}
		b.close()
	}
}

// TestBindAsync: page-locked memory and event waits are bound all or none, and only with the
// event functions; AsyncMissing names what is missing.
func TestBindAsync(t *testing.T) {
	fakeCompiler(t)
	const events = "int cuEventCreate(void) { return 0; }\nint cuEventRecord(void) { return 0; }\nint cuEventSynchronize(void) { return 0; }\nint cuEventDestroy_v2(void) { return 0; }\nint cuEventElapsedTime(void) { return 0; }\n"
	const async = "int cuMemHostAlloc(void** p, unsigned long n, unsigned f) { *p = (void*)n; return 0; }\nint cuMemFreeHost(void* p) { return 0; }\nint cuStreamWaitEvent(void) { return 0; }\n"
	for _, c := range []struct {
		name, src string
		bound     bool
		missing   []string
	}{
		{"no event functions", async, false, []string{"no usable event functions"}},
		{"events, no page-locked memory", events, false, []string{"cuMemHostAlloc", "cuMemFreeHost", "cuStreamWaitEvent"}},
		{"both", events + async, true, nil},
	} {
		d := fakeDriver(t, c.src)
		if (d.MemHostAlloc != nil) != c.bound || (d.StreamWaitEvent != nil) != c.bound || (d.MemFreeHost != nil) != c.bound {
			t.Errorf("%s: bound %v %v %v, want all %v", c.name, d.MemHostAlloc != nil, d.MemFreeHost != nil, d.StreamWaitEvent != nil, c.bound)
		}
		for _, m := range c.missing {
			if !strings.Contains(d.AsyncMissing, m) {
				t.Errorf("%s: AsyncMissing %q does not name %s", c.name, d.AsyncMissing, m)
			}
		}
		if c.bound {
			var p unsafe.Pointer
			if r := d.MemHostAlloc(unsafe.Pointer(&p), 4096, 0); r != 0 || uintptr(p) != 4096 {
				t.Errorf("%s: cuMemHostAlloc gave %d, %p", c.name, r, p)
			}
		}
	}
}
