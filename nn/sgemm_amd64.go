package nn

import "golang.org/x/sys/cpu"

// kern6x16 is the AVX2/FMA micro-kernel in sgemm_amd64.s.
//
//go:noescape
func kern6x16(a []float32, rs, cs int, b []float32, ldb int, c []float32, ldc int, k, acc int)

var haveKernel = cpu.X86.HasAVX2 && cpu.X86.HasFMA
