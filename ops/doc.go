// Package ops provides the graph-neural-network operations Gorgonia lacks as project-owned
// Gorgonia ops (each implements gorgonia.Op and gorgonia.SDOp, so gorgonia.Grad differentiates
// through them): their shape rules, gradient rules and the losses, with the Index and Mask
// holders they read, the batch-norm and dropout state they keep, and the description of every
// op another executor needs (device.go). The arithmetic runs on the CPU kernels of package
// kern.
//
// Ops (shapes as [rows, cols]; M edges, N nodes, G graphs, d features):
//
//	Gather(x [R,d], ix)            → [len(ix), d]   out[i] = w_i·x[ix_i]           (grad: ScatterAdd)
//	Embed(table [V,d], ids)        → [len(ids), d]  Gather on a table
//	ScatterAdd(x [len(ix),d], ix, R) → [R, d]       out[ix_i] += w_i·x[i]          (grad: Gather)
//	SegmentSoftmax(s [M,H], dst, N) → [M, H]        softmax over each destination's in-edges
//	SegmentMax(x [M,d], dst, N)     → [N, d]        max over each destination's in-edges (0 if none)
//	BatchNorm(x, γ, β, state, mask) → x's shape     masked BatchNorm1d, running statistics
//	BatchNormRelu(x, γ, β, state, mask, res) → res + ReLU(BatchNorm(x))  (res may be nil)
//	LayerNorm(x, γ, β, mask)        → x's shape     per-row normalisation
//	GatedAggregate(ê [M,d], Bh [N,d], src, dst, N) → [N, d]  GatedGCN's σ-gated mean
//	EdgeSum(e [M,d], hs, ht [N,d], src, dst) → [M, d]  e + hs[src] + ht[dst]  (GatedGCN's ê)
//	GaussianWeights(u [M,P], μ [K,P], 1/σ [K,P]) → [M, K]    MoNet kernel weights
//	KernelMix(x [M,K·d], w [M,K]) → [M, d]          Σ_k w_k · block_k(x)
//	HeadDot(q, k [M,d], H) → [M, H]; HeadScale(x [M,d], w [M,H]) → [M, d]  per-head products
//	MatMul(x [R,a], W [a,b]) → [R, b]; AddBias, ColSum, Add, Relu, Dropout
//	MaskedL1(pred, y, w), WeightedCE(logits, labels) → scalar losses
//
// Index-valued inputs (edge endpoints, node→graph maps, category ids) are not graph nodes: an op
// holds a pointer to an Index whose length is fixed when the graph is built and whose contents
// the caller refills for every batch. An entry of -1 means "no row": a gather yields a zero row
// and a scatter skips it, which is how the padding edges and nodes of a shape bucket are kept out
// of every result; batch norm, layer norm, readout and loss take masks or weights for the same
// purpose, so a batch gives the same loss and gradients in any bucket it fits.
//
// Contract for other implementations (e.g. a CUDA kernel of the same op): every op fully
// overwrites its output (never accumulates into it) and never writes its inputs, except that an
// element-wise op (Func.InPlace) may be given one of its inputs as its output; ops that need
// forward results in their backward pass (batch norm, layer norm, gated aggregation, segment
// max) keep them in the forward op, or in aux buffers the executor provides (Func.Aux), which
// the backward ops of the same graph reference. Where one pass
// computes several gradients (batch norm's dx, dγ, dβ; a product's dx, dW, db; gated
// aggregation's and edge sum's two inputs), the first op computes them all and small ops that
// take its output as an input only to run after it hand out the others. Outputs (the op's own
// buffer, or the executor's slot given as RunOpts.Out) are reused between runs, so steady-state
// training allocates no tensors. Every op but the losses is a
// Func (funcop.go): its file holds the shape rule, the kernels and the gradient rule only.
//
// A Func also says what an executor may do with it beyond Do: take a summand to add to its
// result (SumsIn), run a product and its bias as one op (WithBias), leave out the result of a
// shared pass's other op or have a product's gradient pass compute the bias gradient too, write
// into buffers it plans (Out, PairOut, Aux, Scratch), replay a forward op for recomputation
// (Replay) (RunOpts, given to Run). Those choices are the executor's (package cpuexec): the op keeps none of
// them, and what each op computes is the same for any executor.
package ops
