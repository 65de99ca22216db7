// Package dispatch runs one step of a program on a backend: the one table, keyed by prog.Op,
// that reads a step's operands, shapes and attributes and calls the backend's kernel for the
// op. Both executors drive it: the CPU (package cpuexec, over kern) and the GPU (package
// gpuexec, over the CUDA launchers). A new op adds its entry here, its method to Kernels, and
// one implementation of that method in each backend.
//
// A backend is generic in three buffer types: F for float tensors (a []float32 or []float64
// slice on the CPU, a device address on the GPU), X for index inputs (entries and weights) and
// M for masks. The zero value of F means "not computed" (a gradient the step does not need) or
// "not there" (an optional operand).
package dispatch

import "github.com/rewiregnn/rewiregnn/prog"

// Backend is what the dispatcher drives: the step being run (Frame) and the kernels.
type Backend[F, X, M any] interface {
	Frame[F, X, M]
	Kernels[F, X, M]
}

// Frame is a backend's view of the step being run. A step has members (Node.Which: a gradient
// group's results computed by one pass, or one member for a single node); member w reads its
// inputs and writes its result. The primary member is the first one present.
type Frame[F, X, M any] interface {
	Program() *prog.Program
	Feed() prog.Feed
	// Members is the number of members of the step.
	Members() int
	// Has reports whether member w is present (its inputs are known).
	Has(w int) bool
	// Computes reports whether the step writes member w's result.
	Computes(w int) bool
	// NumIn is the number of inputs of member w.
	NumIn(w int) int
	// In is member w's input i; Shape its rows and columns (a vector is one row, a scalar
	// 1×1); Elems its number of elements; IsScalar whether it is a scalar (on the CPU a value
	// of nil shape, as the front end's scalars; on the GPU any one-value operand).
	In(w, i int) F
	Shape(w, i int) (rows, cols int)
	Elems(w, i int) int
	IsScalar(w, i int) bool
	// Out is member w's result (zero where the step does not compute it); OutElems its size.
	Out(w int) F
	OutElems(w int) int
	// Index is index input ix. A backend checks every index once per batch, before the run,
	// against the bound prog.Program.IndexBounds gives (the rows of what each reader indexes).
	Index(ix int) X
	// Mask is mask input m as the kernels read it.
	Mask(m int) M
}

// Kernels has one method per op kind, forward and backward. Each documents its operands in
// the op's terms (prog.Op); sizes are in elements, matrices row-major. A method that computes
// several results takes the zero F for one the step does not need, where the backend can skip
// it. State a forward op keeps for its gradient (statistics, arg-maxes, grouped edges) is the
// backend's to keep, per Node.Group, as its policy says (docs/design.md).
type Kernels[F, X, M any] interface {
	// Element-wise on n values of equal shape; Scalar is op (prog.Add … prog.Div) of x [n]
	// and a scalar s, s op x where left; Scalars is op of two scalars (the front end's plain
	// arithmetic, which differs from its one-value tensor loops); GradSum adds ≥ 2 terms in
	// order.
	Add(out, a, b F, n int) error
	Sub(out, a, b F, n int) error
	Mul(out, a, b F, n int) error
	Div(out, a, b F, n int) error
	Scalar(op prog.Op, out, x, s F, n int, left bool) error
	Scalars(op prog.Op, out, a, b F) error
	GradSum(out F, terms []F, n int) error
	// Unary on n values; scalar: x is a scalar value (the front end's scalar functions may
	// round differently from its tensor functions).
	Tanh(out, x F, n int, scalar bool) error
	Sigmoid(out, x F, n int, scalar bool) error
	Exp(out, x F, n int, scalar bool) error
	Abs(out, x F, n int, scalar bool) error
	Sqrt(out, x F, n int, scalar bool) error
	Relu(out, x F, n int) error
	ReluGrad(dx, y, g F, n int) error

	// Gather: out [n, cols] = x[idx] (weighted where idx is) for x [rows, cols].
	Gather(out, x F, idx X, n, rows, cols int) error
	// ScatterAdd: out [rows, cols] = Σ over i with idx[i] = r of x[i], x [m, cols].
	ScatterAdd(out, x F, idx X, m, rows, cols int) error
	// SegmentSoftmax of s [m, h] over the rows of each segment (seg, into nodes segments).
	SegmentSoftmax(out, s F, seg X, m, h, nodes int) error
	SegmentSoftmaxGrad(dx, y, dy F, seg X, m, h, nodes int) error
	// EdgeSum: out [m, d] = e + hs[src] + ht[dst], hs and ht [rows, d].
	EdgeSum(out, e, hs, ht F, src, dst X, m, rows, d int) error
	// EdgeSumGrad: g [m, d] summed along src into dsrc and along dst into ddst ([rows, d]).
	EdgeSumGrad(dsrc, ddst, g F, src, dst X, m, rows, d int) error
	// SegmentMax: out [nodes, d] = the max of x [m, d] over each segment, 0 where empty.
	SegmentMax(out, x F, seg X, m, d, nodes int) error
	SegmentMaxGrad(dx, g F, seg X, m, d, nodes int) error

	// BatchNorm of x [rows, d] over the rows keep marks, its running statistics in the node's
	// state; relu: ReLU after it, then res added where non-zero.
	BatchNorm(out, x, gamma, beta, res F, keep M, rows, d int, training, relu bool) error
	// BatchNormGrad: dx, dγ, dβ from the forward's statistics (through the ReLU for relu).
	BatchNormGrad(dx, dgamma, dbeta, x, gamma, beta, dy F, keep M, rows, d int, training, relu bool) error
	LayerNorm(out, x, gamma, beta F, keep M, rows, d int) error
	LayerNormGrad(dx, dgamma, dbeta, gamma, dy F, keep M, rows, d int) error

	// GatedAggregate: out [nodes, d] per destination Σ σ(ê)⊙Bh[src] / (Σ σ(ê) + ε), ê [m, d],
	// Bh [nbh, d].
	GatedAggregate(out, ehat, bh F, src, dst X, m, nbh, nodes, d int) error
	GatedAggregateGrad(dehat, dbh, ehat, bh, out, g F, src, dst X, m, nbh, nodes, d int) error

	// GaussianWeights: w [m, k] from u [m, p], μ and 1/σ [k, p].
	GaussianWeights(w, u, mu, invSigma F, m, k, p int) error
	GaussianWeightsGrad(du, dmu, dinvSigma, u, mu, invSigma, w, g F, m, k, p int) error
	// KernelMix: out [m, d] = Σ_k w[:, k]·x[:, k·d:(k+1)·d], x [m, k·d], w [m, k].
	KernelMix(out, x, w F, m, k, d int) error
	KernelMixGrad(dx, dw, x, w, g F, m, k, d int) error

	// HeadDot: out [m, h] = per head the dot product of q and k [m, d]; HeadScale: x [m, d]
	// scaled per head by w [m, h].
	HeadDot(out, q, k F, m, h, d int) error
	HeadScale(out, x, w F, m, h, d int) error

	// MatMul: out [m, b] = x [m, a]·w [a, b] (+ bias [b] where non-zero); MatMulGrad: dx =
	// g·wᵀ and dw = xᵀ·g, either zero.
	MatMul(out, x, w, bias F, m, a, b int) error
	MatMulGrad(dx, dw, x, w, g F, m, a, b int) error
	AddBias(out, x, bias F, rows, d int) error
	ColSum(out, x F, rows, d int) error

	// Dropout of n values at rate with the step's seed; Copy where it is the identity.
	Dropout(out, x F, n int, rate float64, seed uint64) error
	Copy(out, x F, n int) error

	// MaskedL1: out [1] = the L1 loss of p against y over n values weighted by w; MaskedBCE:
	// the binary cross-entropy of logits p against targets y, likewise; WeightedCE: the
	// cross-entropy of logits z [rows, classes] with labels and their weights.
	MaskedL1(out, p, y, w F, n int) error
	MaskedL1Grad(dp, p, y, w, g F, n int) error
	MaskedBCE(out, p, y, w F, n int) error
	MaskedBCEGrad(dp, p, y, w, g F, n int) error
	WeightedCE(out, z F, labels X, rows, classes int) error
	WeightedCEGrad(dz, z, g F, labels X, rows, classes int) error
}
