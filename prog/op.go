//go:generate go run ./internal/gen -root ..

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
	Gelu     // GELU, tanh form (kern.Gelu)
	GeluGrad // (x, g): g·gelu'(x)

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

	// What the generator (prog/internal/gen, `go generate ./prog`) writes the backends'
	// plumbing from. Kernel is the backend method (dispatch.Kernels) the op's steps call,
	// declared with its parameters by the first op that calls it ("Gather(out, x F, idx X, n,
	// rows, cols int)": F float buffers, X index inputs, M masks), by name alone by the others;
	// Also declares more methods the op's entry calls. Form is the shape of a generated
	// dispatcher entry; Launch the CUDA launcher (gpuexec.Launchers) a generated GPU method of
	// a generated form calls, "" where gpuexec's method is hand-written; CPU the kern function
	// the CPU's method calls (FormMap, FormMapGrad; of FormUnary the kern.UnaryOp); CUDA the
	// kernel of cuda/kernels/elementwise.cu the generated launcher (Launch, in package cuda)
	// runs, with its signature: "" where the launcher is hand-written (Relu's, whose GPU method
	// adds a folded bias first, calls the hand-written ReluBiased too).
	Kernel string
	Also   []string
	Form   Form
	Launch string
	CPU    string
	CUDA   string
}

// Form is the shape of an element-wise op's dispatcher entry, which the generator writes
// (prog/internal/gen); FormCustom: a hand-written entry (dispatch/table.go).
type Form uint8

const (
	FormCustom  Form = iota
	FormUnary        // (x) → Kernel(out, x, n, scalar): one of the front end's unary operators
	FormMap          // (x) → Kernel(out, x, n)
	FormMapGrad      // (y or x, g) → Kernel(dx, y, g, n)
)

var specs = [numOps]Spec{
	Add:     {Name: "+", Arity: 2, InPlace: []int{0, 1}, Kernel: "Add(out, a, b F, n int)", Also: scalarForms},
	Sub:     {Name: "-", Arity: 2, Kernel: "Sub(out, a, b F, n int)"},
	Mul:     {Name: "⊙", Arity: 2, Kernel: "Mul(out, a, b F, n int)"},
	Div:     {Name: "÷", Arity: 2, Kernel: "Div(out, a, b F, n int)"},
	GradSum: {Name: "Σ", Arity: 2, InPlace: []int{0, 1}, Kernel: "GradSum(out F, terms []F, n int)"},
	Tanh:    {Name: "tanh", Arity: 1, Kernel: "Tanh(out, x F, n int, scalar bool)", Form: FormUnary, Launch: "Tanh", CUDA: "ew_tanh", CPU: "OpTanh"},
	Sigmoid: {Name: "sigmoid", Arity: 1, Kernel: "Sigmoid(out, x F, n int, scalar bool)", Form: FormUnary, Launch: "Sigmoid", CUDA: "ew_sigmoid", CPU: "OpSigmoid"},
	Exp:     {Name: "exp", Arity: 1, Kernel: "Exp(out, x F, n int, scalar bool)", Form: FormUnary, Launch: "Exp", CUDA: "ew_exp", CPU: "OpExp"},
	Abs:     {Name: "abs", Arity: 1, Kernel: "Abs(out, x F, n int, scalar bool)", Form: FormUnary, Launch: "Abs", CUDA: "ew_abs", CPU: "OpAbs"},
	Sqrt:    {Name: "sqrt", Arity: 1, Kernel: "Sqrt(out, x F, n int, scalar bool)", Form: FormUnary, Launch: "Sqrt", CUDA: "ew_sqrt", CPU: "OpSqrt"},
	Relu:    {Name: "Relu", Arity: 1, InPlace: []int{0}, Kernel: "Relu(out, x F, n int)", Form: FormMap, CPU: "ReluAll", CUDA: "ew_relu"},
	ReluGrad: {Name: "ReluGrad", Arity: 2, InPlace: []int{1}, Kernel: "ReluGrad(dx, y, g F, n int)", Form: FormMapGrad,
		Launch: "ReluBackward", CUDA: "ew_relu_grad", CPU: "ReluGradAll"},
	Gelu:     {Name: "Gelu", Arity: 1, Kernel: "Gelu(out, x F, n int)", Form: FormMap, Launch: "Gelu", CUDA: "ew_gelu", CPU: "Gelu"},
	GeluGrad: {Name: "GeluGrad", Arity: 2, Kernel: "GeluGrad(dx, x, g F, n int)", Form: FormMapGrad, Launch: "GeluBackward", CUDA: "ew_gelu_grad", CPU: "GeluGrad"},

	Gather:             {Name: "Gather", Arity: 1, Kernel: "Gather(out, x F, idx X, n, rows, cols int)"},
	ScatterAdd:         {Name: "ScatterAdd", Arity: 1, Kernel: "ScatterAdd(out, x F, idx X, m, rows, cols int)"},
	SegmentSoftmax:     {Name: "SegmentSoftmax", Arity: 1, Kernel: "SegmentSoftmax(out, s F, seg X, m, h, nodes int)"},
	SegmentSoftmaxGrad: {Name: "SegmentSoftmaxGrad", Arity: 2, Kernel: "SegmentSoftmaxGrad(dx, y, dy F, seg X, m, h, nodes int)"},
	SegmentMax:         {Name: "SegmentMax", Arity: 1, Kernel: "SegmentMax(out, x F, seg X, m, d, nodes int)"},
	SegmentMaxGrad: {Name: "SegmentMaxGrad", Arity: 1, ReadsForward: true,
		Kernel: "SegmentMaxGrad(dx, g F, seg X, m, d, nodes int)"},
	EdgeSum: {Name: "EdgeSum", Arity: 3, Kernel: "EdgeSum(out, e, hs, ht F, src, dst X, m, rows, d int)"},
	EdgeSumGrad: {Name: "EdgeSumGrad", Arity: 1, Members: 2, Joined: true,
		Kernel: "EdgeSumGrad(dsrc, ddst, g F, src, dst X, m, rows, d int)"},

	BatchNorm: {Name: "BatchNorm", Arity: 3, Effect: true,
		Kernel: "BatchNorm(out, x, gamma, beta, res F, keep M, rows, d int, training, relu bool)"},
	BatchNormRelu: {Name: "BatchNormRelu", Arity: 3, Effect: true, Kernel: "BatchNorm"},
	BatchNormGrad: {Name: "BatchNormGrad", Arity: 4, Members: 3, ReadsForward: true, Joined: true, Summand: true,
		Kernel: "BatchNormGrad(dx, dgamma, dbeta, x, gamma, beta, dy F, keep M, rows, d int, training, relu bool)"},
	BatchNormReluGrad: {Name: "BatchNormReluGrad", Arity: 4, Members: 3, ReadsForward: true, Joined: true, Summand: true,
		Kernel: "BatchNormGrad"},
	LayerNorm: {Name: "LayerNorm", Arity: 3, Kernel: "LayerNorm(out, x, gamma, beta F, keep M, rows, d int)"},
	LayerNormGrad: {Name: "LayerNormGrad", Arity: 2, Members: 3, ReadsForward: true,
		Kernel: "LayerNormGrad(dx, dgamma, dbeta, gamma, dy F, keep M, rows, d int)"},

	GatedAggregate: {Name: "GatedAggregate", Arity: 2, Kernel: "GatedAggregate(out, ehat, bh F, src, dst X, m, nbh, nodes, d int)"},
	GatedAggregateGrad: {Name: "GatedAggregateGrad", Arity: 4, Members: 2, ReadsForward: true, Joined: true, Summand: true,
		Kernel: "GatedAggregateGrad(dehat, dbh, ehat, bh, out, g F, src, dst X, m, nbh, nodes, d int)"},

	GaussianWeights: {Name: "GaussianWeights", Arity: 3, Kernel: "GaussianWeights(w, u, mu, invSigma F, m, k, p int)"},
	GaussianWeightsGrad: {Name: "GaussianWeightsGrad", Arity: 5, Members: 3,
		Kernel: "GaussianWeightsGrad(du, dmu, dinvSigma, u, mu, invSigma, w, g F, m, k, p int)"},
	KernelMix:      {Name: "KernelMix", Arity: 2, Kernel: "KernelMix(out, x, w F, m, k, d int)"},
	KernelMixGradX: {Name: "KernelMixGradX", Arity: 2, Kernel: "KernelMixGrad(dx, dw, x, w, g F, m, k, d int)"},
	KernelMixGradW: {Name: "KernelMixGradW", Arity: 3, Kernel: "KernelMixGrad"},

	HeadDot:   {Name: "HeadDot", Arity: 2, Kernel: "HeadDot(out, q, k F, m, h, d int)"},
	HeadScale: {Name: "HeadScale", Arity: 2, Kernel: "HeadScale(out, x, w F, m, h, d int)"},

	MatMul:      {Name: "MatMul", Arity: 2, Kernel: "MatMul(out, x, w, bias F, m, a, b int)"},
	MatMulGradX: {Name: "MatMulGradX", Arity: 2, Summand: true, Kernel: "MatMulGrad(dx, dw, x, w, g F, m, a, b int)"},
	MatMulGradW: {Name: "MatMulGradW", Arity: 2, Kernel: "MatMulGrad"},
	AddBias:     {Name: "AddBias", Arity: 2, Kernel: "AddBias(out, x, bias F, rows, d int)"},
	ColSum:      {Name: "ColSum", Arity: 1, Kernel: "ColSum(out, x F, rows, d int)"},

	Dropout: {Name: "Dropout", Arity: 1, InPlace: []int{0}, Kernel: "Dropout(out, x F, n int, rate float64, seed uint64)",
		Also: []string{"Copy(out, x F, n int)"}},
	DropoutGrad: {Name: "DropoutGrad", Arity: 1, InPlace: []int{0}, Kernel: "Dropout"},

	MaskedL1:       {Name: "MaskedL1", Arity: 3, Kernel: "MaskedL1(out, p, y, w F, n int)"},
	MaskedL1Grad:   {Name: "MaskedL1Grad", Arity: 4, Kernel: "MaskedL1Grad(dp, p, y, w, g F, n int)"},
	WeightedCE:     {Name: "WeightedCE", Arity: 1, Kernel: "WeightedCE(out, z F, labels X, rows, classes int)"},
	WeightedCEGrad: {Name: "WeightedCEGrad", Arity: 2, Kernel: "WeightedCEGrad(dz, z, g F, labels X, rows, classes int)"},
	MaskedBCE:      {Name: "MaskedBCE", Arity: 3, Kernel: "MaskedBCE(out, p, y, w F, n int)"},
	MaskedBCEGrad:  {Name: "MaskedBCEGrad", Arity: 4, Kernel: "MaskedBCEGrad(dp, p, y, w, g F, n int)"},
}

// scalarForms are the backend methods of the element-wise binary ops with scalar operands:
// Scalar is op (Add … Div) of x [n] and a scalar s, s op x where left; Scalars is op of two
// scalars (the front end's plain arithmetic, which differs from its one-value tensor loops).
var scalarForms = []string{"Scalar(op prog.Op, out, x, s F, n int, left bool)", "Scalars(op prog.Op, out, a, b F)"}

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
