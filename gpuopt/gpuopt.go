// Package gpuopt holds the typed options of the GPU path, declared once and passed explicitly
// from the config (config.Run.GPUOptions) through the trainer (train) to the device trainer
// (gpu), the plan compiler (gpuexec) and the device (cuda): which of GatedGCN's edge folds the
// plan makes, batched cuBLAS products, CUDA graphs, the narrow weight-gradient kernels, the
// kernels' preprocessor definitions and their virtual architecture, and the precision registry
// (train.precision). No environment variable changes them. Standard library only, so that
// config (and the result side through it) can read the types without linking the device.
package gpuopt

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Options are the GPU path's choices for one run. The zero value is not the default: use
// Default.
type Options struct {
	// Precision is train.precision (the registry Precisions).
	Precision Precision
	// EdgeFolds are GatedGCN's edge folds the plan makes (gpu.edge_folds).
	EdgeFolds Folds
	// BatchedProducts runs a batch of products as one cublasSgemmBatched; off, one
	// cublasSgemm each (gpu.batched_products). The bits may differ within float32 rounding.
	BatchedProducts bool
	// Graphs replays each program's captured CUDA graph; off, every step is queued launch by
	// launch (gpu.cuda_graphs). The same launches either way: the same bits.
	Graphs bool
	// NarrowGradW runs the weight gradients of narrow products on gemm.cu's two-pass kernels
	// instead of cuBLAS (gpu.narrow_gradw): another order of the sums.
	NarrowGradW bool
	// KernelDefines are NAME=VALUE preprocessor definitions for every kernel NVRTC compiles
	// (gpu.kernel_defines): the kernels' tuning constants; part of the kernel cache's key.
	KernelDefines []string
	// Arch is the virtual architecture the kernels' PTX is compiled for (gpu.arch, e.g. 70);
	// 0 is NVRTC's choice for the GPU found.
	Arch int
}

// Default is every option at its default: fp32, all folds, batched products, CUDA graphs,
// cuBLAS weight gradients, no definitions, the GPU's own architecture (configs/defaults/base.yaml
// says the same).
func Default() Options {
	return Options{Precision: FP32, EdgeFolds: AllFolds(), BatchedProducts: true, Graphs: true}
}

// String describes the options in one line, as the config keys write them.
func (o Options) String() string {
	var b strings.Builder
	for i, kv := range o.Pairs() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(kv.Key + "=" + kv.Value)
	}
	return b.String()
}

// KV is one option as a config key (without "gpu.") and its value as the key writes it.
type KV struct{ Key, Value string }

// Pairs are the options as the keys of the config's gpu section and their values, in a fixed
// order (train.precision is the config's own key and not among them).
func (o Options) Pairs() []KV {
	return []KV{
		{"edge_folds", o.EdgeFolds.String()},
		{"batched_products", strconv.FormatBool(o.BatchedProducts)},
		{"cuda_graphs", strconv.FormatBool(o.Graphs)},
		{"narrow_gradw", strconv.FormatBool(o.NarrowGradW)},
		{"kernel_defines", strings.Join(o.KernelDefines, ",")},
		{"arch", strconv.Itoa(o.Arch)},
	}
}

// Folds say which of GatedGCN's edge folds the plan compiler makes (gpuexec, folds.go).
type Folds struct {
	Scatter bool // the edge sum's gradient in the gated gradient's pass (foldEdgeScatter)
	BNDx    bool // the edges' batch norm's dx there (foldBNDx)
	Gate    bool // the gated aggregation in the edge sum's pass (foldGate)
}

// FoldNames are the folds' names, in Folds' order.
var FoldNames = []string{"scatter", "bndx", "gate"}

// The values of gpu.edge_folds besides a list of fold names.
const (
	FoldsAll  = "all"
	FoldsNone = "none"
)

// AllFolds is every fold on (the default).
func AllFolds() Folds { return Folds{true, true, true} }

func (f *Folds) on() []*bool { return []*bool{&f.Scatter, &f.BNDx, &f.Gate} }

// All reports whether every fold is on.
func (f Folds) All() bool { return f.Scatter && f.BNDx && f.Gate }

// String writes the folds as gpu.edge_folds takes them: all, none, or the folds that are on,
// comma-separated in FoldNames' order.
func (f Folds) String() string {
	var on []string
	for i, b := range f.on() {
		if *b {
			on = append(on, FoldNames[i])
		}
	}
	switch len(on) {
	case 0:
		return FoldsNone
	case len(FoldNames):
		return FoldsAll
	}
	return strings.Join(on, ",")
}

// Off lists the folds that are off, comma-separated ("" for none).
func (f Folds) Off() string {
	var off []string
	for i, b := range f.on() {
		if !*b {
			off = append(off, FoldNames[i])
		}
	}
	return strings.Join(off, ",")
}

// ParseFolds reads gpu.edge_folds: all, none, or the folds to make, comma-separated. An
// unknown or repeated name is an error naming it and the names known.
func ParseFolds(s string) (Folds, error) {
	switch s = strings.TrimSpace(s); s {
	case FoldsAll:
		return AllFolds(), nil
	case FoldsNone:
		return Folds{}, nil
	case "":
		return Folds{}, fmt.Errorf("empty: give %s, %s or the folds to make, comma-separated: %s", FoldsAll, FoldsNone, strings.Join(FoldNames, ", "))
	}
	var f Folds
	on := f.on()
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		i := slices.Index(FoldNames, name)
		switch {
		case i < 0:
			return Folds{}, fmt.Errorf("%q is not a fold; give %s, %s or the folds to make, comma-separated: %s", name, FoldsAll, FoldsNone, strings.Join(FoldNames, ", "))
		case *on[i]:
			return Folds{}, fmt.Errorf("%q is named twice", name)
		}
		*on[i] = true
	}
	return f, nil
}

// ParseDefines reads gpu.kernel_defines: NAME=VALUE (or NAME) definitions separated by commas,
// each NAME a C identifier; "" is none.
func ParseDefines(s string) ([]string, error) {
	var out []string
	for _, d := range strings.Split(s, ",") {
		if d = strings.TrimSpace(d); d == "" {
			continue
		}
		name, _, _ := strings.Cut(d, "=")
		if !isIdent(name) {
			return nil, fmt.Errorf("%q: want NAME=VALUE with NAME a C identifier (such as RW_UNROLL=1)", d)
		}
		if strings.ContainsAny(d, " \t\n\"'") {
			return nil, fmt.Errorf("%q: a definition holds no spaces or quotes", d)
		}
		out = append(out, d)
	}
	return out, nil
}

func isIdent(s string) bool {
	for i, c := range s {
		letter := c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return s != ""
}

// CheckArch reads gpu.arch: 0 (the GPU's own) or a virtual architecture of at least 50.
func CheckArch(arch int) error {
	if arch != 0 && arch < 50 {
		return fmt.Errorf("%d: give 0 (the GPU's own) or a virtual architecture such as 70 (compute_70)", arch)
	}
	return nil
}

// WithPrecision is o with train.precision p.
func (o Options) WithPrecision(p Precision) Options {
	o.Precision = p
	return o
}
