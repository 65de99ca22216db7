package gpuexec

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/cuda"
	"github.com/rewiregnn/rewiregnn/prog"
)

// call is one step being launched: what a launch function reads its buffers and sizes from.
type call struct {
	e  *Exec
	b  Backend
	pr *Program
	st *Step
	in []int // the primary member's inputs
}

func (c *call) p(i int) cuda.DevPtr   { return c.e.Ptr(c.pr, c.in[i]) }
func (c *call) o(w int) cuda.DevPtr   { return c.e.Ptr(c.pr, c.st.Outs[w]) }
func (c *call) out() cuda.DevPtr      { return c.o(0) }
func (c *call) aux(i int) cuda.DevPtr { return c.e.Ptr(c.pr, c.st.Aux[i]) }
func (c *call) rc(i int) (int, int)   { return c.pr.Plan.Shape(c.in[i]) }
func (c *call) n() int                { return c.pr.Plan.Vals[c.st.Outs[0]].Elems }
func (c *call) nd() *prog.Node        { return &c.st.Node }

// index returns the device entries and weights of index input ix (0 where it has none).
func (c *call) index(ix int) (cuda.DevPtr, cuda.DevPtr) { return c.pr.idx[ix], c.pr.idxW[ix] }
func (c *call) mask() cuda.DevPtr                       { return c.pr.mask[c.nd().Mask] }

// launches is the dispatch table: one launch function per op the device runs. A program with
// an op missing here fails at its first run (gpu.TestEveryModelOpHasAKernel catches it before).
var launches = map[prog.Op]func(c *call) error{
	prog.Gather: func(c *call) error {
		rows, cols := c.rc(0)
		idx, w := c.index(c.nd().Index)
		return c.b.Gather(c.out(), c.p(0), idx, w, c.pr.Plan.Prog.Indexes[c.nd().Index].Len, rows, cols)
	},
	prog.ScatterAdd: func(c *call) error {
		m, cols := c.rc(0)
		idx, w := c.index(c.nd().Index)
		return c.b.ScatterAdd(c.out(), c.p(0), idx, w, m, c.nd().Rows, cols)
	},
	prog.SegmentSoftmax: func(c *call) error {
		m, h := c.rc(0)
		idx, _ := c.index(c.nd().Index)
		return c.b.SegmentSoftmax(c.out(), c.p(0), idx, m, h, c.nd().Rows)
	},
	prog.SegmentSoftmaxGrad: func(c *call) error { // (y, dy)
		m, h := c.rc(0)
		idx, _ := c.index(c.nd().Index)
		return c.b.SegmentSoftmaxBackward(c.out(), c.p(0), c.p(1), idx, m, h, c.nd().Rows)
	},
	prog.SegmentMax: func(c *call) error { // (x [M, d]) → [nodes, d], the arg-max in aux
		m, d := c.rc(0)
		idx, _ := c.index(c.nd().Index)
		return c.b.SegmentMax(c.out(), c.aux(0), c.p(0), idx, m, d, c.nd().Rows)
	},
	prog.SegmentMaxGrad: func(c *call) error { // (g [nodes, d]) → dx [M, d]
		_, d := c.rc(0)
		idx, _ := c.index(c.nd().Index)
		return c.b.SegmentMaxBackward(c.out(), c.p(0), c.aux(0), idx, c.pr.Plan.Prog.Indexes[c.nd().Index].Len, d, c.nd().Rows)
	},
	prog.BatchNorm:         batchNorm,
	prog.BatchNormRelu:     batchNorm,
	prog.BatchNormGrad:     batchNormGrad,
	prog.BatchNormReluGrad: batchNormGrad,
	prog.LayerNorm: func(c *call) error { // (x, γ, β)
		rows, cols := c.rc(0)
		return c.b.LayerNorm(cuda.LayerNormBufs{X: c.p(0), Gamma: c.p(1), Beta: c.p(2), Keep: c.mask(), Out: c.out(),
			Xhat: c.aux(0), InvStd: c.aux(1)}, rows, cols)
	},
	prog.LayerNormGrad: func(c *call) error { // (γ, dy) → dx, dγ, dβ
		rows, cols := c.rc(1)
		return c.b.LayerNormBackward(c.o(0), c.o(1), c.o(2), c.p(1), cuda.LayerNormBufs{Gamma: c.p(0), Keep: c.mask(),
			Xhat: c.aux(0), InvStd: c.aux(1)}, rows, cols)
	},
	prog.GatedAggregate: func(c *call) error { // (ê, bh)
		m, cols := c.rc(0)
		nbh, _ := c.rc(1)
		src, _ := c.index(c.nd().Src)
		dst, _ := c.index(c.nd().Dst)
		return c.b.GatedAggregate(cuda.GatedBufs{Ehat: c.p(0), Bh: c.p(1), Src: src, Dst: dst, Out: c.out(), Den: c.aux(0)}, m, nbh, c.nd().Rows, cols)
	},
	prog.GatedAggregateGrad: func(c *call) error { // (ê, bh, out, g) → dê, dbh
		m, _ := c.rc(0)
		nbh, cols := c.rc(1)
		src, _ := c.index(c.nd().Src)
		dst, _ := c.index(c.nd().Dst)
		return c.b.GatedAggregateBackward(c.o(0), c.o(1), c.p(3), cuda.GatedBufs{Ehat: c.p(0), Bh: c.p(1), Src: src, Dst: dst,
			Out: c.p(2), Den: c.aux(0)}, m, nbh, c.nd().Rows, cols)
	},
	prog.EdgeSum: func(c *call) error { // (e, hs, ht)
		m, cols := c.rc(0)
		rows, _ := c.rc(1)
		if r2, _ := c.rc(2); r2 != rows {
			return fmt.Errorf("edge sum: hs has %d rows, ht %d", rows, r2)
		}
		src, _ := c.index(c.nd().Src)
		dst, _ := c.index(c.nd().Dst)
		return c.b.EdgeSum(c.out(), c.p(0), c.p(1), c.p(2), src, dst, m, rows, cols)
	},
	prog.EdgeSumGrad: func(c *call) error { // (g) → g summed along src, along dst
		m, cols := c.rc(0)
		src, _ := c.index(c.nd().Src)
		dst, _ := c.index(c.nd().Dst)
		if err := c.b.ScatterAdd(c.o(0), c.p(0), src, 0, m, c.nd().Rows, cols); err != nil {
			return err
		}
		return c.b.ScatterAdd(c.o(1), c.p(0), dst, 0, m, c.nd().Rows, cols)
	},
	prog.GaussianWeights: func(c *call) error { // (u, μ, 1/σ)
		m, pd := c.rc(0)
		kk, _ := c.rc(1)
		return c.b.GaussianWeights(c.out(), c.p(0), c.p(1), c.p(2), m, kk, pd)
	},
	prog.GaussianWeightsGrad: func(c *call) error { // (u, μ, 1/σ, w, g) → du, dμ, d(1/σ)
		m, pd := c.rc(0)
		kk, _ := c.rc(1)
		return c.b.GaussianWeightsBackward(c.o(0), c.o(1), c.o(2), c.p(0), c.p(1), c.p(2), c.p(3), c.p(4), m, kk, pd)
	},
	prog.KernelMix: func(c *call) error { // (x [M, K·d], w [M, K])
		m, kk := c.rc(1)
		_, cols := c.pr.Plan.Shape(c.st.Outs[0])
		return c.b.KernelMix(c.out(), c.p(0), c.p(1), m, kk, cols)
	},
	prog.KernelMixGradX: func(c *call) error { // both gradients: X (g, w), W (x, g, w) → dx, dw
		gx, gw := c.st.Ins[0], c.st.Ins[1]
		if gx == nil || gw == nil {
			return fmt.Errorf("kernel mix gradient: both gradients are needed together")
		}
		m, kk := c.pr.Plan.Shape(gx[1])
		_, cols := c.pr.Plan.Shape(gx[0])
		ptr := func(v int) cuda.DevPtr { return c.e.Ptr(c.pr, v) }
		return c.b.KernelMixBackward(c.o(0), c.o(1), ptr(gw[0]), ptr(gx[1]), ptr(gx[0]), m, kk, cols)
	},
	prog.HeadDot: func(c *call) error { // (q, k) [M, d]
		m, cols := c.rc(0)
		_, h := c.pr.Plan.Shape(c.st.Outs[0])
		return c.b.HeadDot(c.out(), c.p(0), c.p(1), m, h, cols)
	},
	prog.HeadScale: func(c *call) error { // (x [M, d], w [M, H])
		m, cols := c.rc(0)
		_, h := c.rc(1)
		return c.b.HeadScale(c.out(), c.p(0), c.p(1), m, h, cols)
	},
	prog.MatMul: func(c *call) error { // (x [M, a], w [a, b])
		m, a := c.rc(0)
		_, bb := c.rc(1)
		return c.b.MatMul(c.out(), c.p(0), c.p(1), m, a, bb)
	},
	prog.MatMulGradX: func(c *call) error { // (g [M, b], w [a, b]) → g·wᵀ
		m, bb := c.rc(0)
		a, _ := c.rc(1)
		return c.b.MatMulBackward(c.out(), 0, 0, c.p(1), c.p(0), m, a, bb)
	},
	prog.MatMulGradW: func(c *call) error { // (x [M, a], g [M, b]) → xᵀ·g
		m, a := c.rc(0)
		_, bb := c.rc(1)
		return c.b.MatMulBackward(0, c.out(), c.p(0), 0, c.p(1), m, a, bb)
	},
	prog.AddBias: func(c *call) error {
		rows, cols := c.rc(0)
		return c.b.AddBias(c.out(), c.p(0), c.p(1), rows, cols)
	},
	prog.ColSum: func(c *call) error {
		rows, cols := c.rc(0)
		return c.b.ColSum(c.out(), c.p(0), rows, cols)
	},
	prog.Add:     elementwise(cuda.ScalarAdd, Launchers.Add),
	prog.GradSum: elementwise(cuda.ScalarAdd, Launchers.Add),
	prog.Sub:     elementwise(cuda.ScalarSub, Launchers.Sub),
	prog.Mul:     elementwise(cuda.ScalarMul, Launchers.Mul),
	prog.Div:     elementwise(cuda.ScalarDiv, Launchers.Div),
	prog.Relu:    func(c *call) error { return c.b.Relu(c.out(), c.p(0), c.n()) },
	prog.ReluGrad: func(c *call) error { // (y, g)
		return c.b.ReluBackward(c.out(), c.p(0), c.p(1), c.n())
	},
	prog.Tanh:        func(c *call) error { return c.b.Tanh(c.out(), c.p(0), c.n()) },
	prog.Sigmoid:     func(c *call) error { return c.b.Sigmoid(c.out(), c.p(0), c.n()) },
	prog.Exp:         func(c *call) error { return c.b.Exp(c.out(), c.p(0), c.n()) },
	prog.Abs:         func(c *call) error { return c.b.Abs(c.out(), c.p(0), c.n()) },
	prog.Dropout:     dropout,
	prog.DropoutGrad: dropout,
	prog.MaskedL1: func(c *call) error { // (pred, y, w)
		return c.b.MaskedL1(c.out(), c.p(0), c.p(1), c.p(2), c.pr.Plan.Vals[c.in[0]].Elems)
	},
	prog.MaskedL1Grad: func(c *call) error { // (pred, y, w, g)
		return c.b.MaskedL1Backward(c.out(), c.p(0), c.p(1), c.p(2), c.p(3), c.n())
	},
	prog.WeightedCE: func(c *call) error { // (z)
		r, cl := c.rc(0)
		idx, w := c.index(c.nd().Index)
		return c.b.WeightedCE(c.out(), c.p(0), idx, w, r, cl)
	},
	prog.WeightedCEGrad: func(c *call) error { // (z, g)
		r, cl := c.rc(0)
		idx, w := c.index(c.nd().Index)
		return c.b.WeightedCEBackward(c.out(), c.p(0), idx, w, c.p(1), r, cl)
	},
}

// batchNorm runs a batch norm, with a ReLU and a residual for BatchNormRelu: (x, γ, β) or
// (x, γ, β, res).
func batchNorm(c *call) error {
	rows, cols := c.rc(0)
	nd := c.nd()
	training := c.pr.Feed.Training(nd.State)
	if training {
		if err := prog.CheckBatchRows(c.pr.Feed.Mask(nd.Mask)); err != nil {
			return fmt.Errorf("batch norm %q: %w", c.pr.Plan.Prog.States[nd.State].Name, err)
		}
	}
	s := c.pr.bn[nd.State]
	out, n := c.out(), c.n()
	if err := c.b.BatchNorm(cuda.BatchNormBufs{X: c.p(0), Gamma: c.p(1), Beta: c.p(2), Keep: c.mask(),
		RunMean: s.Mean, RunVar: s.Var, Out: out, Xhat: c.aux(0), Mean: c.aux(1), InvStd: c.aux(2)}, rows, cols, training); err != nil {
		return err
	}
	if c.st.Kind == prog.BatchNorm {
		return nil
	}
	if err := c.b.Relu(out, out, n); err != nil { // in place: element by element
		return err
	}
	if len(c.in) == 4 {
		return c.b.Add(out, out, c.p(3), n)
	}
	return nil
}

// batchNormGrad runs a batch norm's gradients (through the ReLU for BatchNormReluGrad): (x, γ,
// β, dy) → dx, dγ, dβ.
func batchNormGrad(c *call) error {
	rows, cols := c.rc(3)
	dy := c.p(3)
	if c.st.Kind == prog.BatchNormReluGrad {
		dy = c.e.Ptr(c.pr, c.st.Tmp[0])
		if err := c.b.BatchNormReluMask(dy, c.p(3), c.aux(0), c.p(1), c.p(2), rows, cols); err != nil {
			return err
		}
	}
	return c.b.BatchNormBackward(c.o(0), c.o(1), c.o(2), dy, cuda.BatchNormBufs{Gamma: c.p(1), Keep: c.mask(),
		Xhat: c.aux(0), Mean: c.aux(1), InvStd: c.aux(2)}, rows, cols, c.pr.Feed.Training(c.nd().State))
}

// dropout applies the step's mask (forward and backward alike), or copies outside training.
func dropout(c *call) error {
	nd := c.nd()
	if !c.pr.Feed.Training(nd.State) || nd.Rate == 0 {
		return c.b.Copy(c.out(), c.p(0), c.n())
	}
	return c.b.Dropout(c.out(), c.p(0), c.n(), nd.Rate, c.pr.Feed.DropSeed(nd.State))
}

// elementwise runs a binary element-wise op: same (the launcher for equal shapes) or, with a
// scalar operand, ScalarOp with code op.
func elementwise(op int, same func(Launchers, cuda.DevPtr, cuda.DevPtr, cuda.DevPtr, int) error) func(c *call) error {
	return func(c *call) error {
		out, n := c.out(), c.n()
		switch ea, eb := c.pr.Plan.Vals[c.in[0]].Elems, c.pr.Plan.Vals[c.in[1]].Elems; {
		case ea == eb:
			return same(c.b, out, c.p(0), c.p(1), n)
		case eb == 1:
			return c.b.ScalarOp(out, c.p(0), c.p(1), n, op, false)
		case ea == 1:
			return c.b.ScalarOp(out, c.p(1), c.p(0), n, op, true)
		default:
			return fmt.Errorf("operands of %d and %d elements", ea, eb)
		}
	}
}

// Runs reports whether the executor has a launch function for op o.
func Runs(o prog.Op) bool { return launches[o] != nil }

// Kinds lists every op the executor runs.
func Kinds() []prog.Op {
	var out []prog.Op
	for _, o := range prog.Ops() {
		if launches[o] != nil {
			out = append(out, o)
		}
	}
	return out
}
