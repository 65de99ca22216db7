package kernels

import (
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
)

//go:embed *.cu *.cuh
var kernelFS embed.FS

// Source is one embedded kernel file.
type Source struct {
	Name string // e.g. "gather.cu"
	Code string
}

// Sources returns the embedded kernel files (*.cu), sorted by name.
func Sources() []Source {
	var out []Source
	ents, _ := fs.ReadDir(kernelFS, ".")
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".cu") {
			continue
		}
		b, err := kernelFS.ReadFile(e.Name())
		if err != nil {
			continue
		}
		out = append(out, Source{Name: e.Name(), Code: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Headers returns the embedded headers (*.cuh) by name, as NVRTC resolves #include "name".
func Headers() map[string]string {
	out := map[string]string{}
	ents, _ := fs.ReadDir(kernelFS, ".")
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".cuh") {
			continue
		}
		if b, err := kernelFS.ReadFile(e.Name()); err == nil {
			out[e.Name()] = string(b)
		}
	}
	return out
}

// GateArchs are the architectures CI compiles every kernel for: Volta (V100, the oldest GPU
// users train on) and Hopper (H100/H200).
var GateArchs = []int{70, 90}

// GateTargets splits GateArchs into those an NVRTC that knows the architectures known
// (NVRTC.Archs) can compile for and those it cannot: NVRTC 13 dropped compute_70 (Volta), so on
// a CUDA 13 machine the gate compiles for compute_90 alone and says that compute_70 was
// skipped. An NVRTC that cannot list its architectures (before 11.2, known empty) is given
// them all.
func GateTargets(known []int) (use, skipped []int) {
	for _, a := range GateArchs {
		if len(known) == 0 || slices.Contains(known, a) {
			use = append(use, a)
		} else {
			skipped = append(skipped, a)
		}
	}
	return use, skipped
}

// GateResult is one compiled kernel file of the compile gate.
type GateResult struct {
	Kernel  string
	Arch    int
	PTX     []byte
	Log     string // NVRTC warnings, if any
	Elapsed time.Duration
}

// CompileGate compiles every source for every architecture (PTX) and returns the results, or
// the first failures joined into one error (each a *CompileError naming kernel and target with
// NVRTC's log).
func CompileGate(n *cudalib.NVRTC, sources []Source, archs []int) ([]GateResult, error) {
	headers := Headers()
	var res []GateResult
	var errs []string
	for _, s := range sources {
		for _, a := range archs {
			t0 := time.Now()
			ptx, log, err := n.Compile(s.Name, s.Code, headers, a, false)
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			res = append(res, GateResult{Kernel: s.Name, Arch: a, PTX: ptx, Log: log, Elapsed: time.Since(t0)})
		}
	}
	if len(errs) > 0 {
		return res, fmt.Errorf("cuda: compile gate: %d of %d compilations failed:\n%s", len(errs), len(sources)*len(archs), strings.Join(errs, "\n"))
	}
	return res, nil
}
