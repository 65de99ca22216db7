// Package ops provides the graph-neural-network operations Gorgonia lacks as project-owned
// Gorgonia ops (each implements gorgonia.Op and gorgonia.SDOp, so gorgonia.Grad differentiates
// through them): their shape rules, gradient rules and the losses, with the Index and Mask
// holders they read, the batch-norm and dropout state they keep, and the description of every
// op the lowering needs (device.go). The arithmetic of Do runs on the CPU kernels of package
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
//	MatMul(x [R,a], W [a,b]) → [R, b]; AddBias, ColSum, Add, Relu, Gelu (tanh form), Dropout
//	MaskedL1(pred, y, w), MaskedBCE(z, y, w), WeightedCE(logits, labels) → scalar losses
//
// Index-valued inputs (edge endpoints, node→graph maps, category ids) are not graph nodes: an op
// holds a pointer to an Index whose length is fixed when the graph is built and whose contents
// the caller refills for every batch. An entry of -1 means "no row": a gather yields a zero row
// and a scatter skips it, which is how the padding edges and nodes of a shape bucket are kept out
// of every result; batch norm, layer norm, readout and loss take masks or weights for the same
// purpose, so a batch gives the same loss and gradients in any bucket it fits.
//
// An op here is a node of the front end's graphs: it gives its shape rule, its symbolic
// gradient (SymDiff, built from further ops of this package, so gorgonia.Grad differentiates
// through it) and its description for the lowering (Describe, device.go), from which package
// lower makes the program that executors run. Executors run only that program (package cpuexec
// on the CPU, gpuexec on a GPU), never the ops; their kernels must compute what the ops' Do
// computes.
//
// Do runs an op's CPU kernel (package kern) on its inputs. Gorgonia's TapeMachine calls it in
// the gradient checks (internal/gradcheck), and tests use it as the reference of the
// executors' kernels. Every op fully overwrites its output (never accumulates into it) and
// never writes its inputs. Ops that need forward results in their backward pass (batch norm,
// layer norm, gated aggregation, segment max, edge sum) keep them in a state shared with their
// gradient ops (DeviceOp.State). Where one pass computes several gradients (batch norm's dx,
// dγ, dβ; a product's dx and dW; gated aggregation's and edge sum's two inputs), one op
// computes them all and the others hand out their share: small ops that take its output as an
// input only to run after it, or, for a product, whichever of dx and dW runs second. Outputs
// are the op's own buffers, reused between runs. Every op but the losses is a Func
// (funcop.go): its file holds the shape rule, the kernels and the gradient rule only.
package ops
