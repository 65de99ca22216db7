package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

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

// EnvRequireGPU set to 1 makes every GPU test fail, instead of skip, when no GPU is found (for
// GPU machines, where a skip would hide a broken driver set-up).
const EnvRequireGPU = "REWIREGNN_REQUIRE_GPU"

// RequireGPU reports whether EnvRequireGPU is set to 1.
func RequireGPU() bool { return getenv(EnvRequireGPU) == "1" }

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

// searchDirs is where the libraries are looked for, in order: the override folders, the
// folders of LD_LIBRARY_PATH, the CUDA toolkits (newest first), the driver folders, and the
// nvidia/*/lib folders of Python wheels in the active and the common virtual environments.
func searchDirs() []string {
	var dirs []string
	add := func(ds ...string) {
		for _, d := range ds {
			if d != "" {
				dirs = append(dirs, filepath.Clean(d))
			}
		}
	}
	add(filepath.SplitList(os.Getenv(EnvLibDir))...)
	add(filepath.SplitList(os.Getenv("LD_LIBRARY_PATH"))...)
	if h := os.Getenv("CUDA_HOME"); h != "" {
		add(filepath.Join(h, "lib64"), filepath.Join(h, "lib"))
	}
	if h := os.Getenv("CUDA_PATH"); h != "" {
		add(filepath.Join(h, "lib64"), filepath.Join(h, "lib"))
	}
	add("/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib", "/usr/local/cuda/targets/sbsa-linux/lib")
	add(newestFirst(glob("/usr/local/cuda-*/lib64"))...)
	add(newestFirst(glob("/usr/local/cuda-*/targets/*/lib"))...)
	add("/opt/cuda/lib64")
	// Driver folders (distribution packages, containers, WSL).
	add("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
		"/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/usr/lib/wsl/lib")
	add(glob("/usr/lib/nvidia*")...)
	add(glob("/usr/lib/x86_64-linux-gnu/nvidia/current")...)
	// Python wheels (nvidia-cuda-nvrtc-cu12, nvidia-cublas-cu12, the cu13 wheels, …).
	for _, env := range venvRoots() {
		for _, sp := range sitePackages(env) {
			add(newestFirst(glob(filepath.Join(sp, "nvidia", "*", "lib")))...)
		}
		add(filepath.Join(env, "lib")) // conda keeps the toolkit's libraries here
	}
	return dirs
}

// venvRoots lists the active and the usual virtual environments and Python prefixes.
func venvRoots() []string {
	var roots []string
	for _, v := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if p := os.Getenv(v); p != "" {
			roots = append(roots, p)
		}
	}
	if wd, err := os.Getwd(); err == nil {
		roots = append(roots, filepath.Join(wd, ".venv"), filepath.Join(wd, "venv"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		roots = append(roots, filepath.Join(home, ".venv"), filepath.Join(home, "venv"), filepath.Join(home, ".local"),
			filepath.Join(home, "miniconda3"), filepath.Join(home, "anaconda3"), filepath.Join(home, "miniforge3"))
	}
	roots = append(roots, "/usr/local", "/usr", "/opt/conda")
	return roots
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

// errNoDevice is wrapped by Open's errors when no usable GPU exists.
var errNoDevice = errors.New("no CUDA device")

// ErrNoDevice reports whether err means that no GPU (or no driver) was found, as opposed to a
// GPU that was found but failed (a missing NVRTC or cuBLAS on a GPU machine is such a failure).
func ErrNoDevice(err error) bool {
	var pe *ProbeError
	return errors.Is(err, errNoDevice) || (errors.As(err, &pe) && pe.Lib == "libcuda")
}
