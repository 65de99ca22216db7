package emu

// Building the emulated kernels: one C++ unit per kernel file behind the emulation header, the
// units compiled in parallel and linked with the runtime into one program, kept in the cache.

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/rewiregnn/rewiregnn/cuda/kernels"
)

//go:embed cxx/cuda_emu.h cxx/runtime.cc
var emuFS embed.FS

// Environment variables of the emulator.
const (
	// EnvTSan=1 builds the emulated kernels with ThreadSanitizer (-fsanitize=thread): a data
	// race between the threads of a block ends the launch with TSan's report.
	EnvTSan = "REWIREGNN_EMU_TSAN"
	// EnvRequire=1 makes tests that use the emulator fail instead of skipping when it
	// cannot be built (no C++ compiler); CI sets it.
	EnvRequire = "REWIREGNN_REQUIRE_EMU"
)

// Options configure an emulated device.
type Options struct {
	// Sources are the kernel files to build (nil: the embedded kernels, kernels.Sources()); a
	// test may pass patched copies. Headers likewise (nil: kernels.Headers()).
	Sources []kernels.Source
	Headers map[string]string
	// SMs is the number of multiprocessors the device reports (default 1). The launchers cap
	// grid-stride grids at 32 blocks per SM, so a small count makes every grid-stride loop
	// take several passes at modest sizes.
	SMs int
	// MemoryBytes is the device memory (default 16 GiB; reserved, not committed).
	MemoryBytes int64
	// TSan builds with ThreadSanitizer (also $REWIREGNN_EMU_TSAN=1).
	TSan bool
	// Defines are NAME=VALUE preprocessor definitions for every kernel (gpu.kernel_defines, as
	// NVRTC gets them on a GPU); part of the build's cache key.
	Defines []string
	// Deterministic runs the threads of a block one at a time, in index order, handing over
	// at each barrier and on return (still one OS thread each): atomic updates then land in
	// the same order on every run, so results are bit-reproducible, as no GPU's are. For
	// tests of state that must match exactly (a resumed run, a synced trainer, pipelining);
	// the default schedule, all threads at once, is the one that exposes races.
	Deterministic bool
	// CacheDir keeps built emulators (default: the kernel cache folder's "emu"; with the kernel
	// cache off, each device builds in a temporary folder removed when it closes).
	CacheDir string
}

// Require reports whether $REWIREGNN_REQUIRE_EMU asks for the emulator to be available.
func Require() bool { return getenv(EnvRequire) == "1" }

func getenv(k string) string { return strings.TrimSpace(os.Getenv(k)) }

func (o Options) withDefaults() Options {
	if o.Sources == nil {
		o.Sources = kernels.Sources()
	}
	if o.Headers == nil {
		o.Headers = kernels.Headers()
	}
	if o.SMs <= 0 {
		o.SMs = 1
	}
	if o.MemoryBytes <= 0 {
		o.MemoryBytes = 16 << 30
	}
	if getenv(EnvTSan) == "1" {
		o.TSan = true
	}
	if c := kernels.DefaultCache(); o.CacheDir == "" && c.Dir != "" {
		o.CacheDir = filepath.Join(c.Dir, "emu")
	}
	return o
}

// ErrNoCompiler is returned (wrapped) by OpenEmulator when no C++ compiler is found.
var ErrNoCompiler = errors.New("no C++ compiler")

// BuildError is a failed build of the emulated kernels. Missing lists the CUDA features a
// kernel uses that the emulation header does not provide, as "file:line: feature".
type BuildError struct {
	Command string
	Log     string
	Missing []string
}

func (e *BuildError) Error() string {
	if len(e.Missing) > 0 {
		return fmt.Sprintf("cuda: emulator: the kernels use CUDA features that emu/cuda_emu.h does not provide: %s\n%s", strings.Join(e.Missing, ", "), e.Log)
	}
	return fmt.Sprintf("cuda: emulator: %s failed:\n%s", e.Command, e.Log)
}

// emuProgram is a built emulator.
type emuProgram struct {
	path     string
	compiler string // "g++ (Debian 12.2.0-14) 12.2.0"
	tsan     bool
	tmp      string // a temporary build folder to remove on close ("" when cached)
}

// Skip returns why a test that needs the emulated GPU should skip on this machine (no C++
// compiler, or not Linux), or nil. Under $REWIREGNN_REQUIRE_EMU=1 it is always nil: the test
// runs and fails with the reason instead.
func Skip() error {
	if Require() {
		return nil
	}
	if runtime.GOOS != "linux" {
		return fmt.Errorf("cuda: the emulated GPU needs Linux, not %s", runtime.GOOS)
	}
	_, err := findCompiler()
	return err
}

func findCompiler() (string, error) {
	// The C++ compiler: $CXX where set (the usual variable, a machine path; a compiler named
	// and missing is an error, never replaced by another), else g++, c++, clang++ on PATH.
	names := []string{"g++", "c++", "clang++"}
	if v := getenv("CXX"); v != "" {
		names = []string{v}
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("cuda: emulator: %w: tried %s on PATH (install g++, or set CXX)", ErrNoCompiler, strings.Join(names, ", "))
}

var kernelDecl = regexp.MustCompile(`extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(`)

// emuUnits returns the files of an emulator build: the header, the runtime, the kernel
// headers, and one C++ unit per kernel file (the file unchanged after the emulation header,
// then a registration of each of its kernels).
func emuUnits(o Options) (files map[string]string, units []string) {
	files = map[string]string{}
	for _, n := range []string{"cuda_emu.h", "runtime.cc"} {
		b, _ := emuFS.ReadFile("cxx/" + n)
		files[n] = string(b)
	}
	for n, h := range o.Headers {
		files[n] = h
	}
	units = []string{"runtime.cc"}
	for _, s := range o.Sources {
		var b strings.Builder
		fmt.Fprintf(&b, "#include \"cuda_emu.h\"\n#line 1 %q\n%s\n#line 1 \"(emulator registration of %s)\"\n", s.Name, s.Code, s.Name)
		for _, m := range kernelDecl.FindAllStringSubmatch(s.Code, -1) {
			fmt.Fprintf(&b, "RWEMU_KERNEL(%s);\n", m[1])
		}
		u := "k_" + strings.TrimSuffix(s.Name, ".cu") + ".cc"
		files[u] = b.String()
		units = append(units, u)
	}
	sort.Strings(units)
	return files, units
}

func emuFlags(tsan bool, defines []string) []string {
	f := []string{"-std=c++17", "-pthread", "-fno-strict-aliasing", "-fno-fast-math"}
	for _, d := range defines {
		f = append(f, "-D"+d)
	}
	if tsan {
		return append(f, "-O1", "-g", "-fsanitize=thread")
	}
	return append(f, "-O2")
}

// buildEmulator compiles the emulator for o, or takes it from the cache.
func buildEmulator(o Options) (*emuProgram, error) {
	cxx, err := findCompiler()
	if err != nil {
		return nil, err
	}
	ver, err := exec.Command(cxx, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("cuda: emulator: %s --version: %w", cxx, err)
	}
	version, _, _ := strings.Cut(string(ver), "\n")
	flags := emuFlags(o.TSan, o.Defines)
	files, units := emuUnits(o)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", cxx, version, strings.Join(flags, " "))
	kernels.HashFiles(h, files)
	key := hex.EncodeToString(h.Sum(nil))[:24]
	prog := &emuProgram{compiler: version, tsan: o.TSan}
	var final string
	parent := o.CacheDir
	if parent != "" {
		// Devices opened at once in one process (train -parallel) build once: the others
		// wait here and find the build in the cache.
		unlock := lockBuild(key)
		defer unlock()
		final = filepath.Join(parent, key)
		if st, err := os.Stat(filepath.Join(final, "rwemu")); err == nil && st.Mode().IsRegular() {
			prog.path = filepath.Join(final, "rwemu")
			return prog, nil
		}
		if err := os.MkdirAll(parent, 0o755); err != nil {
			parent = "" // an unwritable cache only costs a build per process
		}
	}
	dir, err := os.MkdirTemp(parent, "build-")
	if err != nil {
		return nil, fmt.Errorf("cuda: emulator: %w", err)
	}
	for n, text := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(text), 0o644); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("cuda: emulator: %w", err)
		}
	}
	if err := compileUnits(cxx, flags, dir, units); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if final == "" {
		prog.path, prog.tmp = filepath.Join(dir, "rwemu"), dir
		return prog, nil
	}
	if err := os.Rename(dir, final); err != nil {
		// Another process built the same key first: use its build.
		os.RemoveAll(dir)
		if _, err2 := os.Stat(filepath.Join(final, "rwemu")); err2 != nil {
			return nil, fmt.Errorf("cuda: emulator: %w", err)
		}
	}
	prog.path = filepath.Join(final, "rwemu")
	return prog, nil
}

var (
	buildsMu sync.Mutex
	builds   = map[string]*sync.Mutex{} // one lock per build key
)

// lockBuild holds this process's lock on build key until the returned function runs.
func lockBuild(key string) (unlock func()) {
	buildsMu.Lock()
	mu := builds[key]
	if mu == nil {
		mu = new(sync.Mutex)
		builds[key] = mu
	}
	buildsMu.Unlock()
	mu.Lock()
	return mu.Unlock
}

// compileUnits compiles every unit (in parallel, one per CPU) and links dir/rwemu.
func compileUnits(cxx string, flags []string, dir string, units []string) error {
	errs := make([]error, len(units))
	sem := make(chan struct{}, max(runtime.NumCPU(), 1))
	var wg sync.WaitGroup
	for i, u := range units {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			args := append(append([]string{}, flags...), "-I", dir, "-c", u, "-o", strings.TrimSuffix(u, ".cc")+".o")
			errs[i] = runCompiler(cxx, dir, args)
		}()
	}
	wg.Wait()
	if err := joinBuildErrors(errs); err != nil {
		return err
	}
	args := append([]string{}, flags...)
	for _, u := range units {
		args = append(args, strings.TrimSuffix(u, ".cc")+".o")
	}
	return runCompiler(cxx, dir, append(args, "-o", "rwemu"))
}

func runCompiler(cxx, dir string, args []string) error {
	cmd := exec.Command(cxx, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C") // plain quotes in diagnostics
	out, err := cmd.CombinedOutput()
	if err != nil {
		return &BuildError{Command: filepath.Base(cxx) + " " + strings.Join(args, " "), Log: string(out) + err.Error(), Missing: missingFeatures(string(out))}
	}
	return nil
}

// joinBuildErrors merges the units' build errors into one BuildError.
func joinBuildErrors(errs []error) error {
	var all *BuildError
	for _, err := range errs {
		var be *BuildError
		if err == nil || !errors.As(err, &be) {
			continue
		}
		if all == nil {
			all = &BuildError{Command: be.Command}
		}
		all.Log += be.Log
		all.Missing = append(all.Missing, be.Missing...)
	}
	if all == nil {
		return nil
	}
	return all
}

// missingFeatures finds, in a compiler log, the identifiers a kernel file uses that nothing
// declares: with the emulation header in front of every kernel, those are CUDA features it
// does not provide (or typos).
var undeclared = regexp.MustCompile(`(?m)^([^:\s]+\.cuh?):(\d+):\d+: error: ['‘]([^'’]+)['’] (?:was not declared in this scope|is not a member of|has not been declared)|^([^:\s]+\.cuh?):(\d+):\d+: error: use of undeclared identifier ['‘]([^'’]+)['’]`)

func missingFeatures(log string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range undeclared.FindAllStringSubmatch(log, -1) {
		file, line, name := m[1], m[2], m[3]
		if file == "" {
			file, line, name = m[4], m[5], m[6]
		}
		s := fmt.Sprintf("%s:%s: %s", file, line, name)
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// cudaToken matches the identifiers that name CUDA features: double-underscore names
// (__syncthreads, __shfl_xor_sync, __ldg, …), the atomics and the built-in variables.
var cudaToken = regexp.MustCompile(`\b(__[A-Za-z]\w*|atomic[A-Z]\w*|threadIdx|blockIdx|blockDim|gridDim|warpSize)\b`)

// Unsupported scans kernel sources for CUDA features that the emulation header does not
// define, and returns them as "file:line: feature" (comments are ignored). It is the static
// twin of the build's diagnosis: a kernel that uses a new intrinsic is named before anything
// is compiled.
func Unsupported(sources []kernels.Source, headers map[string]string) []string {
	hdr, _ := emuFS.ReadFile("cxx/cuda_emu.h")
	known := map[string]bool{}
	for _, m := range cudaToken.FindAllString(stripComments(string(hdr)), -1) {
		known[m] = true
	}
	var out []string
	scan := func(name, code string) {
		for i, line := range strings.Split(stripComments(code), "\n") {
			for _, m := range cudaToken.FindAllString(line, -1) {
				if !known[m] {
					out = append(out, fmt.Sprintf("%s:%d: %s", name, i+1, m))
				}
			}
		}
	}
	for _, s := range sources {
		scan(s.Name, s.Code)
	}
	for _, n := range slices.Sorted(maps.Keys(headers)) {
		scan(n, headers[n])
	}
	return out
}

// stripComments blanks // and /* */ comments, keeping line breaks (so line numbers hold).
func stripComments(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '"':
			for i++; i < len(b) && b[i] != '"' && b[i] != '\n'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '/':
			for ; i < len(b) && b[i] != '\n'; i++ {
				b[i] = ' '
			}
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '*':
			for ; i < len(b) && !(b[i] == '*' && i+1 < len(b) && b[i+1] == '/'); i++ {
				if b[i] != '\n' {
					b[i] = ' '
				}
			}
			if i+1 < len(b) {
				b[i], b[i+1] = ' ', ' '
				i++
			}
		}
	}
	return string(b)
}
