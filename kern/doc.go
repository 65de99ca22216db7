// Package kern provides the CPU kernels of the project's ops as plain functions over row-major
// slices, generic over float32 and float64: matrix products, the element-wise row loops of
// the fused ops, and the row kernels of gathers, scatters, segment softmax and segment max, bias
// and column sums; the attention heads and MoNet's kernel mix (heads.go), the gated
// aggregation (gated.go), the Gaussian weights (gaussian.go), the losses (loss.go), batch norm
// (batchnorm.go), layer norm (norm.go) and dropout (dropout.go), each forward and backward with
// the parameters of its CUDA launcher in cuda/ops.go (slices for device buffers, int32 indices,
// explicit sizes); and Gorgonia's own element-wise operators, bit for bit as Gorgonia computes
// them (elementwise.go). It imports no Gorgonia package.
//
// Float32 kernels on amd64: matrix products run on an AVX-512 (or AVX2/FMA) micro-kernel
// (sgemm*.go, sgemm*_amd64.s), reading x transposed in place for xᵀ·dy, and the element-wise
// row loops on AVX2 (vec.go, vec_amd64.s); elsewhere, and in float64, they are plain Go and
// gonum's GEMM without transposes (whose sums run in index order); dot products are the
// package's own (dot: a fixed order, whatever the operands' addresses). Work is handed out in chunks to GOMAXPROCS goroutines (parallel.go); sums over edges
// run per node over edges grouped by destination or source (Segments), and sums over the rows
// of a product's gradient are partial sums fixed by the shape (Parts) and batch norm's column
// sums partial sums of BNChunk rows, added in order, so results do not depend on the number of
// goroutines.
package kern
