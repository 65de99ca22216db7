package cudalib

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Environment variables that steer the library search. Each *_LIB variable names one file and,
// when set, is the only candidate for that library (a wrong path is an error, not a fallback).
const (
	EnvLibDir  = "REWIREGNN_CUDA_LIB_DIR" // folders searched before all others, ':'-separated
	EnvLibCUDA = "REWIREGNN_LIBCUDA"      // the driver library, e.g. /usr/lib/x86_64-linux-gnu/libcuda.so.1
	EnvNVRTC   = "REWIREGNN_NVRTC"        // the NVRTC library, e.g. /usr/local/cuda-12.4/lib64/libnvrtc.so.12
	EnvCUBLAS  = "REWIREGNN_CUBLAS"       // the cuBLAS library, e.g. .../nvidia/cublas/lib/libcublas.so.12
)

// Attempt records one place a library was looked for and what was found there.
type Attempt struct {
	Path   string // a file path, or a bare soname left to the system loader
	Result string // "not found", "dlopen: …", "version 12.4", "chosen", …
}

// ProbeError says that a library could not be loaded and names every place that was tried.
type ProbeError struct {
	Lib      string // "libcuda", "NVRTC", "cuBLAS"
	Reason   string
	Attempts []Attempt
}

func (e *ProbeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cuda: %s: %s", e.Lib, e.Reason)
	if len(e.Attempts) == 0 {
		b.WriteString(" (nothing was probed)")
		return b.String()
	}
	fmt.Fprintf(&b, "; probed %d places:", len(e.Attempts))
	for _, a := range e.Attempts {
		fmt.Fprintf(&b, "\n  %s: %s", a.Path, a.Result)
	}
	fmt.Fprintf(&b, "\n(set %s to a folder holding the library, or %s/%s/%s to the file)", EnvLibDir, EnvLibCUDA, EnvNVRTC, EnvCUBLAS)
	return b.String()
}

// library is one opened shared object.
type library struct {
	path   string
	handle uintptr
}

// bind looks name up in the library and makes fptr (a pointer to a func variable) call it.
func (l *library) bind(fptr any, name string) error {
	addr, err := purego.Dlsym(l.handle, name)
	if err != nil || addr == 0 {
		return fmt.Errorf("cuda: %s: symbol %s not found: %v", l.path, name, err)
	}
	purego.RegisterFunc(fptr, addr)
	return nil
}

// bindAll binds a table of symbols, stopping at the first missing one.
func (l *library) bindAll(syms map[string]any) error {
	names := make([]string, 0, len(syms))
	for n := range syms {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := l.bind(syms[n], n); err != nil {
			return err
		}
	}
	return nil
}

func (l *library) close() {
	if l != nil && l.handle != 0 {
		_ = purego.Dlclose(l.handle)
		l.handle = 0
	}
}

func openLibrary(path string) (*library, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, err
	}
	return &library{path: path, handle: h}, nil
}

// preload opens the file name in dir, if it exists, so that a library opened after it that
// asks the system loader for that name (its DT_NEEDED entry, or a dlopen by name) gets this
// copy rather than one of another installation. It returns nil when dir has no such file.
func preload(dir, name string) (*library, error) {
	if dir == "" {
		return nil, nil
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		return nil, nil
	}
	l, err := openLibrary(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return l, nil
}

var (
	dladdrOnce sync.Once
	dladdrFn   func(addr uintptr, info unsafe.Pointer) int32
)

// realFile returns the file, links resolved, that the system loader mapped for the library l
// (found through its symbol sym); for a library opened by a bare soname this is where the
// loader found it. It falls back to l.path.
func realFile(l *library, sym string) string {
	dladdrOnce.Do(func() {
		for _, libc := range []string{"libc.so.6", "libdl.so.2"} {
			h, err := purego.Dlopen(libc, purego.RTLD_NOW|purego.RTLD_GLOBAL)
			if err != nil {
				continue
			}
			if a, err := purego.Dlsym(h, "dladdr"); err == nil && a != 0 {
				purego.RegisterFunc(&dladdrFn, a)
				return
			}
		}
	})
	p := l.path
	if addr, err := purego.Dlsym(l.handle, sym); err == nil && addr != 0 && dladdrFn != nil {
		var info struct {
			fname *byte
			fbase uintptr
			sname *byte
			saddr uintptr
		}
		if dladdrFn(addr, unsafe.Pointer(&info)) != 0 && info.fname != nil {
			if f := CString(info.fname); f != "" {
				p = f
			}
		}
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// probed is one candidate library that loaded: the file as found, the file it really is, and
// its version; idx is its entry in the attempts.
type probed struct {
	file, real string
	version    Version
	idx        int
}

// probeEach lists the candidates for a library (the one file named by the variable env, else
// names in the search folders) and probes them one at a time: open returns a candidate's
// version, its real file and a note for the report, and must close what it opened before it
// returns, so two installations are never loaded together. Candidates that are the same file
// are kept once. The result is ordered newest first.
func probeEach(env string, names []string, open func(file string) (v Version, real, note string, err error)) ([]probed, []Attempt) {
	var files []string
	var tried []Attempt
	if p := getenv(env); p != "" {
		files = []string{p}
	} else {
		files, tried = candidates(names, searchDirs())
	}
	var all []probed
	seen := map[string]bool{}
	for _, f := range files {
		v, real, note, err := open(f)
		if err != nil {
			tried = append(tried, Attempt{f, err.Error()})
			continue
		}
		res := "version " + v.String()
		if real != f {
			res += " (" + real + ")"
		}
		res += note
		if seen[real] {
			tried = append(tried, Attempt{f, res + ", the same library as above"})
			continue
		}
		seen[real] = true
		tried = append(tried, Attempt{f, res})
		all = append(all, probed{f, real, v, len(tried) - 1})
	}
	sort.SliceStable(all, func(i, j int) bool {
		return all[j].version.LessEq(all[i].version) && all[i].version != all[j].version
	})
	return all, tried
}

// dirOf is the folder a candidate was found in, "" for a bare soname.
func dirOf(candidate string) string {
	if !strings.Contains(candidate, "/") {
		return ""
	}
	return filepath.Dir(candidate)
}

// candidates lists, in search order and without duplicates, the files called one of names in
// the search folders, followed by the bare names for the system loader (ld.so.cache,
// LD_LIBRARY_PATH, RUNPATH). Files that do not exist are recorded as attempts.
func candidates(names []string, dirs []string) (files []string, tried []Attempt) {
	seen := map[string]bool{}
	for _, d := range dirs {
		for _, n := range names {
			p := filepath.Join(d, n)
			if seen[p] {
				continue
			}
			seen[p] = true
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				tried = append(tried, Attempt{p, "not found"})
				continue
			}
			if seen["real:"+real] {
				continue // the same file reached through another link
			}
			seen["real:"+real] = true
			files = append(files, p)
		}
	}
	files = append(files, names...)
	return files, tried
}

// sysRoot prefixes the fixed system folders of the search (the toolkits, the driver folders,
// /opt): "/" in use, a temporary folder in the tests that lay out fake installations.
var sysRoot = "/"

func sys(p string) string { return filepath.Join(sysRoot, p) }

// searchDirs is where the libraries are looked for, in order: the override folders, the
// folders of LD_LIBRARY_PATH, the CUDA toolkits (newest first), the driver folders, and the
// nvidia/*/lib folders of Python wheels (nvidia/cu13/lib for CUDA 13's) in the active, the
// PATH's and the common virtual environments. A toolkit's "stubs" folders are never searched:
// their libraries load but fail every call (they exist for linking only).
func searchDirs() []string {
	var dirs []string
	add := func(ds ...string) {
		for _, d := range ds {
			if d != "" && filepath.Base(d) != "stubs" {
				dirs = append(dirs, filepath.Clean(d))
			}
		}
	}
	add(filepath.SplitList(os.Getenv(EnvLibDir))...)
	add(filepath.SplitList(os.Getenv("LD_LIBRARY_PATH"))...)
	for _, v := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if h := os.Getenv(v); h != "" {
			add(filepath.Join(h, "lib64"), filepath.Join(h, "lib"), filepath.Join(h, "targets", "x86_64-linux", "lib"))
		}
	}
	add(sys("/usr/local/cuda/lib64"), sys("/usr/local/cuda/targets/x86_64-linux/lib"), sys("/usr/local/cuda/targets/sbsa-linux/lib"))
	add(newestFirst(glob(sys("/usr/local/cuda-*/lib64")))...)
	add(newestFirst(glob(sys("/usr/local/cuda-*/targets/*/lib")))...)
	add(sys("/opt/cuda/lib64"))
	// Driver folders (distribution packages, containers, WSL).
	add(sys("/usr/lib/x86_64-linux-gnu"), sys("/usr/lib/aarch64-linux-gnu"), sys("/usr/lib64"), sys("/usr/lib"),
		sys("/usr/local/nvidia/lib64"), sys("/usr/local/nvidia/lib"), sys("/usr/lib/wsl/lib"))
	add(glob(sys("/usr/lib/nvidia*"))...)
	add(glob(sys("/usr/lib/x86_64-linux-gnu/nvidia/current"))...)
	// Python wheels (nvidia-cuda-nvrtc-cu12, nvidia-cublas-cu12: nvidia/<name>/lib; the CUDA 13
	// wheels: nvidia/cu13/lib), in environments that need not be activated.
	for _, env := range venvRoots() {
		for _, sp := range sitePackages(env) {
			add(newestFirst(glob(filepath.Join(sp, "nvidia", "*", "lib")))...)
		}
		add(filepath.Join(env, "lib")) // conda keeps the toolkit's libraries here
	}
	return dirs
}

// venvRoots lists, without duplicates, the Python prefixes whose wheels may hold NVRTC and
// cuBLAS: the active virtual or conda environment, the environment of the python3 (or python)
// found on PATH (a venv need not be activated for its bin folder to be on PATH) and the
// installation it was made from, ./.venv and ./venv, the usual folders in the home directory,
// environments under /opt (/opt/<name>/.venv, /opt/<name>/venv, /opt/<name> itself, as conda
// installs there), and the system prefixes.
func venvRoots() []string {
	var roots []string
	seen := map[string]bool{}
	add := func(ps ...string) {
		for _, p := range ps {
			if p != "" && !seen[filepath.Clean(p)] {
				seen[filepath.Clean(p)] = true
				roots = append(roots, filepath.Clean(p))
			}
		}
	}
	for _, v := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		add(os.Getenv(v))
	}
	add(pathPythonPrefixes()...)
	if wd, err := os.Getwd(); err == nil {
		add(filepath.Join(wd, ".venv"), filepath.Join(wd, "venv"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		add(filepath.Join(home, ".venv"), filepath.Join(home, "venv"), filepath.Join(home, ".local"),
			filepath.Join(home, "miniconda3"), filepath.Join(home, "anaconda3"), filepath.Join(home, "miniforge3"))
	}
	for _, pat := range []string{"/opt/*/.venv", "/opt/*/venv", "/opt/*"} {
		add(glob(sys(pat))...)
	}
	add(sys("/usr/local"), sys("/usr"), sys("/opt/conda"))
	return roots
}

// pathPythonPrefixes returns the prefixes of the python3 and python found on PATH: the folder
// above its bin (a venv's root, as the file is usually a link into the base installation) and
// the folder above the bin of the file the link resolves to (the base installation).
func pathPythonPrefixes() []string {
	var out []string
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		for _, name := range []string{"python3", "python"} {
			p := filepath.Join(dir, name)
			if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
				continue
			}
			out = append(out, filepath.Dir(filepath.Dir(p)))
			if real, err := filepath.EvalSymlinks(p); err == nil {
				out = append(out, filepath.Dir(filepath.Dir(real)))
			}
		}
	}
	return out
}

// sitePackages lists the site-packages and dist-packages folders of a Python prefix.
func sitePackages(root string) []string {
	var out []string
	for _, pat := range []string{"lib/python3*/site-packages", "lib/python3*/dist-packages", "lib/python3/dist-packages", "lib64/python3*/site-packages"} {
		out = append(out, glob(filepath.Join(root, pat))...)
	}
	return out
}

func glob(pattern string) []string {
	m, _ := filepath.Glob(pattern)
	return m
}

// newestFirst orders paths by the version numbers in them, highest first (cuda-12.4 before
// cuda-12.10 is wrong, so numbers are compared as numbers).
func newestFirst(paths []string) []string {
	out := append([]string(nil), paths...)
	sort.SliceStable(out, func(i, j int) bool { return versionLess(out[j], out[i]) })
	return out
}

// versionLess compares the digit runs of a and b numerically, left to right.
func versionLess(a, b string) bool {
	na, nb := digitRuns(a), digitRuns(b)
	for i := 0; i < len(na) && i < len(nb); i++ {
		if na[i] != nb[i] {
			return na[i] < nb[i]
		}
	}
	if len(na) != len(nb) {
		return len(na) < len(nb)
	}
	return a < b
}

func digitRuns(s string) []int {
	var out []int
	cur, in := 0, false
	for _, r := range s {
		if r >= '0' && r <= '9' {
			cur = cur*10 + int(r-'0')
			in = true
			continue
		}
		if in {
			out = append(out, cur)
			cur, in = 0, false
		}
	}
	if in {
		out = append(out, cur)
	}
	return out
}

// Version is a CUDA major.minor version.
type Version struct{ Major, Minor int }

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// LessEq reports v ≤ w.
func (v Version) LessEq(w Version) bool {
	return v.Major < w.Major || (v.Major == w.Major && v.Minor <= w.Minor)
}

// driverVersion turns cuDriverGetVersion's 1000·major + 10·minor into a Version.
func driverVersion(v int32) Version { return Version{int(v) / 1000, int(v) % 1000 / 10} }

// ParseVersion reads "12.4" (or "12").
func ParseVersion(s string) (Version, error) {
	maj, min, _ := strings.Cut(strings.TrimSpace(s), ".")
	a, err := strconv.Atoi(maj)
	if err != nil {
		return Version{}, fmt.Errorf("cuda: version %q: %w", s, err)
	}
	b := 0
	if min != "" {
		if b, err = strconv.Atoi(min); err != nil {
			return Version{}, fmt.Errorf("cuda: version %q: %w", s, err)
		}
	}
	return Version{a, b}, nil
}

func getenv(k string) string { return strings.TrimSpace(os.Getenv(k)) }

// errNoDevice is wrapped by the errors of LoadDriver and Driver.CheckOrdinal when no usable GPU
// exists.
var errNoDevice = errors.New("no CUDA device")

// ErrNoDevice reports whether err (from LoadDriver, or from opening a device on it) means that
// no GPU (or no driver) was found, as opposed to a GPU that was found but failed (a missing NVRTC or cuBLAS on a GPU machine is such a failure).
func ErrNoDevice(err error) bool {
	var pe *ProbeError
	return errors.Is(err, errNoDevice) || (errors.As(err, &pe) && pe.Lib == "libcuda")
}
