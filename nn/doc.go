// Package nn provides the graph-neural-network operations Gorgonia lacks as project-owned
// Gorgonia ops (each implements gorgonia.Op and gorgonia.SDOp, so gorgonia.Grad differentiates
// through them), the small layers the models share, parameters, Adam, shape buckets and a
// trainer that compiles one graph per bucket and reuses it.
//
// Ops (shapes as [rows, cols]; M edges, N nodes, G graphs, d features):
//
//	Gather(x [R,d], ix)            → [len(ix), d]   out[i] = w_i·x[ix_i]           (grad: ScatterAdd)
//	Embed(table [V,d], ids)        → [len(ids), d]  Gather on a table
//	ScatterAdd(x [len(ix),d], ix, R) → [R, d]       out[ix_i] += w_i·x[i]          (grad: Gather)
//	SegmentSoftmax(s [M,H], dst, N) → [M, H]        softmax over each destination's in-edges
//	BatchNorm(x, γ, β, state, mask) → x's shape     masked BatchNorm1d, running statistics
//	BatchNormRelu(x, γ, β, state, mask, res) → res + ReLU(BatchNorm(x))  (res may be nil)
//	LayerNorm(x, γ, β, mask)        → x's shape     per-row normalisation
//	GatedAggregate(ê [M,d], Bh [N,d], src, dst, N) → [N, d]  GatedGCN's σ-gated mean
//	EdgeSum(e [M,d], hs, ht [N,d], src, dst) → [M, d]  e + hs[src] + ht[dst]  (GatedGCN's ê)
//	GaussianWeights(u [M,P], μ [K,P], 1/σ [K,P]) → [M, K]    MoNet kernel weights
//	KernelMix(x [M,K·d], w [M,K]) → [M, d]          Σ_k w_k · block_k(x)
//	HeadDot(q, k [M,d], H) → [M, H]; HeadScale(x [M,d], w [M,H]) → [M, d]  per-head products
//	MatMul(x [R,a], W [a,b]) → [R, b]; AddBias, ColSum, Add, Relu, MaskedL1
//
// Index-valued inputs (edge endpoints, node→graph maps, category ids) are not graph nodes: an op
// holds a pointer to an Index whose length is fixed when the graph is built and whose contents
// Inputs.Load refills for every batch. An entry of -1 means "no row": a gather yields a zero row
// and a scatter skips it, which is how the padding edges and nodes of a shape bucket are kept out
// of every result; batch norm, layer norm, readout and loss take masks or weights for the same
// purpose, so a batch gives the same loss and gradients in any bucket it fits.
//
// Contract for other implementations (e.g. a CUDA kernel of the same op): every op fully
// overwrites its output (never accumulates into it) and never writes its inputs; ops that
// need forward results in their backward pass (batch norm, layer norm, gated aggregation) keep
// them in the forward op, which the backward ops of the same graph reference. Where one pass
// computes several gradients (batch norm's dx, dγ, dβ; a product's dx, dW, db; gated
// aggregation's and edge sum's two inputs), the first op computes them all and small ops that
// take its output as an input only to run after it hand out the others. The CPU kernels are
// plain functions over row-major slices (GatherRows, ScatterAddRows, SegmentSoftmaxRows and the
// unexported kernels), generic over float32 and float64; outputs are reused between runs, so
// steady-state training allocates no tensors. Every op but the losses is a funcOp (funcop.go):
// its file holds the shape rule, the kernels and the gradient rule only.
//
// Float32 kernels on amd64: matrix products run on an AVX-512 (or AVX2/FMA) micro-kernel
// (sgemm*.go), reading x transposed in place for xᵀ·dy, and the element-wise row loops of the
// fused ops on AVX2 (vec.go, vec_amd64.s); elsewhere, and in float64, they are plain Go and
// gonum. Work is handed out in chunks to GOMAXPROCS goroutines (parallel.go); sums over edges
// run per node over edges grouped by destination or source, so results do not depend on the
// number of goroutines.
//
// Nets run on a small executor (vm.go) instead of gorgonia's TapeMachine: it runs the ops in
// topological order, skips gradient nodes no output needs, runs a product followed by AddBias
// as one kernel, computes gorgonia.Grad's chains of gradient additions as one vectorised sum,
// and lets an op that can add a summand to its result (funcOp.sumsIn) take over a two-term sum
// whose other term is ready, saving a pass. These are choices of the executor only: the graph,
// and what each op computes, are the same for any other executor.
package nn
