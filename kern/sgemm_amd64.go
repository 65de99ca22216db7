package kern

import "golang.org/x/sys/cpu"

// kern6x16 is the AVX2/FMA micro-kernel in sgemm_amd64.s.
//
//go:noescape
func kern6x16(a []float32, rs, cs int, b []float32, ldb int, c []float32, ldc int, k, acc int, bias []float32)

// kern12x16 is the AVX-512 micro-kernel in sgemm512_amd64.s.
//
//go:noescape
func kern12x16(a []float32, rs, cs int, b []float32, ldb int, c []float32, ldc int, k, acc int, bias []float32, cols int)

var haveKernel = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// kernels are the micro-kernels this CPU can run, the preferred one first.
var kernels = func() []microKernel {
	var ks []microKernel
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, microKernel{"avx512", 12, true})
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, microKernel{"avx2", 6, false})
	}
	return ks
}()
