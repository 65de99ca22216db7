package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/rewiregnn/rewiregnn/gpuopt"
)

// gpuKeyDefaults are the gpu section's keys with their defaults (gpuopt.Default, as formatValue
// writes them): Hash leaves a key out while it holds its default, so every run before the
// section hashes as it did, and YAML writes it only where it differs, so config.yaml and the
// checkpoint's config of a run at the defaults are those of before (loading one gives the
// defaults back from configs/defaults/base.yaml). hashed says whether a value away from the
// default changes the numbers, and so the hash: gpu.cuda_graphs replays the same launches (the
// same bits) and gpu.arch is a machine choice (the same kernels' source, compiled for an older
// virtual architecture: the same arithmetic), both recorded in result.json instead.
var gpuKeyDefaults = map[string]struct {
	def    string
	hashed bool
}{
	KeyEdgeFolds:       {gpuopt.FoldsAll, true},
	KeyBatchedProducts: {"true", true},
	KeyCUDAGraphs:      {"true", false},
	KeyNarrowGradW:     {"false", true},
	KeyKernelDefines:   {"", true},
	KeyArch:            {"0", false},
}

// atGPUDefault reports whether f is a gpu key holding its default.
func (r *Run) atGPUDefault(f *field) bool {
	d, ok := gpuKeyDefaults[f.key]
	return ok && formatValue(f.get(r)) == d.def
}

// gpuNotHashed reports whether f is a gpu key Hash leaves out: at its default, or one that does
// not change the numbers.
func (r *Run) gpuNotHashed(f *field) bool {
	d, ok := gpuKeyDefaults[f.key]
	return ok && (!d.hashed || formatValue(f.get(r)) == d.def)
}

// validateGPU reports the gpu section's and train.precision's impossible values.
func (r *Run) validateGPU(bad func(key, format string, args ...any)) {
	if _, err := gpuopt.ParsePrecision(r.Train.Precision); err != nil {
		bad(KeyPrecision, "%s", precisionError(r.Train.Precision))
	}
	g := &r.GPU
	if _, err := gpuopt.ParseFolds(g.EdgeFolds); err != nil {
		bad(KeyEdgeFolds, "%v", err)
	}
	if _, err := gpuopt.ParseDefines(g.KernelDefines); err != nil {
		bad(KeyKernelDefines, "%v", err)
	}
	if err := gpuopt.CheckArch(g.Arch); err != nil {
		bad(KeyArch, "%v", err)
	}
}

// GPUOptions are the run's GPU options, typed: train.precision and the gpu section, parsed once
// here and passed on to the device (train → gpu → gpuexec, cuda). An impossible value is an
// error naming its key (Validate refuses the same values).
func (r *Run) GPUOptions() (gpuopt.Options, error) {
	p, err := gpuopt.ParsePrecision(r.Train.Precision)
	if err != nil {
		return gpuopt.Options{}, &FieldError{Key: KeyPrecision, Msg: precisionError(r.Train.Precision)}
	}
	folds, err := gpuopt.ParseFolds(r.GPU.EdgeFolds)
	if err != nil {
		return gpuopt.Options{}, &FieldError{Key: KeyEdgeFolds, Msg: err.Error()}
	}
	defs, err := gpuopt.ParseDefines(r.GPU.KernelDefines)
	if err != nil {
		return gpuopt.Options{}, &FieldError{Key: KeyKernelDefines, Msg: err.Error()}
	}
	if err := gpuopt.CheckArch(r.GPU.Arch); err != nil {
		return gpuopt.Options{}, &FieldError{Key: KeyArch, Msg: err.Error()}
	}
	return gpuopt.Options{
		Precision: p.Name, EdgeFolds: folds, BatchedProducts: r.GPU.BatchedProducts, Graphs: r.GPU.CUDAGraphs,
		NarrowGradW: r.GPU.NarrowGradW, KernelDefines: defs, Arch: r.GPU.Arch,
	}, nil
}

// precisionError says that p is no value of the registry gpuopt.Precisions, listing them.
func precisionError(p string) string {
	return fmt.Sprintf("unknown precision %q (want %s)", p, orList(gpuopt.PrecisionNames()))
}

// canonical writes the gpu section's lists as GPUOptions reads them (edge_folds as all, none or
// the folds in their order; kernel_defines without spaces), so that one choice has one hash
// whatever its spelling. Values Validate refuses are left as they are.
func (g *GPU) canonical() {
	if f, err := gpuopt.ParseFolds(g.EdgeFolds); err == nil {
		g.EdgeFolds = f.String()
	}
	if d, err := gpuopt.ParseDefines(g.KernelDefines); err == nil {
		g.KernelDefines = strings.Join(d, ",")
	}
}

// gpuNameParts name, in run names, the gpu keys that change the numbers when they are away from
// their default (gpuKeyDefaults' hashed ones), in this order: -folds-<folds> (gpu.edge_folds,
// the folds joined by '+'), -unbatched (gpu.batched_products false), -narrowgw
// (gpu.narrow_gradw true), -kd<6 hex digits of the definitions' SHA-256> (gpu.kernel_defines).
// A run at the defaults keeps its name; one that changes its numbers through the gpu section
// is another run, in its own folder, as a -tf32 run is.
var gpuNameParts = []struct {
	key  string
	part func(v string) string
}{
	{KeyEdgeFolds, func(v string) string { return "folds-" + strings.ReplaceAll(v, ",", "+") }},
	{KeyBatchedProducts, func(string) string { return "unbatched" }},
	{KeyNarrowGradW, func(string) string { return "narrowgw" }},
	{KeyKernelDefines, func(v string) string {
		sum := sha256.Sum256([]byte(v))
		return "kd" + hex.EncodeToString(sum[:3])
	}},
}

// gpuNameSuffix is the run name's suffix of the gpu keys away from their defaults that change
// the numbers ("" at the defaults).
func (r *Run) gpuNameSuffix() string {
	var b strings.Builder
	for _, p := range gpuNameParts {
		f := schemaByKey[p.key]
		if r.gpuNotHashed(f) {
			continue
		}
		b.WriteString("-" + p.part(formatValue(f.get(r))))
	}
	return b.String()
}
