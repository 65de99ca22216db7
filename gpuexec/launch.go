package gpuexec

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/cuda"
	"github.com/rewiregnn/rewiregnn/dispatch"
	"github.com/rewiregnn/rewiregnn/prog"
)

// call is one step being launched: the GPU backend of the dispatcher (dispatch.Backend over
// device addresses), its kernels the launchers of package cuda.
type call struct {
	e  *Exec
	b  Backend
	pr *Program
	st *Step
}

// devIndex is an index input on the device: int32 entries and float32 weights (0 where it
// has none).
type devIndex struct{ idx, w cuda.DevPtr }

// table is the dispatch table the GPU runs every step through.
var table = dispatch.New[cuda.DevPtr, devIndex, cuda.DevPtr]()

var _ dispatch.Backend[cuda.DevPtr, devIndex, cuda.DevPtr] = (*call)(nil)

func (c *call) Program() *prog.Program { return c.pr.Plan.Prog }
func (c *call) Feed() prog.Feed        { return c.pr.Feed }
func (c *call) Members() int           { return len(c.st.Ins) }
func (c *call) Has(w int) bool         { return w < len(c.st.Ins) && c.st.Ins[w] != nil }
func (c *call) Computes(w int) bool    { return w < len(c.st.Outs) && c.st.Outs[w] >= 0 }
func (c *call) NumIn(w int) int        { return len(c.st.Ins[w]) }
func (c *call) In(w, i int) cuda.DevPtr {
	return c.e.Ptr(c.pr, c.st.Ins[w][i])
}
func (c *call) Shape(w, i int) (int, int) { return c.pr.Plan.Shape(c.st.Ins[w][i]) }
func (c *call) Elems(w, i int) int        { return c.pr.Plan.Vals[c.st.Ins[w][i]].Elems }

// IsScalar: the device runs any one-value operand as a scalar (ScalarOp).
func (c *call) IsScalar(w, i int) bool { return c.Elems(w, i) == 1 }
func (c *call) Out(w int) cuda.DevPtr {
	if !c.Computes(w) {
		return 0
	}
	return c.e.Ptr(c.pr, c.st.Outs[w])
}
func (c *call) OutElems(w int) int { return c.pr.Plan.Vals[c.st.Outs[w]].Elems }

// Index returns index input ix's device buffers; Stage checked its entries when it uploaded
// them.
func (c *call) Index(ix int) devIndex  { return devIndex{c.pr.idx[ix], c.pr.idxW[ix]} }
func (c *call) Mask(m int) cuda.DevPtr { return c.pr.mask[m] }

// bias is the bias folded into the step's input k (Step.Bias), 0 for none.
func (c *call) bias(k int) cuda.DevPtr {
	if c.st.Bias == nil || c.st.Bias[k] < 0 {
		return 0
	}
	return c.e.Ptr(c.pr, c.st.Bias[k])
}

// firstBF16 reports whether the first input of the step's launcher (primary: a batch norm's x,
// a gated aggregation's ê) is stored in bf16 (Value.BF16).
func (c *call) firstBF16() bool { return c.pr.Plan.Vals[primary(c.st)[0]].BF16 }

// aux is a step's planned buffer i: what a forward op keeps for its gradient step (Step.Aux).
func (c *call) aux(i int) cuda.DevPtr { return c.e.Ptr(c.pr, c.st.Aux[i]) }

// Add adds the biases folded into it (Step.Bias) to its operands first, and divides its
// second operand by the denominators of a gated aggregation folded into it (Step.Div).
func (c *call) Add(out, a, b cuda.DevPtr, n int) error {
	st, stats := c.stats()
	if c.st.Bias != nil || c.st.Div != nil || stats {
		rows, d := c.pr.Plan.Shape(c.st.Outs[0])
		var div cuda.DevPtr
		if c.st.Div != nil {
			div = c.e.Ptr(c.pr, c.st.Div[1])
		}
		if stats {
			return c.b.AddBiasedDivStats(out, a, c.bias(0), b, c.bias(1), div, rows, d, st)
		}
		return c.b.AddBiasedDiv(out, a, c.bias(0), b, c.bias(1), div, rows, d)
	}
	return c.b.Add(out, a, b, n)
}

// stats returns the buffers of the batch norm statistics folded into the step (Step.Stats),
// and whether the step takes them in this run: in training.
func (c *call) stats() (cuda.BNStats, bool) {
	f := c.st.Stats
	if f == nil || !c.pr.Feed.Training(f.State) {
		return cuda.BNStats{}, false
	}
	bn := c.pr.bn[f.State]
	return cuda.BNStats{Mean: c.e.Ptr(c.pr, f.Mean), InvStd: c.e.Ptr(c.pr, f.InvStd), RunMean: bn.Mean, RunVar: bn.Var,
		Keep: c.pr.mask[f.Mask]}, true
}
func (c *call) Sub(out, a, b cuda.DevPtr, n int) error { return c.b.Sub(out, a, b, n) }
func (c *call) Mul(out, a, b cuda.DevPtr, n int) error { return c.b.Mul(out, a, b, n) }
func (c *call) Div(out, a, b cuda.DevPtr, n int) error { return c.b.Div(out, a, b, n) }

// scalarCodes are cuda.ScalarOp's codes of the element-wise ops.
var scalarCodes = map[prog.Op]int{prog.Add: cuda.ScalarAdd, prog.Sub: cuda.ScalarSub, prog.Mul: cuda.ScalarMul, prog.Div: cuda.ScalarDiv}

func (c *call) Scalar(op prog.Op, out, x, s cuda.DevPtr, n int, left bool) error {
	code, ok := scalarCodes[op]
	if !ok {
		return fmt.Errorf("%s with a scalar operand", op)
	}
	return c.b.ScalarOp(out, x, s, n, code, left)
}

// Scalars runs two one-value operands through the element-wise launcher.
func (c *call) Scalars(op prog.Op, out, a, b cuda.DevPtr) error {
	switch op {
	case prog.Add:
		return c.b.Add(out, a, b, 1)
	case prog.Sub:
		return c.b.Sub(out, a, b, 1)
	case prog.Mul:
		return c.b.Mul(out, a, b, 1)
	case prog.Div:
		return c.b.Div(out, a, b, 1)
	}
	return fmt.Errorf("%s of two scalars", op)
}

// GradSum adds the terms pairwise, in order (the device's policy: no n-ary sum).
func (c *call) GradSum(out cuda.DevPtr, terms []cuda.DevPtr, n int) error {
	if err := c.b.Add(out, terms[0], terms[1], n); err != nil {
		return err
	}
	for _, t := range terms[2:] {
		if err := c.b.Add(out, out, t, n); err != nil {
			return err
		}
	}
	return nil
}

// Relu adds the bias folded into it (Step.Bias) first.
func (c *call) Relu(out, x cuda.DevPtr, n int) error {
	if b := c.bias(0); b != 0 {
		rows, d := c.pr.Plan.Shape(c.st.Outs[0])
		return c.b.ReluBiased(out, x, b, rows, d)
	}
	return c.b.Relu(out, x, n)
}

func (c *call) Gather(out, x cuda.DevPtr, idx devIndex, n, rows, cols int) error {
	return c.b.Gather(out, x, idx.idx, idx.w, n, rows, cols)
}

// ScatterAdd adds into out where a fill step filled it (Step.Prefilled).
func (c *call) ScatterAdd(out, x cuda.DevPtr, idx devIndex, m, rows, cols int) error {
	if c.st.Prefilled {
		return c.b.ScatterAddInto(out, x, idx.idx, idx.w, m, rows, cols)
	}
	return c.b.ScatterAdd(out, x, idx.idx, idx.w, m, rows, cols)
}

func (c *call) SegmentSoftmax(out, s cuda.DevPtr, seg devIndex, m, h, nodes int) error {
	return c.b.SegmentSoftmax(out, s, seg.idx, m, h, nodes)
}

func (c *call) SegmentSoftmaxGrad(dx, y, dy cuda.DevPtr, seg devIndex, m, h, nodes int) error {
	return c.b.SegmentSoftmaxBackward(dx, y, dy, seg.idx, m, h, nodes)
}

// EdgeSum adds the biases folded into it (Step.Bias) to its operands first, and takes the
// statistics of a batch norm folded into it (Step.Stats) in training.
func (c *call) EdgeSum(out, e, hs, ht cuda.DevPtr, src, dst devIndex, m, rows, d int) error {
	bf := c.pr.Plan.Vals[c.st.Outs[0]].BF16
	gate := c.gate()
	if st, ok := c.stats(); ok {
		return c.b.EdgeSumBiasedStats(out, e, c.bias(0), hs, c.bias(1), ht, c.bias(2), src.idx, dst.idx, m, rows, d, bf, gate, st)
	}
	return c.b.EdgeSumBiased(out, e, c.bias(0), hs, c.bias(1), ht, c.bias(2), src.idx, dst.idx, m, rows, d, bf, gate)
}

// gate returns the buffers of the gated aggregation folded into the step (Step.Gate), nil for
// none.
func (c *call) gate() *cuda.EdgeGate {
	f := c.st.Gate
	if f == nil {
		return nil
	}
	g := &cuda.EdgeGate{Bh: c.e.Ptr(c.pr, f.Bh), Out: c.e.Ptr(c.pr, f.Out), Den: c.e.Ptr(c.pr, f.Den), NBh: f.NBh, Nodes: f.Nodes}
	if f.BhBias >= 0 {
		g.BhBias = c.e.Ptr(c.pr, f.BhBias)
	}
	return g
}

// EdgeSumGrad is the scatter-adds of g along src and along dst, in one pass (into buffers a
// fill step filled: Step.Prefilled).
func (c *call) EdgeSumGrad(dsrc, ddst, g cuda.DevPtr, src, dst devIndex, m, rows, d int) error {
	if c.st.Prefilled {
		return c.b.EdgeSumBackwardInto(dsrc, ddst, g, src.idx, dst.idx, m, rows, d)
	}
	return c.b.EdgeSumBackward(dsrc, ddst, g, src.idx, dst.idx, m, rows, d)
}

// SegmentMax keeps the arg-max in aux 0 for the gradient.
func (c *call) SegmentMax(out, x cuda.DevPtr, seg devIndex, m, d, nodes int) error {
	return c.b.SegmentMax(out, c.aux(0), x, seg.idx, m, d, nodes)
}

func (c *call) SegmentMaxGrad(dx, g cuda.DevPtr, seg devIndex, m, d, nodes int) error {
	return c.b.SegmentMaxBackward(dx, g, c.aux(0), seg.idx, m, d, nodes)
}

// BatchNorm keeps the mean and 1/σ in aux 0 and 1 (not x̂: the gradient recomputes it from x,
// which it reads); BatchNormRelu adds a ReLU and the residual in the same pass.
func (c *call) BatchNorm(out, x, gamma, beta, res, keep cuda.DevPtr, rows, d int, training, relu bool) error {
	s := c.pr.bn[c.st.Node.State]
	b := cuda.BatchNormBufs{X: x, Gamma: gamma, Beta: beta, Keep: keep, RunMean: s.Mean, RunVar: s.Var,
		Out: out, Mean: c.aux(0), InvStd: c.aux(1), Res: res, StatsDone: c.st.StatsDone, XBF16: c.firstBF16()}
	if relu {
		return c.b.BatchNormRelu(b, rows, d, training)
	}
	return c.b.BatchNorm(b, rows, d, training)
}

// BatchNormGrad takes the ReLU's gradient inside the backward kernels for relu, and recomputes
// x̂ from the forward pass's input x.
func (c *call) BatchNormGrad(dx, dgamma, dbeta, x, gamma, beta, dy, keep cuda.DevPtr, rows, d int, training, relu bool) error {
	b := cuda.BatchNormBufs{X: x, Gamma: gamma, Beta: beta, Keep: keep, Mean: c.aux(0), InvStd: c.aux(1), XBF16: c.firstBF16()}
	if c.st.SumsOnly { // member 0 is the column sums for the gated gradient that computes dx (Step.BN)
		b.Tot, dx = dx, 0
	}
	if relu {
		return c.b.BatchNormReluBackward(dx, dgamma, dbeta, dy, b, rows, d, training)
	}
	return c.b.BatchNormBackward(dx, dgamma, dbeta, dy, b, rows, d, training)
}

// LayerNorm keeps x̂ and 1/σ in aux 0 and 1.
func (c *call) LayerNorm(out, x, gamma, beta, keep cuda.DevPtr, rows, d int) error {
	return c.b.LayerNorm(cuda.LayerNormBufs{X: x, Gamma: gamma, Beta: beta, Keep: keep, Out: out,
		Xhat: c.aux(0), InvStd: c.aux(1)}, rows, d)
}

func (c *call) LayerNormGrad(dx, dgamma, dbeta, gamma, dy, keep cuda.DevPtr, rows, d int) error {
	return c.b.LayerNormBackward(dx, dgamma, dbeta, dy, cuda.LayerNormBufs{Gamma: gamma, Keep: keep,
		Xhat: c.aux(0), InvStd: c.aux(1)}, rows, d)
}

// GatedAggregate keeps the denominators in aux 0 and adds Bh's folded bias (Step.Bias).
func (c *call) GatedAggregate(out, ehat, bh cuda.DevPtr, src, dst devIndex, m, nbh, nodes, d int) error {
	return c.b.GatedAggregate(cuda.GatedBufs{Ehat: ehat, Bh: bh, BhBias: c.bias(1), Src: src.idx, Dst: dst.idx, Out: out, Den: c.aux(0),
		Prefilled: c.st.Prefilled, Raw: c.st.Raw, EhatBF16: c.firstBF16()}, m, nbh, nodes, d)
}

// GatedAggregateGrad adds Bh's folded bias, adds dê into its buffer in a step that folds a
// gradient sum (Step.Acc), and scatters dê into the edge sum's gradients in a step that folds
// them (Step.Scatter: members 2 and 3).
func (c *call) GatedAggregateGrad(dehat, dbh, ehat, bh, out, g cuda.DevPtr, src, dst devIndex, m, nbh, nodes, d int) error {
	b := cuda.GatedBufs{Ehat: ehat, Bh: bh, BhBias: c.bias(1), Src: src.idx, Dst: dst.idx,
		Out: out, Den: c.aux(0), AccDe: c.st.Acc, Prefilled: c.st.Prefilled, Raw: c.st.Raw, EhatBF16: c.firstBF16()}
	if c.st.Scatter {
		b.DSrc, b.DDst, b.SRows = c.Out(2), c.Out(3), c.OutElems(2)/d
	}
	if f := c.st.BN; f != nil {
		p := func(v int) cuda.DevPtr { return c.e.Ptr(c.pr, v) }
		b.BN = &cuda.GatedBN{Dy: p(f.Dy), Training: c.pr.Feed.Training(f.State), Relu: f.Relu,
			B: cuda.BatchNormBufs{X: p(f.X), Gamma: p(f.Gamma), Beta: p(f.Beta), Keep: c.Mask(f.Mask), Mean: p(f.Mean), InvStd: p(f.InvStd), Tot: p(f.Tot),
				XBF16: c.pr.Plan.Vals[f.X].BF16}}
	}
	return c.b.GatedAggregateBackward(dehat, dbh, g, b, m, nbh, nodes, d)
}

func (c *call) GaussianWeights(w, u, mu, is cuda.DevPtr, m, k, p int) error {
	return c.b.GaussianWeights(w, u, mu, is, m, k, p)
}

func (c *call) GaussianWeightsGrad(du, dmu, dis, u, mu, is, w, g cuda.DevPtr, m, k, p int) error {
	return c.b.GaussianWeightsBackward(du, dmu, dis, u, mu, is, w, g, m, k, p)
}

func (c *call) KernelMix(out, x, w cuda.DevPtr, m, k, d int) error {
	return c.b.KernelMix(out, x, w, m, k, d)
}

// KernelMixGrad computes the gradients the step needs in one call: dx, dw or both (dw is 0 when
// the weights are an input, as PNA's degree scalers are).
func (c *call) KernelMixGrad(dx, dw, x, w, g cuda.DevPtr, m, k, d int) error {
	return c.b.KernelMixBackward(dx, dw, x, w, g, m, k, d)
}

func (c *call) HeadDot(out, q, k cuda.DevPtr, m, h, d int) error {
	return c.b.HeadDot(out, q, k, m, h, d)
}
func (c *call) HeadScale(out, x, w cuda.DevPtr, m, h, d int) error {
	return c.b.HeadScale(out, x, w, m, h, d)
}

// MatMul adds a fused bias in place after the product (the device's plan fuses none today).
func (c *call) MatMul(out, x, w, bias cuda.DevPtr, m, a, b int) error {
	if err := c.b.MatMul(out, x, w, m, a, b); err != nil || bias == 0 {
		return err
	}
	return c.b.AddBias(out, out, bias, m, b)
}

// MatMulGrad adds dx into its output buffer in a step that folds a gradient sum (Step.Acc).
func (c *call) MatMulGrad(dx, dw, x, w, g cuda.DevPtr, m, a, b int) error {
	if c.st.Acc {
		if dw != 0 {
			return fmt.Errorf("gpu: an accumulating product step computes dx only")
		}
		return c.b.MatMulAddGradX(dx, w, g, m, a, b)
	}
	return c.b.MatMulBackward(dx, dw, x, w, g, m, a, b)
}

func (c *call) AddBias(out, x, bias cuda.DevPtr, rows, d int) error {
	return c.b.AddBias(out, x, bias, rows, d)
}
func (c *call) ColSum(out, x cuda.DevPtr, rows, d int) error { return c.b.ColSum(out, x, rows, d) }

// Dropout launches with the node's own seed; the kernel adds the step's part from the step
// scalars on the device (Exec.SetStep), so a replayed step draws that step's masks.
func (c *call) Dropout(out, x cuda.DevPtr, n int, rate float64, seed uint64) error {
	if c.e.scal == 0 {
		return fmt.Errorf("gpu: dropout before the step's scalars were set (Exec.SetStep)")
	}
	return c.b.Dropout(out, x, n, rate, seed^c.e.mix, c.e.scal)
}
func (c *call) Copy(out, x cuda.DevPtr, n int) error { return c.b.Copy(out, x, n) }

func (c *call) MaskedL1(out, p, y, w cuda.DevPtr, n int) error { return c.b.MaskedL1(out, p, y, w, n) }
func (c *call) MaskedL1Grad(dp, p, y, w, g cuda.DevPtr, n int) error {
	return c.b.MaskedL1Backward(dp, p, y, w, g, n)
}

func (c *call) MaskedBCE(out, z, y, w cuda.DevPtr, n int) error {
	return c.b.MaskedBCE(out, z, y, w, n)
}
func (c *call) MaskedBCEGrad(dz, z, y, w, g cuda.DevPtr, n int) error {
	return c.b.MaskedBCEBackward(dz, z, y, w, g, n)
}

func (c *call) WeightedCE(out, z cuda.DevPtr, labels devIndex, rows, classes int) error {
	return c.b.WeightedCE(out, z, labels.idx, labels.w, rows, classes)
}

func (c *call) WeightedCEGrad(dz, z, g cuda.DevPtr, labels devIndex, rows, classes int) error {
	return c.b.WeightedCEBackward(dz, z, labels.idx, labels.w, g, rows, classes)
}

// Runs reports whether the executor has a launch for op o (the dispatch table's ops).
func Runs(o prog.Op) bool { return dispatch.Runs(o) }

// Kinds lists every op the executor runs.
func Kinds() []prog.Op { return dispatch.Kinds() }
