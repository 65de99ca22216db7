package cudalib

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"unsafe"
)

// NVRTC is a loaded NVIDIA runtime compiler. It needs no GPU and no driver: CI uses it alone to
// compile every kernel (the compile gate).
type NVRTC struct {
	Path    string  // the file that was loaded
	Version Version // nvrtcVersion
	Cubin   bool    // compile to device code (sm_XX) instead of PTX: see LoadNVRTC
	// Builtins is the libnvrtc-builtins preloaded from NVRTC's own folder ("" when that folder
	// has none and NVRTC finds its builtins through the system loader).
	Builtins    string
	archs       []int // architectures this NVRTC can target, if it can tell
	lib         *library
	builtins    *library
	builtinsDir string

	version           func(major, minor unsafe.Pointer) int32
	createProgram     func(prog, src, name unsafe.Pointer, numHeaders int32, headers, includeNames unsafe.Pointer) int32
	compileProgram    func(prog uintptr, numOptions int32, options unsafe.Pointer) int32
	destroyProgram    func(prog unsafe.Pointer) int32
	getPTXSize        func(prog uintptr, size unsafe.Pointer) int32
	getPTX            func(prog uintptr, buf unsafe.Pointer) int32
	getCUBINSize      func(prog uintptr, size unsafe.Pointer) int32
	getCUBIN          func(prog uintptr, buf unsafe.Pointer) int32
	getProgramLogSize func(prog uintptr, size unsafe.Pointer) int32
	getProgramLog     func(prog uintptr, buf unsafe.Pointer) int32
	getErrorString    func(res int32) string
	numArchs          func(n unsafe.Pointer) int32
	supportedArchs    func(a unsafe.Pointer) int32
}

// nvrtcNames are the sonames NVRTC ships under, newest major first (CUDA 11 kept "11.2").
var nvrtcNames = []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}

// LoadNVRTC finds and loads NVRTC. With driver non-nil (the CUDA version the driver supports) it
// picks the newest NVRTC whose version is not newer than the driver's: a newer NVRTC writes PTX
// of an ISA version the driver's JIT refuses. If every NVRTC found is newer but one has the
// driver's major version, that one is used in cubin mode (device code for the exact GPU
// architecture, which the driver loads without JIT under CUDA's minor-version compatibility).
// Without a driver (the compile gate) the newest NVRTC found is used.
//
// Candidates are probed one at a time (opened, asked their version, closed), so that two
// installations are never loaded together; the chosen one is then opened again after its
// libnvrtc-builtins.so.<major>.<minor> from the same folder (see openChosenNVRTC).
func LoadNVRTC(driver *Version) (*NVRTC, error) {
	all, tried := probeEach(EnvNVRTC, nvrtcNames, func(f string) (Version, string, string, error) {
		n, err := openNVRTC(f)
		if err != nil {
			return Version{}, "", "", err
		}
		defer n.Close()
		return n.Version, realFile(n.lib, "nvrtcVersion"), "", nil
	})
	if len(all) == 0 {
		return nil, &ProbeError{Lib: "NVRTC", Reason: "no loadable libnvrtc found", Attempts: tried}
	}
	vs := make([]Version, len(all))
	for i, f := range all {
		vs[i] = f.version
	}
	pick, cubin := chooseNVRTC(vs, driver)
	if pick < 0 {
		for _, f := range all {
			tried[f.idx].Result += fmt.Sprintf(": newer than the driver's CUDA %v", *driver)
		}
		return nil, &ProbeError{Lib: "NVRTC", Reason: fmt.Sprintf("no NVRTC usable with the driver's CUDA %v (need version ≤ %v, or major %d)", *driver, *driver, driver.Major), Attempts: tried}
	}
	c := all[pick]
	n, err := openChosenNVRTC(c.file, filepath.Dir(c.real), c.version)
	if err != nil {
		tried[c.idx].Result += ": chosen, but opening it again failed: " + err.Error()
		return nil, &ProbeError{Lib: "NVRTC", Reason: "the chosen NVRTC could not be opened again", Attempts: tried}
	}
	n.Cubin = cubin
	tried[c.idx].Result += ": chosen"
	return n, nil
}

// builtinsName is the library NVRTC v loads by name when it compiles.
func builtinsName(v Version) string {
	return fmt.Sprintf("libnvrtc-builtins.so.%d.%d", v.Major, v.Minor)
}

// openChosenNVRTC opens NVRTC file after preloading, from dir (the folder the file really lies
// in), the libnvrtc-builtins.so.<major>.<minor> that NVRTC dlopens by name at its first
// compile: the system loader then hands NVRTC this copy, even when dir is not on the loader's
// path (NVRTC found in a wheel or a toolkit that is not on LD_LIBRARY_PATH). Without such a
// file NVRTC is opened anyway and left to find its builtins itself; a failure then says so
// (see NVRTC.errString).
func openChosenNVRTC(file, dir string, v Version) (*NVRTC, error) {
	b, err := preload(dir, builtinsName(v))
	if err != nil {
		return nil, err
	}
	n, err := openNVRTC(file)
	if err != nil {
		b.close()
		return nil, err
	}
	n.builtins, n.builtinsDir = b, dir
	if b != nil {
		n.Builtins = b.path
	}
	return n, nil
}

// chooseNVRTC picks among NVRTC versions sorted newest first: without a driver the newest; with
// one, the newest not newer than the driver (PTX mode), else the oldest of the driver's major
// version (cubin mode: device code needs no JIT, and CUDA's minor-version compatibility lets a
// driver load device code from a newer toolkit of its major version). -1: none fits.
func chooseNVRTC(vs []Version, driver *Version) (pick int, cubin bool) {
	if len(vs) == 0 {
		return -1, false
	}
	if driver == nil {
		return 0, false
	}
	for i, v := range vs {
		if v.LessEq(*driver) {
			return i, false
		}
	}
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i].Major == driver.Major {
			return i, true
		}
	}
	return -1, false
}

func openNVRTC(path string) (*NVRTC, error) {
	lib, err := openLibrary(path)
	if err != nil {
		return nil, err
	}
	n := &NVRTC{Path: path, lib: lib}
	err = lib.bindAll(map[string]any{
		"nvrtcVersion":           &n.version,
		"nvrtcCreateProgram":     &n.createProgram,
		"nvrtcCompileProgram":    &n.compileProgram,
		"nvrtcDestroyProgram":    &n.destroyProgram,
		"nvrtcGetPTXSize":        &n.getPTXSize,
		"nvrtcGetPTX":            &n.getPTX,
		"nvrtcGetProgramLogSize": &n.getProgramLogSize,
		"nvrtcGetProgramLog":     &n.getProgramLog,
		"nvrtcGetErrorString":    &n.getErrorString,
	})
	if err != nil {
		lib.close()
		return nil, err
	}
	// Optional symbols: cubin output (11.1+) and the list of architectures (11.2+).
	if lib.bind(&n.getCUBINSize, "nvrtcGetCUBINSize") != nil || lib.bind(&n.getCUBIN, "nvrtcGetCUBIN") != nil {
		n.getCUBINSize, n.getCUBIN = nil, nil
	}
	if lib.bind(&n.numArchs, "nvrtcGetNumSupportedArchs") != nil || lib.bind(&n.supportedArchs, "nvrtcGetSupportedArchs") != nil {
		n.numArchs, n.supportedArchs = nil, nil
	}
	var maj, min int32
	if r := n.version(unsafe.Pointer(&maj), unsafe.Pointer(&min)); r != 0 {
		msg := n.errString(r) // before the library is closed: errString calls into it
		lib.close()
		return nil, fmt.Errorf("nvrtcVersion: %s", msg)
	}
	n.Version = Version{int(maj), int(min)}
	if n.numArchs != nil {
		var k int32
		if n.numArchs(unsafe.Pointer(&k)) == 0 && k > 0 && k < 1000 {
			a := make([]int32, k)
			if n.supportedArchs(unsafe.Pointer(&a[0])) == 0 {
				for _, v := range a {
					n.archs = append(n.archs, int(v))
				}
			}
		}
	}
	return n, nil
}

// Close unloads the library (and the builtins preloaded for it).
func (n *NVRTC) Close() {
	n.lib.close()
	n.builtins.close()
}

// Archs lists the architectures (70 for compute_70/sm_70, …) this NVRTC can target; nil if it
// cannot tell (before CUDA 11.2).
func (n *NVRTC) Archs() []int { return append([]int(nil), n.archs...) }

// TargetArch returns the architecture to compile for on a GPU of compute capability cc
// (e.g. 70, 90): cc itself if this NVRTC knows it, else the highest it knows below cc (PTX
// for an older architecture runs on newer GPUs through the driver's JIT).
func (n *NVRTC) TargetArch(cc int) (int, error) {
	if len(n.archs) == 0 {
		return cc, nil
	}
	best := 0
	for _, a := range n.archs {
		if a == cc {
			return cc, nil
		}
		if a < cc && a > best {
			best = a
		}
	}
	if best == 0 {
		return 0, fmt.Errorf("cuda: NVRTC %v (%s) cannot compile for compute capability %d.%d (it knows %v)", n.Version, n.Path, cc/10, cc%10, n.archs)
	}
	if n.Cubin {
		return 0, fmt.Errorf("cuda: NVRTC %v (%s) is newer than the driver and does not know sm_%d for device code; install an NVRTC no newer than the driver", n.Version, n.Path, cc)
	}
	return best, nil
}

// nvrtcBuiltinFailure is NVRTC_ERROR_BUILTIN_OPERATION_FAILURE: NVRTC could not load or use
// its libnvrtc-builtins.
const nvrtcBuiltinFailure = 7

func (n *NVRTC) errString(r int32) string {
	msg := fmt.Sprintf("nvrtc error %d", r)
	if n.getErrorString != nil {
		if s := n.getErrorString(r); s != "" {
			msg = fmt.Sprintf("%s (%d)", s, r)
		}
	}
	if r == nvrtcBuiltinFailure {
		msg += "; " + n.builtinsHint()
	}
	return msg
}

// builtinsHint says which builtins library NVRTC needs and where it was looked for.
func (n *NVRTC) builtinsHint() string {
	name := builtinsName(n.Version)
	if n.Builtins != "" {
		return fmt.Sprintf("NVRTC %v (%s) failed in its builtins %s (preloaded)", n.Version, n.Path, n.Builtins)
	}
	where := "the system loader's path"
	if n.builtinsDir != "" {
		where = n.builtinsDir + " (NVRTC's folder) and the system loader's path"
	}
	return fmt.Sprintf("NVRTC %v (%s) needs %s, which is not in %s: put it beside NVRTC (it ships with NVRTC) or add the folder holding it to LD_LIBRARY_PATH",
		n.Version, n.Path, name, where)
}

// CompileError is a kernel source that NVRTC rejected; Log is NVRTC's compiler output.
type CompileError struct {
	Kernel string // file name, e.g. "gather.cu"
	Target string // e.g. "compute_70"
	Result string
	Log    string
}

func (e *CompileError) Error() string {
	msg := fmt.Sprintf("cuda: kernel %s for %s: NVRTC: %s", e.Kernel, e.Target, e.Result)
	if l := strings.TrimSpace(e.Log); l != "" {
		msg += ":\n" + l
	}
	return msg
}

// Compile compiles the CUDA C source src (file name name, #include-able headers by name) for
// architecture arch (70 = compute_70). It returns PTX, or device code for sm_<arch> when cubin
// is true, and NVRTC's log (warnings) on success; a *CompileError with the log on failure.
// defines are NAME=VALUE preprocessor definitions (CompileOptions).
func (n *NVRTC) Compile(name, src string, headers map[string]string, arch int, cubin bool, defines ...string) (code []byte, log string, err error) {
	var pin runtime.Pinner
	defer pin.Unpin()
	hnames := make([]string, 0, len(headers))
	for h := range headers {
		hnames = append(hnames, h)
	}
	sort.Strings(hnames)
	hsrc := make([]string, len(hnames))
	for i, h := range hnames {
		hsrc[i] = headers[h]
	}
	target := fmt.Sprintf("compute_%d", arch)
	if cubin {
		if n.getCUBIN == nil {
			return nil, "", fmt.Errorf("cuda: NVRTC %v (%s) cannot emit device code (no nvrtcGetCUBIN)", n.Version, n.Path)
		}
		target = fmt.Sprintf("sm_%d", arch)
	}
	opts := CompileOptions(target, defines...)

	var prog uintptr
	if r := n.createProgram(unsafe.Pointer(&prog), cstr(&pin, src), cstr(&pin, name), int32(len(hnames)),
		cstrArray(&pin, hsrc), cstrArray(&pin, hnames)); r != 0 {
		return nil, "", fmt.Errorf("cuda: kernel %s: nvrtcCreateProgram: %s", name, n.errString(r))
	}
	defer n.destroyProgram(unsafe.Pointer(&prog))
	res := n.compileProgram(prog, int32(len(opts)), cstrArray(&pin, opts))
	log = n.programLog(prog)
	if res != 0 {
		return nil, log, &CompileError{Kernel: name, Target: target, Result: n.errString(res), Log: log}
	}
	sizeFn, getFn := n.getPTXSize, n.getPTX
	if cubin {
		sizeFn, getFn = n.getCUBINSize, n.getCUBIN
	}
	var size uintptr
	if r := sizeFn(prog, unsafe.Pointer(&size)); r != 0 {
		return nil, log, fmt.Errorf("cuda: kernel %s for %s: output size: %s", name, target, n.errString(r))
	}
	if size == 0 {
		return nil, log, fmt.Errorf("cuda: kernel %s for %s: NVRTC returned empty output", name, target)
	}
	buf := make([]byte, size)
	if r := getFn(prog, unsafe.Pointer(&buf[0])); r != 0 {
		return nil, log, fmt.Errorf("cuda: kernel %s for %s: output: %s", name, target, n.errString(r))
	}
	if !cubin {
		buf = []byte(strings.TrimRight(string(buf), "\x00"))
	}
	return buf, log, nil
}

func (n *NVRTC) programLog(prog uintptr) string {
	var size uintptr
	if n.getProgramLogSize(prog, unsafe.Pointer(&size)) != 0 || size <= 1 {
		return ""
	}
	buf := make([]byte, size)
	if n.getProgramLog(prog, unsafe.Pointer(&buf[0])) != 0 {
		return ""
	}
	return strings.TrimRight(string(buf), "\x00")
}

// CompileOptions are NVRTC's options for a target ("compute_70" or "sm_90"), with a -D for
// each of defines (gpu.kernel_defines, NAME=VALUE: the kernels' tuning constants; part of the
// kernel cache's key). No fast-math: the kernels are compared with CPU twins that use exact
// exp, log and division.
func CompileOptions(target string, defines ...string) []string {
	opts := []string{"--gpu-architecture=" + target, "--std=c++14", "-default-device"}
	for _, d := range defines {
		opts = append(opts, "-D"+d)
	}
	return opts
}

// cstr returns a pinned NUL-terminated copy of s.
func cstr(pin *runtime.Pinner, s string) unsafe.Pointer {
	b := make([]byte, len(s)+1)
	copy(b, s)
	pin.Pin(&b[0])
	return unsafe.Pointer(&b[0])
}

// cstrArray returns a pinned C array of pinned NUL-terminated strings (nil when ss is empty).
func cstrArray(pin *runtime.Pinner, ss []string) unsafe.Pointer {
	if len(ss) == 0 {
		return nil
	}
	ptrs := make([]unsafe.Pointer, len(ss))
	for i, s := range ss {
		ptrs[i] = cstr(pin, s)
	}
	pin.Pin(&ptrs[0])
	return unsafe.Pointer(&ptrs[0])
}
