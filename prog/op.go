package prog

import "fmt"

// Op is the operation of a program node. Forward and backward operations are kinds of their
// own; a gradient op that one pass computes together with others (a batch norm's dx, dγ, dβ)
// names its member by Node.Which.
type Op uint8

const (
	Invalid Op = iota

	// Element-wise operations on equal shapes, or with one scalar operand (Add … Div).
	Add     // a + b (the front end's operator, and the project's own add)
	Sub     // a − b
	Mul     // a ⊙ b
	Div     // a ÷ b
	GradSum // a + b summing two gradient contributions of one value (equal shapes)
	Tanh
	Sigmoid
	Exp
	Abs
	Sqrt
	Relu
	ReluGrad // (y, g): g where y > 0

	// Gathers and scatters over index inputs (Node.Index, Src, Dst).
	Gather             // (x) → x[idx[i]] (weighted by the index's weights, if any)
	ScatterAdd         // (x) → rows Node.Rows: Σ over i with idx[i] = r of x[i]
	SegmentSoftmax     // (s [M, H]) → softmax over the edges of each destination (Node.Index)
	SegmentSoftmaxGrad // (y, dy)
	EdgeSum            // (e, hs, ht) → e + hs[src] + ht[dst]
	EdgeSumGrad        // (g) → Which 0: g summed along src; 1: along dst
	SegmentMax         // (x [M, d]) → rows Node.Rows: max over the edges of each destination (Node.Index), 0 where none
	SegmentMaxGrad     // (g) → dx: g at each column's arg-max edge (kept by the forward, Node.Group)

	// Normalisations, with forward state kept for the gradient (Node.State).
	BatchNorm         // (x, γ, β) over the rows of Node.Mask; running statistics in Node.State
	BatchNormRelu     // (x, γ, β) or (x, γ, β, residual): ReLU(BN(x)) (+ residual)
	BatchNormGrad     // Which 0: (x, γ, β, dy) → dx; 1: (dx, γ) → dγ; 2: (dx, β) → dβ
	BatchNormReluGrad // as BatchNormGrad, through the ReLU
	LayerNorm         // (x, γ, β)
	LayerNormGrad     // Which 0: (γ, dy) → dx; 1, 2: dγ, dβ

	// The GatedGCN aggregation.
	GatedAggregate     // (ê, Bh) → Σ σ(ê)⊙Bh[src] / (Σ σ(ê) + ε) per destination
	GatedAggregateGrad // Which 0: (ê, Bh, out, g) → dê; 1: (dê, Bh) → dBh

	// MoNet.
	GaussianWeights     // (u, μ, 1/σ) → w
	GaussianWeightsGrad // (u, μ, 1/σ, w, g) → Which 0: du, 1: dμ, 2: d(1/σ)
	KernelMix           // (x [M, K·d], w [M, K]) → [M, d]
	KernelMixGradX      // (g, w) → dx
	KernelMixGradW      // (x, g, w) → dw

	// Attention heads.
	HeadDot   // (q, k) [M, d] → [M, H] (Node.Heads)
	HeadScale // (x [M, d], w [M, H]) → x scaled per head

	// Products and biases.
	MatMul      // (x [M, a], w [a, b])
	MatMulGradX // (g, w) → g·wᵀ
	MatMulGradW // (x, g) → xᵀ·g
	AddBias     // (x [M, d], b [d])
	ColSum      // (x [M, d]) → [d]

	// Dropout at Node.Rate, its mask drawn per step (Node.State).
	Dropout
	DropoutGrad

	// Losses.
	MaskedL1       // (pred, y, w) → scalar
	MaskedL1Grad   // (pred, y, w, g)
	WeightedCE     // (z) with labels and weights in Node.Index → scalar
	WeightedCEGrad // (z, g)
	MaskedBCE      // (z, y, w) → scalar: binary cross-entropy with logits
	MaskedBCEGrad  // (z, y, w, g)

	numOps
)

// Spec is what the program knows of an op kind: its name, how many inputs it takes, and how
// its gradient members group.
type Spec struct {
	Name string
	// Arity is the number of inputs; Arities lists the valid counts where there are several
	// (by member for grouped gradients: ArityOf).
	Arity int
	// Members is the number of results one pass of the op computes together (gradient groups:
	// batch and layer norm, the gated aggregation, the edge sum, the Gaussian weights); Which
	// selects one. 0 or 1: a single result.
	Members int
	// Effect: the op changes state besides its result (a batch norm's running statistics in
	// training), so it runs even where nothing reads its result.
	Effect bool
	// ReadsForward: a gradient op that reads what its forward op (the node of the same
	// Node.Group that is not a gradient) keeps for it: a normalisation's x̂ and statistics, the
	// gated aggregation's denominators, the segment max's arg-max.
	ReadsForward bool
	// Joined: the members after the first are computed by the first member's pass; each takes
	// the first member's result as its input 0 only to run after it (batch norm's dγ and dβ,
	// the gated aggregation's dBh, the edge sum's sum along dst).
	Joined bool
	// Summand: member 0's kernel can add a summand to its result (an executor may fold a
	// two-term gradient sum into it).
	Summand bool
	// InPlace lists the inputs whose buffer the result may take over: element-wise ops, whose
	// out[i] depends on the inputs' element i only, read before it is written.
	InPlace []int
}

var specs = [numOps]Spec{
	Add: {Name: "+", Arity: 2, InPlace: []int{0, 1}}, Sub: {Name: "-", Arity: 2}, Mul: {Name: "⊙", Arity: 2}, Div: {Name: "÷", Arity: 2},
	GradSum: {Name: "Σ", Arity: 2, InPlace: []int{0, 1}}, Tanh: {Name: "tanh", Arity: 1}, Sigmoid: {Name: "sigmoid", Arity: 1},
	Exp: {Name: "exp", Arity: 1}, Abs: {Name: "abs", Arity: 1}, Sqrt: {Name: "sqrt", Arity: 1}, Relu: {Name: "Relu", Arity: 1, InPlace: []int{0}},
	ReluGrad: {Name: "ReluGrad", Arity: 2, InPlace: []int{1}},
	Gather:   {Name: "Gather", Arity: 1}, ScatterAdd: {Name: "ScatterAdd", Arity: 1},
	SegmentSoftmax: {Name: "SegmentSoftmax", Arity: 1}, SegmentSoftmaxGrad: {Name: "SegmentSoftmaxGrad", Arity: 2},
	SegmentMax: {Name: "SegmentMax", Arity: 1}, SegmentMaxGrad: {Name: "SegmentMaxGrad", Arity: 1, ReadsForward: true},
	EdgeSum: {Name: "EdgeSum", Arity: 3}, EdgeSumGrad: {Name: "EdgeSumGrad", Arity: 1, Members: 2, Joined: true},
	BatchNorm: {Name: "BatchNorm", Arity: 3, Effect: true}, BatchNormRelu: {Name: "BatchNormRelu", Arity: 3, Effect: true},
	BatchNormGrad:     {Name: "BatchNormGrad", Arity: 4, Members: 3, ReadsForward: true, Joined: true, Summand: true},
	BatchNormReluGrad: {Name: "BatchNormReluGrad", Arity: 4, Members: 3, ReadsForward: true, Joined: true, Summand: true},
	LayerNorm:         {Name: "LayerNorm", Arity: 3}, LayerNormGrad: {Name: "LayerNormGrad", Arity: 2, Members: 3, ReadsForward: true},
	GatedAggregate: {Name: "GatedAggregate", Arity: 2}, GatedAggregateGrad: {Name: "GatedAggregateGrad", Arity: 4, Members: 2, ReadsForward: true, Joined: true, Summand: true},
	GaussianWeights: {Name: "GaussianWeights", Arity: 3}, GaussianWeightsGrad: {Name: "GaussianWeightsGrad", Arity: 5, Members: 3},
	KernelMix: {Name: "KernelMix", Arity: 2}, KernelMixGradX: {Name: "KernelMixGradX", Arity: 2}, KernelMixGradW: {Name: "KernelMixGradW", Arity: 3},
	HeadDot: {Name: "HeadDot", Arity: 2}, HeadScale: {Name: "HeadScale", Arity: 2},
	MatMul: {Name: "MatMul", Arity: 2}, MatMulGradX: {Name: "MatMulGradX", Arity: 2, Summand: true}, MatMulGradW: {Name: "MatMulGradW", Arity: 2},
	AddBias: {Name: "AddBias", Arity: 2}, ColSum: {Name: "ColSum", Arity: 1},
	Dropout: {Name: "Dropout", Arity: 1, InPlace: []int{0}}, DropoutGrad: {Name: "DropoutGrad", Arity: 1, InPlace: []int{0}},
	MaskedL1: {Name: "MaskedL1", Arity: 3}, MaskedL1Grad: {Name: "MaskedL1Grad", Arity: 4},
	WeightedCE: {Name: "WeightedCE", Arity: 1}, WeightedCEGrad: {Name: "WeightedCEGrad", Arity: 2},
	MaskedBCE: {Name: "MaskedBCE", Arity: 3}, MaskedBCEGrad: {Name: "MaskedBCEGrad", Arity: 4},
}

// Ops lists every op kind.
func Ops() []Op {
	out := make([]Op, 0, numOps-1)
	for o := Invalid + 1; o < numOps; o++ {
		out = append(out, o)
	}
	return out
}

// Spec returns the op's description.
func (o Op) Spec() Spec {
	if o >= numOps {
		return Spec{}
	}
	return specs[o]
}

func (o Op) String() string {
	if o == Invalid || o >= numOps {
		return fmt.Sprintf("Op(%d)", uint8(o))
	}
	return specs[o].Name
}

// ArityOf returns the number of inputs of member which of op o with n inputs given, or an error
// where n is not one the op takes. Most ops take Spec.Arity inputs; a batch norm may add a
// residual; the members after the first of a normalisation's or of the gated aggregation's
// gradient take (their first member's result, a parameter).
func ArityOf(o Op, which, n int) error {
	want := o.Spec().Arity
	switch o {
	case BatchNormRelu:
		if n == 4 {
			want = 4
		}
	case BatchNormGrad, BatchNormReluGrad, GatedAggregateGrad:
		if which > 0 {
			want = 2
		}
	}
	if n != want {
		return fmt.Errorf("%d inputs, %s takes %d", n, o, want)
	}
	return nil
}

// Elementwise reports whether o is one of the element-wise binary operations that accept a
// scalar operand.
func (o Op) Elementwise() bool { return o == Add || o == Sub || o == Mul || o == Div }
