package cpuexec

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/dispatch"
	"github.com/rewiregnn/rewiregnn/kern"
	"github.com/rewiregnn/rewiregnn/prog"
)

// The CPU's kernels: *call[T] implements dispatch.Kernels over slices of T. Each method
// computes what the CPU op of package ops (or Gorgonia's operator) it replaces computes, bit
// for bit: the same kern function on the same arguments. What a forward op keeps for its
// gradient ops (statistics, grouped edges, arg-maxes) lives in its group's state (kept); a
// gradient sum the compiler folded into an op is its step's summand, a bias gradient computed
// in a product's pass its ColSum (the CPU's policies, docs/design.md).

var (
	table32 = dispatch.New[[]float32, index, []bool]()
	table64 = dispatch.New[[]float64, index, []bool]()
)

var (
	_ dispatch.Backend[[]float32, index, []bool] = (*call[float32])(nil)
	_ dispatch.Backend[[]float64, index, []bool] = (*call[float64])(nil)
)

func (c *call[T]) Add(out, a, b []T, _ int) error { kern.Binary(kern.OpAdd, out, a, b); return nil }
func (c *call[T]) Sub(out, a, b []T, _ int) error { kern.Binary(kern.OpSub, out, a, b); return nil }
func (c *call[T]) Mul(out, a, b []T, _ int) error { kern.Binary(kern.OpMul, out, a, b); return nil }
func (c *call[T]) Div(out, a, b []T, _ int) error { kern.Binary(kern.OpDiv, out, a, b); return nil }

// Scalar is Gorgonia's operator with a scalar operand (kern.BinaryScalarRight, Left).
func (c *call[T]) Scalar(op prog.Op, out, x, s []T, _ int, left bool) error {
	kop, err := binaryOp(op)
	if err != nil {
		return err
	}
	if left {
		kern.BinaryScalarLeft(kop, out, s[0], x)
	} else {
		kern.BinaryScalarRight(kop, out, x, s[0])
	}
	return nil
}

// Scalars is Gorgonia's operator on two scalar values: IEEE arithmetic in T (division by zero
// included).
func (c *call[T]) Scalars(op prog.Op, out, a, b []T) error {
	switch op {
	case prog.Add:
		out[0] = a[0] + b[0]
	case prog.Sub:
		out[0] = a[0] - b[0]
	case prog.Mul:
		out[0] = a[0] * b[0]
	case prog.Div:
		out[0] = a[0] / b[0]
	default:
		return fmt.Errorf("%s of two scalars", op)
	}
	return nil
}

// binaryOp is kern's code of element-wise op o.
func binaryOp(o prog.Op) (kern.BinaryOp, error) {
	switch o {
	case prog.Add:
		return kern.OpAdd, nil
	case prog.Sub:
		return kern.OpSub, nil
	case prog.Mul:
		return kern.OpMul, nil
	case prog.Div:
		return kern.OpDiv, nil
	}
	return 0, fmt.Errorf("%s is not element-wise", o)
}

// GradSum sums its terms in order: ((t0 + t1) + t2) + …, a block at a time (sumTerms).
func (c *call[T]) GradSum(out []T, terms [][]T, _ int) error { sumTerms(out, terms); return nil }

// unary is one of Gorgonia's unary operators: on a tensor kern.Unary, on a scalar value
// kern.UnaryScalar (Gorgonia's per-value functions).
func unary[T kern.Float](op kern.UnaryOp, out, x []T, scalar bool) error {
	if scalar {
		out[0] = kern.UnaryScalar(op, x[0])
		return nil
	}
	kern.Unary(op, out, x)
	return nil
}

func (c *call[T]) Gather(out, x []T, idx index, _, _, cols int) error {
	kern.GatherRows(out, x, cols, idx.idx, idx.w)
	return nil
}

func (c *call[T]) ScatterAdd(out, x []T, idx index, _, _, cols int) error {
	kern.ScatterAddRows(out, x, cols, idx.idx, idx.w)
	return nil
}

func (c *call[T]) SegmentSoftmax(out, s []T, seg index, _, h, nodes int) error {
	kern.SegmentSoftmaxRows(out, s, h, seg.idx, c.acc(nodes*h))
	return nil
}

func (c *call[T]) SegmentSoftmaxGrad(dx, y, dy []T, seg index, _, h, nodes int) error {
	kern.SegmentSoftmaxGradRows(dx, y, dy, h, seg.idx, c.acc(nodes*h))
	return nil
}

func (c *call[T]) Dropout(out, x []T, _ int, rate float64, seed uint64) error {
	kern.Dropout(out, x, len(out), rate, seed)
	return nil
}

func (c *call[T]) Copy(out, x []T, _ int) error { copy(out, x); return nil }

func (c *call[T]) GaussianWeights(w, u, mu, is []T, m, k, p int) error {
	kern.GaussianWeights(w, u, mu, is, m, k, p)
	return nil
}

func (c *call[T]) GaussianWeightsGrad(du, dmu, dis, u, mu, is, w, g []T, m, k, p int) error {
	kern.GaussianWeightsBackward(du, dmu, dis, u, mu, is, w, g, m, k, p)
	return nil
}

func (c *call[T]) KernelMix(out, x, w []T, m, k, d int) error {
	kern.KernelMix(out, x, w, m, k, d)
	return nil
}

// KernelMixGrad computes each gradient as its own call, as ops does.
func (c *call[T]) KernelMixGrad(dx, dw, x, w, g []T, m, k, d int) error {
	if dx != nil {
		kern.KernelMixBackward(dx, nil, nil, w, g, m, k, d)
	}
	if dw != nil {
		kern.KernelMixBackward(nil, dw, x, nil, g, m, k, d)
	}
	return nil
}

func (c *call[T]) HeadDot(out, q, k []T, m, h, d int) error {
	kern.HeadDot(out, q, k, m, h, d)
	return nil
}

func (c *call[T]) HeadScale(out, x, w []T, m, h, d int) error {
	kern.HeadScale(out, x, w, m, h, d)
	return nil
}

// MatMul is x·w, plus a bias row where the compiler fused an AddBias.
func (c *call[T]) MatMul(out, x, w, bias []T, m, a, b int) error {
	kern.MatMulNN(out, x, w, bias, m, a, b)
	return nil
}

// MatMulGrad is a product's gradient pass (ops' linGradKernel): dx = g·wᵀ (+ the summand), dw
// = xᵀ·g, either absent, and the column sums of g into the step's ColSum vector if any; one
// pass over g (kern.LinearGrad32) in float32 where it applies, else MatMulNT, MatMulTN and
// ColSum.
func (c *call[T]) MatMulGrad(dx, dw, x, w, g []T, m, a, b int) error {
	db, sum := c.colSum(), c.summand()
	if dx == nil && sum != nil {
		return fmt.Errorf("product gradient: a summand without dx")
	}
	if db != nil {
		db = db[:b]
	}
	if sum != nil {
		sum = sum[:m*a]
	}
	kern.ProductGrads(c.scratch(), dx, dw, db, x, w, g, sum, m, a, b)
	return nil
}

func (c *call[T]) AddBias(out, x, bias []T, _, _ int) error { kern.AddBias(out, x, bias); return nil }
func (c *call[T]) ColSum(out, x []T, _, _ int) error        { kern.ColSum(out, x); return nil }

func (c *call[T]) MaskedL1(out, p, y, w []T, n int) error {
	kern.MaskedL1(out, p, y, w, n)
	return nil
}

func (c *call[T]) MaskedL1Grad(dp, p, y, w, g []T, n int) error {
	kern.MaskedL1Backward(dp, p, y, w, float64(g[0]), n)
	return nil
}

func (c *call[T]) MaskedBCE(out, p, y, w []T, n int) error {
	kern.MaskedBCE(out, p, y, w, n)
	return nil
}

func (c *call[T]) MaskedBCEGrad(dp, p, y, w, g []T, n int) error {
	kern.MaskedBCEBackward(dp, p, y, w, float64(g[0]), n)
	return nil
}

func (c *call[T]) WeightedCE(out, z []T, labels index, rows, classes int) error {
	kern.WeightedCE(out, z, labels.idx, labels.w, rows, classes)
	return nil
}

func (c *call[T]) WeightedCEGrad(dz, z, g []T, labels index, rows, classes int) error {
	kern.WeightedCEBackward(dz, z, labels.idx, labels.w, float64(g[0]), rows, classes)
	return nil
}

// bnState is what a batch norm keeps for its gradient pass (kern.BatchNormState), and the
// gradient pass's buffers for the members the step does not compute.
type bnState[T kern.Float] struct {
	kern.BatchNormState
	dx, grads []T
}

// BatchNorm: in training with the running statistics' momentum update, or (average > 0) their
// cumulative mean, none on a replay.
func (c *call[T]) BatchNorm(out, x, gamma, beta, res []T, keep []bool, rows, d int, training, relu bool) error {
	runMean, runVar, average := c.bn()
	if len(runMean) != d || len(runVar) != d {
		return fmt.Errorf("batch norm %q: input [%d, %d], %d features", c.stateName(), rows, d, len(runMean))
	}
	o := kern.BNOpts{Eps: kern.BNEps, Momentum: kern.BNMomentum, Replay: c.replay(), Relu: relu}
	if average > 0 {
		o.Average = average
	}
	kern.BatchNormForward(&kept[bnState[T], T](c).BatchNormState, kern.BatchNormBufs[T]{X: x, Gamma: gamma, Beta: beta,
		Res: res, Keep: keep, RunMean: runMean, RunVar: runVar, Out: out}, rows, d, training, o)
	return nil
}

// BatchNormGrad is the group pass: dx (plus the summand), dγ and dβ, those the step does not
// compute into the state's buffers.
func (c *call[T]) BatchNormGrad(dx, dgamma, dbeta, x, gamma, beta, dy []T, keep []bool, rows, d int, training, relu bool) error {
	st := kept[bnState[T], T](c)
	if len(st.Mean) != d || len(keep) != rows {
		return fmt.Errorf("batch norm gradient %q: no forward pass of shape [%d, %d] to differentiate", c.stateName(), rows, d)
	}
	if dx == nil {
		st.dx = kern.Grow[T](st.dx, rows*d)
		dx = st.dx
	}
	if dgamma == nil || dbeta == nil {
		st.grads = kern.Grow[T](st.grads, 2*d)
		if dgamma == nil {
			dgamma = st.grads[:d]
		}
		if dbeta == nil {
			dbeta = st.grads[d:]
		}
	}
	b := kern.BatchNormBufs[T]{X: x, Gamma: gamma, Beta: beta, Keep: keep}
	kern.BatchNormGrad(&st.BatchNormState, dx, dgamma, dbeta, dy, b, rows, d, training, relu, c.summand())
	return nil
}

func (c *call[T]) LayerNorm(out, x, gamma, beta []T, keep []bool, rows, d int) error {
	kern.LayerNormForward(kept[kern.LayerNormState, T](c), out, x, gamma, beta, keep, rows, d, kern.BNEps)
	return nil
}

func (c *call[T]) LayerNormGrad(dx, dgamma, dbeta, gamma, dy []T, keep []bool, rows, d int) error {
	st := kept[kern.LayerNormState, T](c)
	if err := st.Ready(rows, d); err != nil {
		return fmt.Errorf("layer norm gradient: %w", err)
	}
	kern.LayerNormGrad(st, dx, dgamma, dbeta, gamma, dy, keep, rows, d)
	return nil
}

// gatedState is what a gated aggregation keeps for its gradient pass (kern.GatedState), and
// the gradient pass's buffers for the members the step does not compute.
type gatedState[T kern.Float] struct {
	kern.GatedState
	de, dbh []T
}

// GatedAggregate keeps the denominators only in a training program (an evaluation program has
// no gradient to keep them for).
func (c *call[T]) GatedAggregate(out, ehat, bh []T, src, dst index, m, nbh, nodes, d int) error {
	st := kept[gatedState[T], T](c)
	b := kern.GatedBufs[T]{Ehat: ehat, Bh: bh, Src: src.idx, Dst: dst.idx, Out: out}
	if !c.r.P.Train {
		b.Den = c.tmp(nodes * d)
	}
	kern.GatedForward(&st.GatedState, b, c.r.P.Train, m, nbh, nodes, d)
	return nil
}

// GatedAggregateGrad is the group pass: dê (plus the summand) and dBh.
func (c *call[T]) GatedAggregateGrad(de, dbh, ehat, bh, out, g []T, src, dst index, m, nbh, nodes, d int) error {
	st := kept[gatedState[T], T](c)
	if err := kern.GatedReady[T](&st.GatedState, m, nodes, d); err != nil {
		return fmt.Errorf("gated aggregate gradient: %w", err)
	}
	if de == nil {
		st.de = kern.Grow[T](st.de, m*d)
		de = st.de
	}
	if dbh == nil {
		st.dbh = kern.Grow[T](st.dbh, nbh*d)
		dbh = st.dbh
	}
	b := kern.GatedBufs[T]{Ehat: ehat, Bh: bh, Src: src.idx, Dst: dst.idx, Out: out}
	kern.GatedGrad(&st.GatedState, de, dbh, g, b, m, nbh, nodes, d, c.summand())
	return nil
}

func (c *call[T]) EdgeSum(out, e, hs, ht []T, src, dst index, _, rows, d int) error {
	kern.EdgeSumForward(kept[kern.EdgeSumState, T](c), out, e, hs, ht, src.idx, dst.idx, rows, d)
	return nil
}

// EdgeSumGrad is the group pass: g summed along src and along dst (either absent).
func (c *call[T]) EdgeSumGrad(dsrc, ddst, g []T, _, _ index, m, rows, d int) error {
	st := kept[kern.EdgeSumState, T](c)
	if err := st.Ready(m, rows); err != nil {
		return fmt.Errorf("edge sum gradient: %w", err)
	}
	kern.EdgeSumGrad(st, dsrc, ddst, g, m, rows, d)
	return nil
}

func (c *call[T]) SegmentMax(out, x []T, seg index, _, d, nodes int) error {
	kern.SegmentMaxForward(kept[kern.SegmentMaxState, T](c), out, x, seg.idx, nodes, d)
	return nil
}

// SegmentMaxGrad puts g at each column's arg-max edge (kept by the forward).
func (c *call[T]) SegmentMaxGrad(dx, g []T, seg index, _, d, nodes int) error {
	st := kept[kern.SegmentMaxState, T](c)
	if err := st.Ready(d); err != nil || len(g) != nodes*d {
		return fmt.Errorf("segment max gradient: no forward pass of shape [%d, %d] to differentiate", nodes, d)
	}
	kern.SegmentMaxGrad(st, dx, g, seg.idx, d)
	return nil
}

// sumTerms sets out = ((t0 + t1) + t2) + … for n ≥ 2 terms of at least len(out) values, a block
// at a time so that the partial sums stay in cache.
func sumTerms[T kern.Float](out []T, terms [][]T) {
	const blk = 2048
	kern.ParallelRange((len(out)+blk-1)/blk, blk, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			a, z := b*blk, min((b+1)*blk, len(out))
			kern.Add2(out[a:z], terms[0][a:z], terms[1][a:z])
			for _, t := range terms[2:] {
				kern.AddTo(out[a:z], t[a:z])
			}
		}
	})
}
