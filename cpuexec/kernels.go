package cpuexec

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/kern"
	"github.com/rewiregnn/rewiregnn/prog"
)

// kernels returns the kernel table of element type T: one function per op the CPU runs. Each
// computes what the CPU op of package ops (or Gorgonia's operator) it replaces computes, bit for
// bit: the same kern function on the same arguments. What a forward op keeps for its gradient
// ops (statistics, grouped edges, arg-maxes) lives in its group's state (kept).
func kernels[T kern.Float]() map[prog.Op]func(*call[T]) error {
	return map[prog.Op]func(*call[T]) error{
		prog.Add:     binary[T](kern.OpAdd),
		prog.Sub:     binary[T](kern.OpSub),
		prog.Mul:     binary[T](kern.OpMul),
		prog.Div:     binary[T](kern.OpDiv),
		prog.GradSum: gradSum[T],
		prog.Tanh:    unary[T](kern.OpTanh),
		prog.Sigmoid: unary[T](kern.OpSigmoid),
		prog.Exp:     unary[T](kern.OpExp),
		prog.Abs:     unary[T](kern.OpAbs),
		prog.Relu: func(c *call[T]) error { // ops.Relu
			out, x := c.res(0), c.arg(0)
			kern.ParallelRange(len(out), 1, func(lo, hi int) { kern.Relu(out[lo:hi], x[lo:hi]) })
			return nil
		},
		prog.ReluGrad: func(c *call[T]) error { // (y, g)
			out, y, g := c.res(0), c.arg(0), c.arg(1)
			kern.ParallelRange(len(out), 1, func(lo, hi int) { kern.ReluGrad(out[lo:hi], y[lo:hi], g[lo:hi]) })
			return nil
		},

		prog.Gather: func(c *call[T]) error { // (x)
			rows, cols := c.rc(0)
			idx, w, err := c.checked(c.nd().Index, rows)
			if err != nil {
				return err
			}
			kern.GatherRows(c.res(0), c.arg(0), cols, idx, w)
			return nil
		},
		prog.ScatterAdd: func(c *call[T]) error { // (x) → Rows rows
			m, cols := c.rc(0)
			idx, w, err := c.checked(c.nd().Index, c.nd().Rows)
			if err != nil {
				return err
			}
			if m != len(idx) {
				return fmt.Errorf("scatter-add: input has %d rows, index %d entries", m, len(idx))
			}
			kern.ScatterAddRows(c.res(0), c.arg(0), cols, idx, w)
			return nil
		},
		prog.SegmentSoftmax: func(c *call[T]) error { // (s [M, H])
			m, cols := c.rc(0)
			idx, _, err := c.checked(c.nd().Index, c.nd().Rows)
			if err != nil {
				return err
			}
			if m != len(idx) {
				return fmt.Errorf("segment softmax: %d score rows, index %d entries", m, len(idx))
			}
			kern.SegmentSoftmaxRows(c.res(0), c.arg(0), cols, idx, c.acc(c.nd().Rows*cols))
			return nil
		},
		prog.SegmentSoftmaxGrad: func(c *call[T]) error { // (y, dy)
			_, cols := c.rc(0)
			idx, _, err := c.checked(c.nd().Index, c.nd().Rows)
			if err != nil {
				return err
			}
			kern.SegmentSoftmaxGradRows(c.res(0), c.arg(0), c.arg(1), cols, idx, c.acc(c.nd().Rows*cols))
			return nil
		},
		prog.EdgeSum:     edgeSum[T],
		prog.EdgeSumGrad: edgeSumGrad[T],
		prog.SegmentMax:  segmentMax[T],
		prog.SegmentMaxGrad: func(c *call[T]) error { // (g [nodes, d]) → dx [M, d]
			rows, d := c.rc(0)
			st := kept[segMaxState, T](c)
			if rows != c.nd().Rows || !st.ran || st.d != d {
				return fmt.Errorf("segment max gradient: no forward pass of shape [%d, %d] to differentiate", rows, d)
			}
			idx, _ := c.index(c.nd().Index)
			kern.SegmentMaxGradRows(c.res(0), c.arg(0), st.arg, d, idx)
			return nil
		},

		prog.BatchNorm:         batchNorm[T],
		prog.BatchNormRelu:     batchNorm[T],
		prog.BatchNormGrad:     batchNormGrad[T],
		prog.BatchNormReluGrad: batchNormGrad[T],
		prog.LayerNorm: func(c *call[T]) error { // (x, γ, β)
			rows, cols := c.rc(0)
			keep := c.mask()
			if len(keep) != rows {
				return fmt.Errorf("layer norm: %d rows, mask has %d", rows, len(keep))
			}
			st := kept[lnState, T](c)
			st.xhat, st.invStd = resize(st.xhat, rows*cols), resize(st.invStd, rows)
			kern.LayerNorm(kern.LayerNormBufs[T]{X: c.arg(0), Gamma: c.arg(1), Beta: c.arg(2), Keep: keep, Out: c.res(0),
				Xhat: st.xhat, InvStd: st.invStd}, rows, cols, kern.BNEps)
			return nil
		},
		prog.LayerNormGrad: func(c *call[T]) error { // (γ, dy) → dx, dγ, dβ: those the step computes
			rows, d := c.rc(1)
			st := kept[lnState, T](c)
			if len(st.xhat) != rows*d || len(st.invStd) != rows {
				return fmt.Errorf("layer norm gradient: no forward pass of shape [%d, %d] to differentiate", rows, d)
			}
			kern.LayerNormBackward(c.res(0), c.res(1), c.res(2), c.arg(1), kern.LayerNormBufs[T]{Gamma: c.arg(0), Keep: c.mask(),
				Xhat: st.xhat, InvStd: st.invStd}, rows, d)
			return nil
		},

		prog.GatedAggregate:     gatedAggregate[T],
		prog.GatedAggregateGrad: gatedAggregateGrad[T],

		prog.GaussianWeights: func(c *call[T]) error { // (u [M, P], μ [K, P], 1/σ [K, P])
			m, p := c.rc(0)
			kk, _ := c.rc(1)
			kern.GaussianWeights(c.res(0), c.arg(0), c.arg(1), c.arg(2), m, kk, p)
			return nil
		},
		prog.GaussianWeightsGrad: func(c *call[T]) error { // (u, μ, 1/σ, w, g) → du, dμ, d(1/σ): those the step computes
			m, p := c.rc(0)
			kk, _ := c.rc(1)
			kern.GaussianWeightsBackward(c.res(0), c.res(1), c.res(2), c.arg(0), c.arg(1), c.arg(2), c.arg(3), c.arg(4), m, kk, p)
			return nil
		},
		prog.KernelMix: func(c *call[T]) error { // (x [M, K·d], w [M, K])
			_, xc := c.rc(0)
			m, kk := c.rc(1)
			kern.KernelMix(c.res(0), c.arg(0), c.arg(1), m, kk, xc/kk)
			return nil
		},
		prog.KernelMixGradX: kernelMixGrad[T],
		prog.KernelMixGradW: kernelMixGrad[T],

		prog.HeadDot: func(c *call[T]) error { // (q, k) [M, d] → [M, Heads]
			m, d := c.rc(0)
			kern.HeadDot(c.res(0), c.arg(0), c.arg(1), m, c.nd().Heads, d)
			return nil
		},
		prog.HeadScale: func(c *call[T]) error { // (x [M, d], w [M, H])
			m, d := c.rc(0)
			_, h := c.rc(1)
			kern.HeadScale(c.res(0), c.arg(0), c.arg(1), m, h, d)
			return nil
		},

		prog.MatMul:      matMul[T],
		prog.MatMulGradX: matMulGrad[T],
		prog.MatMulGradW: matMulGrad[T],
		prog.AddBias: func(c *call[T]) error { // (x [M, d], b [d])
			_, cols := c.rc(0)
			if n := c.elems(1); n != cols {
				return fmt.Errorf("add bias: bias has %d values for %d columns", n, cols)
			}
			kern.AddBias(c.res(0), c.arg(0), c.arg(1))
			return nil
		},
		prog.ColSum: func(c *call[T]) error { kern.ColSum(c.res(0), c.arg(0)); return nil },

		prog.Dropout:     dropout[T],
		prog.DropoutGrad: dropout[T],

		prog.MaskedL1: func(c *call[T]) error { // (pred, y, w) → scalar
			p := c.arg(0)
			kern.MaskedL1(c.res(0), p, c.arg(1), c.arg(2), len(p))
			return nil
		},
		prog.MaskedL1Grad: func(c *call[T]) error { // (pred, y, w, g scalar)
			dp := c.res(0)
			kern.MaskedL1Backward(dp, c.arg(0), c.arg(1), c.arg(2), float64(c.arg(3)[0]), len(dp))
			return nil
		},
		prog.WeightedCE: func(c *call[T]) error { // (z [R, C]) → scalar
			rows, cols := c.rc(0)
			labels, w, err := c.labels(rows, cols)
			if err != nil {
				return err
			}
			kern.WeightedCE(c.res(0), c.arg(0), labels, w, rows, cols)
			return nil
		},
		prog.WeightedCEGrad: func(c *call[T]) error { // (z, g scalar)
			rows, cols := c.rc(0)
			labels, w, err := c.labels(rows, cols)
			if err != nil {
				return err
			}
			kern.WeightedCEBackward(c.res(0), c.arg(0), labels, w, float64(c.arg(1)[0]), rows, cols)
			return nil
		},
	}
}

var (
	kernels32 = kernels[float32]()
	kernels64 = kernels[float64]()
)

// runsOp reports whether the CPU has a kernel for op o.
func runsOp(o prog.Op) bool { return kernels32[o] != nil }

// resize returns b if it holds n values, else a new slice of n (the statistics a forward op
// keeps; every value is written before it is read).
func resize(b []float64, n int) []float64 {
	if len(b) != n {
		return make([]float64, n)
	}
	return b
}

// binary is one of Gorgonia's binary operators (and ops.Add, the same sum): on two tensors of
// one shape, or with a scalar operand on either side (a value of nil shape), as Gorgonia's Do
// computes it (kern.Binary, BinaryScalarRight, BinaryScalarLeft); two scalars are plain
// arithmetic in T, as Gorgonia's scalar operator.
func binary[T kern.Float](op kern.BinaryOp) func(*call[T]) error {
	return func(c *call[T]) error {
		out, a, b := c.res(0), c.arg(0), c.arg(1)
		switch sa, sb := c.scalar(0), c.scalar(1); {
		case sa && sb:
			out[0] = scalarOp(op, a[0], b[0])
		case sb:
			kern.BinaryScalarRight(op, out, a, b[0])
		case sa:
			kern.BinaryScalarLeft(op, out, a[0], b)
		default:
			if len(a) != len(b) || len(out) != len(a) {
				return fmt.Errorf("%v of %d and %d values into %d", op, len(a), len(b), len(out))
			}
			kern.Binary(op, out, a, b)
		}
		return nil
	}
}

// scalarOp is Gorgonia's operator on two scalar values: IEEE arithmetic in T (division by zero
// included).
func scalarOp[T kern.Float](op kern.BinaryOp, a, b T) T {
	switch op {
	case kern.OpAdd:
		return a + b
	case kern.OpSub:
		return a - b
	case kern.OpMul:
		return a * b
	}
	return a / b
}

// unary is one of Gorgonia's unary operators: on a tensor kern.Unary, on a scalar value
// kern.UnaryScalar (Gorgonia's per-value functions).
func unary[T kern.Float](op kern.UnaryOp) func(*call[T]) error {
	return func(c *call[T]) error {
		out, x := c.res(0), c.arg(0)
		if c.scalar(0) {
			out[0] = kern.UnaryScalar(op, x[0])
			return nil
		}
		kern.Unary(op, out, x)
		return nil
	}
}

// gradSum sums its terms (Ins[0], n ≥ 2) in order: ((t0 + t1) + t2) + …, a block at a time
// (sumTerms).
func gradSum[T kern.Float](c *call[T]) error {
	in := c.st.Ins[0]
	if len(in) < 2 {
		return fmt.Errorf("gradient sum of %d terms", len(in))
	}
	terms := make([][]T, len(in))
	for i := range in {
		terms[i] = c.argOf(0, i)
	}
	sumTerms(c.res(0), terms)
	return nil
}

// matMul is x·w for x [M, a], w [a, b], plus a bias row b where the step fused an AddBias:
// (x, w) or (x, w, b).
func matMul[T kern.Float](c *call[T]) error {
	m, a := c.rc(0)
	_, b := c.rc(1)
	var bias []T
	if c.nin() > 2 {
		bias = c.arg(2)
	}
	kern.MatMulNN(c.res(0), c.arg(0), c.arg(1), bias, m, a, b)
	return nil
}

// matMulGrad is a product's gradient pass (ops' linGradKernel): member 0 dx = g·wᵀ (+ the
// summand) from (g, w), member 1 dw = xᵀ·g from (x, g), either absent, and the column sums of g
// into the step's ColSum vector if any; one pass over g (kern.LinearGrad32) in float32 where it
// applies, else MatMulNT, MatMulTN and ColSum.
func matMulGrad[T kern.Float](c *call[T]) error {
	if len(c.st.Ins) != 2 || len(c.st.Outs) != 2 {
		return fmt.Errorf("product gradient step of %d members, want 2 (dx, dw)", len(c.st.Ins))
	}
	var x, w, g []T
	var m, a, b int
	switch {
	case c.has(0): // (g [M, b], w [a, b])
		g, w = c.argOf(0, 0), c.argOf(0, 1)
		m, b = c.rcOf(0, 0)
		a, _ = c.rcOf(0, 1)
		if c.has(1) {
			x = c.argOf(1, 0)
		}
	case c.has(1): // (x [M, a], g [M, b])
		x, g = c.argOf(1, 0), c.argOf(1, 1)
		m, a = c.rcOf(1, 0)
		_, b = c.rcOf(1, 1)
	default:
		return fmt.Errorf("product gradient without members")
	}
	dx, dw, db, sum := c.res(0), c.res(1), c.colSum(), c.summand()
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

// kernelMixGrad computes a kernel mix's gradients, each as its own call, as ops does: dx from
// (g, w) for KernelMixGradX, dw from (x, g, w) for KernelMixGradW; a step of two members (as
// the device pairs them) has dx as member 0 and dw as member 1.
func kernelMixGrad[T kern.Float](c *call[T]) error {
	mx, mw := 0, -1
	switch {
	case len(c.st.Ins) == 2:
		mw = 1
	case c.st.Kind == prog.KernelMixGradW:
		mx, mw = -1, 0
	}
	if mx >= 0 && c.has(mx) && c.res(mx) != nil { // (g [M, d], w [M, K])
		m, d := c.rcOf(mx, 0)
		_, kk := c.rcOf(mx, 1)
		kern.KernelMixBackward(c.res(mx), nil, nil, c.argOf(mx, 1), c.argOf(mx, 0), m, kk, d)
	}
	if mw >= 0 && c.has(mw) && c.res(mw) != nil { // (x [M, K·d], g [M, d], w [M, K])
		m, _ := c.rcOf(mw, 0)
		_, d := c.rcOf(mw, 1)
		_, kk := c.rcOf(mw, 2)
		kern.KernelMixBackward(nil, c.res(mw), c.argOf(mw, 0), nil, c.argOf(mw, 1), m, kk, d)
	}
	return nil
}

// dropout applies the step's mask (forward and backward alike), or copies outside training or
// at rate 0.
func dropout[T kern.Float](c *call[T]) error {
	out, x, rate := c.res(0), c.arg(0), c.nd().Rate
	if !c.training() || rate == 0 {
		copy(out, x)
		return nil
	}
	kern.Dropout(out, x, len(out), rate, c.dropSeed())
	return nil
}

// labels returns the labels and weights of a weighted cross-entropy (Node.Index), checked
// against the logits' rows and classes as ops checks them.
func (c *call[T]) labels(rows, cols int) ([]int32, []float64, error) {
	labels, w := c.index(c.nd().Index)
	if len(labels) != rows || len(w) != len(labels) {
		return nil, nil, fmt.Errorf("weighted cross-entropy: %d labels and %d weights for %d rows", len(labels), len(w), rows)
	}
	for i, y := range labels {
		if int(y) >= cols {
			return nil, nil, fmt.Errorf("weighted cross-entropy: label %d of row %d outside %d classes", y, i, cols)
		}
	}
	return labels, w, nil
}

// bnState is what a batch norm keeps for its gradient pass: the statistics it normalised with
// and its scratch; and the gradient pass's buffers for the members the step does not compute.
type bnState[T kern.Float] struct {
	mean, invStd []float64
	scratch      kern.BNScratch
	dx, grads    []T
}

// batchNorm is ops' bnForward: (x, γ, β) or, for BatchNormRelu, also (x, γ, β, residual); in
// training with the running statistics' momentum update, or (average > 0) their cumulative
// mean, none on a replay.
func batchNorm[T kern.Float](c *call[T]) error {
	rows, d := c.rc(0)
	keep := c.mask()
	runMean, runVar, average := c.bn()
	if len(keep) != rows || len(runMean) != d || len(runVar) != d {
		return fmt.Errorf("batch norm %q: input [%d, %d], mask of %d rows, %d features", c.stateName(), rows, d, len(keep), len(runMean))
	}
	training := c.training()
	if training {
		if err := prog.CheckBatchRows(keep); err != nil {
			return fmt.Errorf("batch norm %q: %w", c.stateName(), err)
		}
	}
	st := kept[bnState[T], T](c)
	st.mean, st.invStd = resize(st.mean, d), resize(st.invStd, d)
	o := kern.BNOpts{Eps: kern.BNEps, Momentum: kern.BNMomentum, Replay: c.replay(), Relu: c.st.Kind == prog.BatchNormRelu}
	if average > 0 {
		o.Average = average
	}
	b := kern.BatchNormBufs[T]{X: c.arg(0), Gamma: c.arg(1), Beta: c.arg(2), Keep: keep, RunMean: runMean, RunVar: runVar,
		Out: c.res(0), Mean: st.mean, InvStd: st.invStd, Scratch: &st.scratch}
	if c.nin() == 4 {
		b.Res = c.arg(3)
	}
	kern.BatchNorm(b, rows, d, training, o)
	return nil
}

// batchNormGrad is ops' bnBackward, the group pass: from member 0's (x, γ, β, dy), dx (plus the
// summand) into out(0), dγ into out(1), dβ into out(2); through the ReLU for BatchNormReluGrad.
func batchNormGrad[T kern.Float](c *call[T]) error {
	if !c.has(0) {
		return fmt.Errorf("batch norm gradient %q: no dx member to compute the pass from", c.stateName())
	}
	rows, d := c.rcOf(0, 0)
	st := kept[bnState[T], T](c)
	keep := c.mask()
	if len(st.mean) != d || len(keep) != rows {
		return fmt.Errorf("batch norm gradient %q: no forward pass of shape [%d, %d] to differentiate", c.stateName(), rows, d)
	}
	dx, dgamma, dbeta := c.res(0), c.res(1), c.res(2)
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
	b := kern.BatchNormBufs[T]{X: c.argOf(0, 0), Gamma: c.argOf(0, 1), Beta: c.argOf(0, 2), Keep: keep,
		Mean: st.mean, InvStd: st.invStd, Scratch: &st.scratch}
	kern.BatchNormBackward(dx, dgamma, dbeta, c.argOf(0, 3), b, rows, d, c.training(), c.st.Kind == prog.BatchNormReluGrad, c.summand())
	return nil
}

// lnState is what a layer norm keeps for its gradient ops: x̂ and 1/σ per row.
type lnState struct {
	xhat, invStd []float64
}

// gatedState is what a gated aggregation keeps for its gradient pass: the denominators, the
// grouped edges (kern.GatedWork) and the shape of ê; and the gradient pass's buffers for the
// members the step does not compute.
type gatedState[T kern.Float] struct {
	den     []T
	work    kern.GatedWork
	m, d    int
	de, dbh []T
}

// gatedAggregate is ops' gatedForward: (ê [M, d], Bh [N, d]) → [Rows, d].
func gatedAggregate[T kern.Float](c *call[T]) error {
	m, d := c.rc(0)
	nbh, _ := c.rc(1)
	nodes := c.nd().Rows
	src, _, err := c.checked(c.nd().Src, nbh)
	if err != nil {
		return err
	}
	dst, _, err := c.checked(c.nd().Dst, nodes)
	if err != nil {
		return err
	}
	if len(src) != m || len(dst) != m {
		return fmt.Errorf("gated aggregate: ê has %d rows, %d sources, %d destinations", m, len(src), len(dst))
	}
	st := kept[gatedState[T], T](c)
	st.m, st.d = m, d
	den := c.tmp(nodes * d) // an evaluation program has no gradient to keep them for
	if c.r.P.Train {
		st.den = kern.Grow[T](st.den, nodes*d)
		den = st.den
	}
	kern.GatedAggregate(kern.GatedBufs[T]{Ehat: c.arg(0), Bh: c.arg(1), Src: src, Dst: dst, Out: c.res(0), Den: den},
		&st.work, m, nbh, nodes, d)
	return nil
}

// gatedAggregateGrad is ops' gatedBackward, the group pass: from member 0's (ê, Bh, out, g),
// dê (plus the summand) into out(0) and dBh into out(1).
func gatedAggregateGrad[T kern.Float](c *call[T]) error {
	if !c.has(0) {
		return fmt.Errorf("gated aggregate gradient: no dê member to compute the pass from")
	}
	m, _ := c.rcOf(0, 0)
	nbh, d := c.rcOf(0, 1)
	nodes := c.nd().Rows
	st := kept[gatedState[T], T](c)
	if st.m != m || st.d != d || len(st.den) != nodes*d {
		return fmt.Errorf("gated aggregate gradient: no forward pass of shape [%d, %d] to differentiate", m, d)
	}
	src, _ := c.index(c.nd().Src)
	dst, _ := c.index(c.nd().Dst)
	de, dbh := c.res(0), c.res(1)
	if de == nil {
		st.de = kern.Grow[T](st.de, m*d)
		de = st.de
	}
	if dbh == nil {
		st.dbh = kern.Grow[T](st.dbh, nbh*d)
		dbh = st.dbh
	}
	b := kern.GatedBufs[T]{Ehat: c.argOf(0, 0), Bh: c.argOf(0, 1), Src: src, Dst: dst, Out: c.argOf(0, 2), Den: st.den}
	kern.GatedAggregateBackward(de, dbh, c.argOf(0, 3), b, m, nbh, nodes, d, c.summand(), &st.work)
	return nil
}

// edgeSumState is what an edge sum keeps for its gradient: the edges grouped by source and by
// destination, over rows nodes each.
type edgeSumState struct {
	bySrc, byDst kern.Segments
	rows, edges  int
	ran          bool
}

// edgeSum is ops' edgeSum: (e [M, d], hs, ht [N, d]) → e + hs[src] + ht[dst] row by row.
func edgeSum[T kern.Float](c *call[T]) error {
	m, d := c.rc(0)
	hsRows, _ := c.rc(1)
	htRows, _ := c.rc(2)
	src, ws, err := c.checked(c.nd().Src, hsRows)
	if err != nil {
		return err
	}
	dst, wd, err := c.checked(c.nd().Dst, htRows)
	if err != nil {
		return err
	}
	if ws != nil || wd != nil {
		return fmt.Errorf("edge sum: weighted index")
	}
	if len(src) != m || len(dst) != m || hsRows != htRows {
		return fmt.Errorf("edge sum: e has %d rows, %d sources, %d destinations; hs %d rows, ht %d", m, len(src), len(dst), hsRows, htRows)
	}
	st := kept[edgeSumState, T](c)
	st.bySrc.Group(src, hsRows, func(k int) bool { return src[k] >= 0 })
	st.byDst.Group(dst, htRows, func(k int) bool { return dst[k] >= 0 })
	st.rows, st.edges, st.ran = hsRows, m, true
	kern.EdgeSum(c.res(0), c.arg(0), c.arg(1), c.arg(2), src, dst, d)
	return nil
}

// edgeSumGrad is ops' edgeSumGrad, the group pass: g [M, d] summed along src into out(0) and
// along dst into out(1) ([Rows, d] each; either absent), node by node over the forward's
// grouped edges, each sum in edge order.
func edgeSumGrad[T kern.Float](c *call[T]) error {
	m, d := c.rc(0)
	rows := c.nd().Rows
	st := kept[edgeSumState, T](c)
	if !st.ran || st.rows != rows || st.edges != m {
		return fmt.Errorf("edge sum gradient: no forward pass of %d edges into %d rows", m, rows)
	}
	g, o0, o1 := c.arg(0), c.res(0), c.res(1)
	sum := func(o []T, edges []int32) {
		clear(o)
		for _, k := range edges {
			kern.AddTo(o, g[int(k)*d:int(k+1)*d])
		}
	}
	kern.ParallelRange(rows, d*max(1, 2*m/max(rows, 1)), func(lo, hi int) {
		for v := lo; v < hi; v++ {
			if o0 != nil {
				sum(o0[v*d:(v+1)*d], st.bySrc.Of(v))
			}
			if o1 != nil {
				sum(o1[v*d:(v+1)*d], st.byDst.Of(v))
			}
		}
	})
	return nil
}

// segMaxState is what a segment max keeps for its gradient: the edges grouped by destination
// and the arg-max per (node, column).
type segMaxState struct {
	byDst kern.Segments
	arg   []int32
	d     int
	ran   bool
}

// segmentMax is ops' segMaxForward: (x [M, d]) → [Rows, d], the max over each destination's
// edges (Node.Index).
func segmentMax[T kern.Float](c *call[T]) error {
	m, d := c.rc(0)
	nodes := c.nd().Rows
	dst, w, err := c.checked(c.nd().Index, nodes)
	if err != nil {
		return err
	}
	if w != nil {
		return fmt.Errorf("segment max: weighted index")
	}
	if m != len(dst) {
		return fmt.Errorf("segment max: input has %d rows, index %d entries", m, len(dst))
	}
	st := kept[segMaxState, T](c)
	st.byDst.Group(dst, nodes, func(k int) bool { return dst[k] >= 0 })
	if n := nodes * d; cap(st.arg) < n {
		st.arg = make([]int32, n)
	} else {
		st.arg = st.arg[:n]
	}
	kern.SegmentMaxRows(c.res(0), st.arg, c.arg(0), d, &st.byDst)
	st.d, st.ran = d, true
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
