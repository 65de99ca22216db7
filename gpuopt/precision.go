package gpuopt

import (
	"fmt"
	"strings"
)

// Precision is a value of train.precision: the GPU's arithmetic and storage.
type Precision string

// The precisions (Precisions describes them).
const (
	FP32 Precision = "fp32"
	TF32 Precision = "tf32"
	BF16 Precision = "bf16"
)

// PrecisionInfo is one entry of the precision registry.
type PrecisionInfo struct {
	Name Precision
	// Means says what the precision does, for docs and errors.
	Means string
	// CPU reports whether the CPU trains in it (the CPU computes and stores float32 only).
	CPU bool
	// TF32Products runs cuBLAS's products on the TF32 tensor cores (the device's math mode).
	TF32Products bool
	// BF16EdgeSums stores GatedGCN's edge sums ê in bf16 (the plan's layout, gpuexec storeBF16).
	BF16EdgeSums bool
}

// Precisions is the registry of train.precision's values, declared once: config validates
// against it, gpu sets the device's math mode and the plan's layout from it.
var Precisions = []PrecisionInfo{
	{Name: FP32, Means: "float32 throughout (the default, the protocol's)", CPU: true},
	{Name: TF32, Means: "cuBLAS products on the TF32 tensor cores (inputs rounded to 10 mantissa bits, float32 sums); the project's kernels float32", TF32Products: true},
	{Name: BF16, Means: "GatedGCN's edge sums ê stored in bf16 and read back as float32; float32 arithmetic and products", BF16EdgeSums: true},
}

// PrecisionNames lists the registry's names in order.
func PrecisionNames() []string {
	out := make([]string, len(Precisions))
	for i, p := range Precisions {
		out[i] = string(p.Name)
	}
	return out
}

// ParsePrecision is the one parser of train.precision: the registry's entry of s, or an error
// listing the values.
func ParsePrecision(s string) (PrecisionInfo, error) {
	for _, p := range Precisions {
		if string(p.Name) == s {
			return p, nil
		}
	}
	return PrecisionInfo{}, fmt.Errorf("%q: want one of %s", s, strings.Join(PrecisionNames(), ", "))
}

// Info is p's registry entry (FP32's for a value outside it, which ParsePrecision refuses
// before any Options hold it).
func (p Precision) Info() PrecisionInfo {
	info, err := ParsePrecision(string(p))
	if err != nil {
		return Precisions[0]
	}
	return info
}
