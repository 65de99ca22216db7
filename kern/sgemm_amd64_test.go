package kern

import "testing"

// TestMatMulFloat32Fallback runs the float32 product checks with the assembly kernel switched
// off, as on CPUs without AVX2/FMA.
func TestMatMulFloat32Fallback(t *testing.T) {
	saved := haveKernel
	haveKernel = false
	defer func() { haveKernel = saved }()
	TestMatMulFloat32(t)
}
