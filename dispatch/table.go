package dispatch

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/prog"
)

// entry runs one op: it reads the step's operands from b and calls b's kernel.
type entry[F, X, M any] func(b Backend[F, X, M], kind prog.Op, nd *prog.Node) error

// Table is the dispatch table of one backend's buffer types: one entry per op kind.
type Table[F, X, M any] struct {
	entries map[prog.Op]entry[F, X, M]
}

// New returns the table for buffer types F, X and M (a backend makes it once).
func New[F, X, M any]() *Table[F, X, M] {
	return &Table[F, X, M]{entries: entries[F, X, M]()}
}

// Run runs a step of op kind with node attributes nd (of the step's first node) on b.
func (t *Table[F, X, M]) Run(b Backend[F, X, M], kind prog.Op, nd *prog.Node) error {
	e := t.entries[kind]
	if e == nil {
		return fmt.Errorf("no kernel for %s", kind)
	}
	return e(b, kind, nd)
}

var any3 = New[any, any, any]()

// Runs reports whether the table has an entry for op o.
func Runs(o prog.Op) bool { return any3.entries[o] != nil }

// Kinds lists the ops the table runs, in prog.Ops order.
func Kinds() []prog.Op {
	var out []prog.Op
	for _, o := range prog.Ops() {
		if Runs(o) {
			out = append(out, o)
		}
	}
	return out
}

// primary is the first member present: the one whose inputs a single-pass kernel reads.
func primary[F, X, M any](b Backend[F, X, M]) int {
	for w := range b.Members() {
		if b.Has(w) {
			return w
		}
	}
	return 0
}

// entries are the generated entries (zz_kernels.go) and the hand-written ones.
func entries[F, X, M any]() map[prog.Op]entry[F, X, M] {
	m := generated[F, X, M]()
	for o, e := range custom[F, X, M]() {
		m[o] = e
	}
	return m
}

// unary is an entry of FormUnary: (x) → out, scalar where x is a scalar value.
func unary[F, X, M any](f func(b Backend[F, X, M], out, x F, n int, scalar bool) error) entry[F, X, M] {
	return func(b Backend[F, X, M], _ prog.Op, _ *prog.Node) error {
		p := primary(b)
		return f(b, b.Out(0), b.In(p, 0), b.OutElems(0), b.IsScalar(p, 0))
	}
}

// mapOf is an entry of FormMap: (x) → out.
func mapOf[F, X, M any](f func(b Backend[F, X, M], out, x F, n int) error) entry[F, X, M] {
	return func(b Backend[F, X, M], _ prog.Op, _ *prog.Node) error {
		return f(b, b.Out(0), b.In(primary(b), 0), b.OutElems(0))
	}
}

// mapGrad is an entry of FormMapGrad: (y, g) → dx.
func mapGrad[F, X, M any](f func(b Backend[F, X, M], dx, y, g F, n int) error) entry[F, X, M] {
	return func(b Backend[F, X, M], _ prog.Op, _ *prog.Node) error {
		p := primary(b)
		return f(b, b.Out(0), b.In(p, 0), b.In(p, 1), b.OutElems(0))
	}
}

// custom are the hand-written entries.
func custom[F, X, M any]() map[prog.Op]entry[F, X, M] {
	type B = Backend[F, X, M]
	return map[prog.Op]entry[F, X, M]{
		prog.Add:     binary(B.Add),
		prog.Sub:     binary(B.Sub),
		prog.Mul:     binary(B.Mul),
		prog.Div:     binary(B.Div),
		prog.GradSum: gradSum[F, X, M],

		prog.Gather: func(b B, _ prog.Op, nd *prog.Node) error { // (x)
			p := primary(b)
			rows, cols := b.Shape(p, 0)
			return b.Gather(b.Out(0), b.In(p, 0), b.Index(nd.Index), b.Program().Indexes[nd.Index].Len, rows, cols)
		},
		prog.ScatterAdd: func(b B, _ prog.Op, nd *prog.Node) error { // (x) → Rows rows
			p := primary(b)
			m, cols := b.Shape(p, 0)
			idx, err := segments(b, "scatter-add: input", m, nd.Index)
			if err != nil {
				return err
			}
			return b.ScatterAdd(b.Out(0), b.In(p, 0), idx, m, nd.Rows, cols)
		},
		prog.SegmentSoftmax: func(b B, _ prog.Op, nd *prog.Node) error { // (s [M, H])
			p := primary(b)
			m, h := b.Shape(p, 0)
			seg, err := segments(b, "segment softmax: score", m, nd.Index)
			if err != nil {
				return err
			}
			return b.SegmentSoftmax(b.Out(0), b.In(p, 0), seg, m, h, nd.Rows)
		},
		prog.SegmentSoftmaxGrad: func(b B, _ prog.Op, nd *prog.Node) error { // (y, dy)
			p := primary(b)
			m, h := b.Shape(p, 0)
			return b.SegmentSoftmaxGrad(b.Out(0), b.In(p, 0), b.In(p, 1), b.Index(nd.Index), m, h, nd.Rows)
		},
		prog.EdgeSum:     edgeSum[F, X, M],
		prog.EdgeSumGrad: edgeSumGrad[F, X, M],
		prog.SegmentMax: func(b B, _ prog.Op, nd *prog.Node) error { // (x [M, d]) → [Rows, d]
			p := primary(b)
			m, d := b.Shape(p, 0)
			if b.Program().Indexes[nd.Index].Weighted {
				return fmt.Errorf("segment max: weighted index")
			}
			seg, err := segments(b, "segment max: input", m, nd.Index)
			if err != nil {
				return err
			}
			return b.SegmentMax(b.Out(0), b.In(p, 0), seg, m, d, nd.Rows)
		},
		prog.SegmentMaxGrad: func(b B, _ prog.Op, nd *prog.Node) error { // (g [Rows, d]) → dx [M, d]
			p := primary(b)
			_, d := b.Shape(p, 0)
			return b.SegmentMaxGrad(b.Out(0), b.In(p, 0), b.Index(nd.Index), b.Program().Indexes[nd.Index].Len, d, nd.Rows)
		},

		prog.BatchNorm:         batchNorm[F, X, M],
		prog.BatchNormRelu:     batchNorm[F, X, M],
		prog.BatchNormGrad:     batchNormGrad[F, X, M],
		prog.BatchNormReluGrad: batchNormGrad[F, X, M],
		prog.LayerNorm: func(b B, _ prog.Op, nd *prog.Node) error { // (x, γ, β)
			p := primary(b)
			rows, d := b.Shape(p, 0)
			if n := len(b.Feed().Mask(nd.Mask)); n != rows {
				return fmt.Errorf("layer norm: %d rows, mask has %d", rows, n)
			}
			return b.LayerNorm(b.Out(0), b.In(p, 0), b.In(p, 1), b.In(p, 2), b.Mask(nd.Mask), rows, d)
		},
		prog.LayerNormGrad: func(b B, _ prog.Op, nd *prog.Node) error { // (γ, dy) → dx, dγ, dβ
			p := primary(b)
			rows, d := b.Shape(p, 1)
			return b.LayerNormGrad(b.Out(0), b.Out(1), b.Out(2), b.In(p, 0), b.In(p, 1), b.Mask(nd.Mask), rows, d)
		},

		prog.GatedAggregate:     gatedAggregate[F, X, M],
		prog.GatedAggregateGrad: gatedAggregateGrad[F, X, M],

		prog.GaussianWeights: func(b B, _ prog.Op, _ *prog.Node) error { // (u [M, P], μ [K, P], 1/σ [K, P])
			p := primary(b)
			m, pd := b.Shape(p, 0)
			k, _ := b.Shape(p, 1)
			return b.GaussianWeights(b.Out(0), b.In(p, 0), b.In(p, 1), b.In(p, 2), m, k, pd)
		},
		prog.GaussianWeightsGrad: func(b B, _ prog.Op, _ *prog.Node) error { // (u, μ, 1/σ, w, g) → du, dμ, d(1/σ)
			p := primary(b)
			m, pd := b.Shape(p, 0)
			k, _ := b.Shape(p, 1)
			return b.GaussianWeightsGrad(b.Out(0), b.Out(1), b.Out(2), b.In(p, 0), b.In(p, 1), b.In(p, 2), b.In(p, 3), b.In(p, 4), m, k, pd)
		},
		prog.KernelMix: func(b B, _ prog.Op, _ *prog.Node) error { // (x [M, K·d], w [M, K])
			p := primary(b)
			_, xc := b.Shape(p, 0)
			m, k := b.Shape(p, 1)
			return b.KernelMix(b.Out(0), b.In(p, 0), b.In(p, 1), m, k, xc/k)
		},
		prog.KernelMixGradX: kernelMixGrad[F, X, M],
		prog.KernelMixGradW: kernelMixGrad[F, X, M],

		prog.HeadDot: func(b B, _ prog.Op, nd *prog.Node) error { // (q, k) [M, d] → [M, Heads]
			p := primary(b)
			m, d := b.Shape(p, 0)
			return b.HeadDot(b.Out(0), b.In(p, 0), b.In(p, 1), m, nd.Heads, d)
		},
		prog.HeadScale: func(b B, _ prog.Op, _ *prog.Node) error { // (x [M, d], w [M, H])
			p := primary(b)
			m, d := b.Shape(p, 0)
			_, h := b.Shape(p, 1)
			return b.HeadScale(b.Out(0), b.In(p, 0), b.In(p, 1), m, h, d)
		},

		prog.MatMul: func(b B, _ prog.Op, _ *prog.Node) error { // (x [M, a], w [a, b]) or with a fused bias (x, w, b)
			p := primary(b)
			m, a := b.Shape(p, 0)
			_, n := b.Shape(p, 1)
			var bias F
			if b.NumIn(p) > 2 {
				bias = b.In(p, 2)
			}
			return b.MatMul(b.Out(0), b.In(p, 0), b.In(p, 1), bias, m, a, n)
		},
		prog.MatMulGradX: matMulGrad[F, X, M],
		prog.MatMulGradW: matMulGrad[F, X, M],
		prog.AddBias: func(b B, _ prog.Op, _ *prog.Node) error { // (x [M, d], b [d])
			p := primary(b)
			rows, cols := b.Shape(p, 0)
			if n := b.Elems(p, 1); n != cols {
				return fmt.Errorf("add bias: bias has %d values for %d columns", n, cols)
			}
			return b.AddBias(b.Out(0), b.In(p, 0), b.In(p, 1), rows, cols)
		},
		prog.ColSum: func(b B, _ prog.Op, _ *prog.Node) error {
			p := primary(b)
			rows, cols := b.Shape(p, 0)
			return b.ColSum(b.Out(0), b.In(p, 0), rows, cols)
		},

		prog.Dropout:     dropout[F, X, M],
		prog.DropoutGrad: dropout[F, X, M],

		prog.MaskedL1: func(b B, _ prog.Op, _ *prog.Node) error { // (pred, y, w) → scalar
			p := primary(b)
			return b.MaskedL1(b.Out(0), b.In(p, 0), b.In(p, 1), b.In(p, 2), b.Elems(p, 0))
		},
		prog.MaskedL1Grad: func(b B, _ prog.Op, _ *prog.Node) error { // (pred, y, w, g scalar)
			p := primary(b)
			return b.MaskedL1Grad(b.Out(0), b.In(p, 0), b.In(p, 1), b.In(p, 2), b.In(p, 3), b.OutElems(0))
		},
		prog.MaskedBCE: func(b B, _ prog.Op, _ *prog.Node) error { // (z, y, w) → scalar
			p := primary(b)
			return b.MaskedBCE(b.Out(0), b.In(p, 0), b.In(p, 1), b.In(p, 2), b.Elems(p, 0))
		},
		prog.MaskedBCEGrad: func(b B, _ prog.Op, _ *prog.Node) error { // (z, y, w, g scalar)
			p := primary(b)
			return b.MaskedBCEGrad(b.Out(0), b.In(p, 0), b.In(p, 1), b.In(p, 2), b.In(p, 3), b.OutElems(0))
		},
		prog.WeightedCE: func(b B, _ prog.Op, nd *prog.Node) error { // (z [R, C]) → scalar
			p := primary(b)
			rows, cols := b.Shape(p, 0)
			labels, err := classLabels(b, nd.Index, rows)
			if err != nil {
				return err
			}
			return b.WeightedCE(b.Out(0), b.In(p, 0), labels, rows, cols)
		},
		prog.WeightedCEGrad: func(b B, _ prog.Op, nd *prog.Node) error { // (z, g scalar)
			p := primary(b)
			rows, cols := b.Shape(p, 0)
			labels, err := classLabels(b, nd.Index, rows)
			if err != nil {
				return err
			}
			return b.WeightedCEGrad(b.Out(0), b.In(p, 0), b.In(p, 1), labels, rows, cols)
		},
	}
}

// segments returns index ix after checking that it has an entry for each of the m rows of
// what it segments.
func segments[F, X, M any](b Backend[F, X, M], what string, m, ix int) (X, error) {
	if n := b.Program().Indexes[ix].Len; n != m {
		var none X
		return none, fmt.Errorf("%s has %d rows, index %d entries", what, m, n)
	}
	return b.Index(ix), nil
}

// classLabels returns a cross-entropy's labels (with their weights), one per row, each a
// class or -1 (a row left out).
func classLabels[F, X, M any](b Backend[F, X, M], ix, rows int) (X, error) {
	if in := b.Program().Indexes[ix]; in.Len != rows || !in.Weighted {
		var none X
		return none, fmt.Errorf("weighted cross-entropy: %d labels (weighted: %v) for %d rows", in.Len, in.Weighted, rows)
	}
	return b.Index(ix), nil
}

// binary is an element-wise op: same for operands of one shape, Scalar where one operand is
// a scalar (on either side), Scalars where both are.
func binary[F, X, M any](same func(b Backend[F, X, M], out, a, c F, n int) error) entry[F, X, M] {
	return func(b Backend[F, X, M], kind prog.Op, _ *prog.Node) error {
		p := primary(b)
		out, n := b.Out(0), b.OutElems(0)
		switch sa, sb := b.IsScalar(p, 0), b.IsScalar(p, 1); {
		case sa && sb:
			return b.Scalars(kind, out, b.In(p, 0), b.In(p, 1))
		case sb:
			return b.Scalar(kind, out, b.In(p, 0), b.In(p, 1), n, false)
		case sa:
			return b.Scalar(kind, out, b.In(p, 1), b.In(p, 0), n, true)
		}
		if ea, eb := b.Elems(p, 0), b.Elems(p, 1); ea != eb || n != ea {
			return fmt.Errorf("%s of %d and %d values into %d", kind, ea, eb, n)
		}
		return same(b, out, b.In(p, 0), b.In(p, 1), n)
	}
}

// gradSum sums the terms of member 0 in order: ((t0 + t1) + t2) + …
func gradSum[F, X, M any](b Backend[F, X, M], _ prog.Op, _ *prog.Node) error {
	n := b.NumIn(0)
	if n < 2 {
		return fmt.Errorf("gradient sum of %d terms", n)
	}
	terms := make([]F, n)
	for i := range terms {
		terms[i] = b.In(0, i)
	}
	return b.GradSum(b.Out(0), terms, b.OutElems(0))
}

// edgeSum: (e [M, d], hs, ht [N, d]) → e + hs[src] + ht[dst] row by row.
func edgeSum[F, X, M any](b Backend[F, X, M], _ prog.Op, nd *prog.Node) error {
	p := primary(b)
	m, d := b.Shape(p, 0)
	hsRows, _ := b.Shape(p, 1)
	htRows, _ := b.Shape(p, 2)
	ixs := b.Program().Indexes
	if ixs[nd.Src].Weighted || ixs[nd.Dst].Weighted {
		return fmt.Errorf("edge sum: weighted index")
	}
	if ns, nt := ixs[nd.Src].Len, ixs[nd.Dst].Len; ns != m || nt != m || hsRows != htRows {
		return fmt.Errorf("edge sum: e has %d rows, %d sources, %d destinations; hs %d rows, ht %d", m, ns, nt, hsRows, htRows)
	}
	return b.EdgeSum(b.Out(0), b.In(p, 0), b.In(p, 1), b.In(p, 2), b.Index(nd.Src), b.Index(nd.Dst), m, hsRows, d)
}

// edgeSumGrad: g [M, d] summed along src into member 0's result and along dst into member 1's
// ([Rows, d] each; either not computed).
func edgeSumGrad[F, X, M any](b Backend[F, X, M], _ prog.Op, nd *prog.Node) error {
	p := primary(b)
	m, d := b.Shape(p, 0)
	return b.EdgeSumGrad(b.Out(0), b.Out(1), b.In(p, 0), b.Index(nd.Src), b.Index(nd.Dst), m, nd.Rows, d)
}

// batchNorm: (x, γ, β), or for BatchNormRelu also (x, γ, β, residual).
func batchNorm[F, X, M any](b Backend[F, X, M], kind prog.Op, nd *prog.Node) error {
	p := primary(b)
	rows, d := b.Shape(p, 0)
	name := b.Program().States[nd.State].Name
	keep := b.Feed().Mask(nd.Mask)
	if len(keep) != rows {
		return fmt.Errorf("batch norm %q: input [%d, %d], mask of %d rows", name, rows, d, len(keep))
	}
	training := b.Feed().Training(nd.State)
	if training {
		if err := prog.CheckBatchRows(keep); err != nil {
			return fmt.Errorf("batch norm %q: %w", name, err)
		}
	}
	var res F
	if b.NumIn(p) == 4 {
		res = b.In(p, 3)
	}
	return b.BatchNorm(b.Out(0), b.In(p, 0), b.In(p, 1), b.In(p, 2), res, b.Mask(nd.Mask), rows, d, training, kind == prog.BatchNormRelu)
}

// batchNormGrad: from member 0's (x, γ, β, dy), dx, dγ and dβ in one pass.
func batchNormGrad[F, X, M any](b Backend[F, X, M], kind prog.Op, nd *prog.Node) error {
	if !b.Has(0) {
		return fmt.Errorf("batch norm gradient %q: no dx member to compute the pass from", b.Program().States[nd.State].Name)
	}
	rows, d := b.Shape(0, 0)
	return b.BatchNormGrad(b.Out(0), b.Out(1), b.Out(2), b.In(0, 0), b.In(0, 1), b.In(0, 2), b.In(0, 3), b.Mask(nd.Mask),
		rows, d, b.Feed().Training(nd.State), kind == prog.BatchNormReluGrad)
}

// gatedAggregate: (ê [M, d], Bh [N, d]) → [Rows, d].
func gatedAggregate[F, X, M any](b Backend[F, X, M], _ prog.Op, nd *prog.Node) error {
	p := primary(b)
	m, d := b.Shape(p, 0)
	nbh, _ := b.Shape(p, 1)
	ixs := b.Program().Indexes
	if ns, nt := ixs[nd.Src].Len, ixs[nd.Dst].Len; ns != m || nt != m {
		return fmt.Errorf("gated aggregate: ê has %d rows, %d sources, %d destinations", m, ns, nt)
	}
	return b.GatedAggregate(b.Out(0), b.In(p, 0), b.In(p, 1), b.Index(nd.Src), b.Index(nd.Dst), m, nbh, nd.Rows, d)
}

// gatedAggregateGrad: from member 0's (ê, Bh, out, g), dê and dBh in one pass.
func gatedAggregateGrad[F, X, M any](b Backend[F, X, M], _ prog.Op, nd *prog.Node) error {
	if !b.Has(0) {
		return fmt.Errorf("gated aggregate gradient: no dê member to compute the pass from")
	}
	m, _ := b.Shape(0, 0)
	nbh, d := b.Shape(0, 1)
	return b.GatedAggregateGrad(b.Out(0), b.Out(1), b.In(0, 0), b.In(0, 1), b.In(0, 2), b.In(0, 3), b.Index(nd.Src), b.Index(nd.Dst), m, nbh, nd.Rows, d)
}

// gradPair returns the members of a gradient pair's step that compute dx and dw, -1 where
// absent: a step of two members has dx as member 0 and
// dw as member 1 (an executor may pair them); a single member is the one its kind names.
func gradPair[F, X, M any](b Backend[F, X, M], kind, dwKind prog.Op) (mx, mw int) {
	mx, mw = 0, -1
	switch {
	case b.Members() == 2:
		mw = 1
	case kind == dwKind:
		mx, mw = -1, 0
	}
	if mx >= 0 && !(b.Has(mx) && b.Computes(mx)) {
		mx = -1
	}
	if mw >= 0 && !(b.Has(mw) && b.Computes(mw)) {
		mw = -1
	}
	return mx, mw
}

// matMulGrad: a product's gradients, dx = g·wᵀ from (g [M, b], w [a, b]) and dw = xᵀ·g from
// (x [M, a], g [M, b]), either or both.
func matMulGrad[F, X, M any](b Backend[F, X, M], kind prog.Op, _ *prog.Node) error {
	mx, mw := gradPair(b, kind, prog.MatMulGradW)
	var dx, dw, x, w, g F
	var m, a, n int
	switch {
	case mx >= 0:
		dx, g, w = b.Out(mx), b.In(mx, 0), b.In(mx, 1)
		m, n = b.Shape(mx, 0)
		a, _ = b.Shape(mx, 1)
	case mw >= 0:
		g = b.In(mw, 1)
		m, a = b.Shape(mw, 0)
		_, n = b.Shape(mw, 1)
	default:
		return fmt.Errorf("product gradient without members")
	}
	if mw >= 0 {
		dw, x = b.Out(mw), b.In(mw, 0)
	}
	return b.MatMulGrad(dx, dw, x, w, g, m, a, n)
}

// kernelMixGrad: a kernel mix's gradients, dx from (g [M, d], w [M, K]) and dw from (x [M,
// K·d], g, w), either or both.
func kernelMixGrad[F, X, M any](b Backend[F, X, M], kind prog.Op, _ *prog.Node) error {
	mx, mw := gradPair(b, kind, prog.KernelMixGradW)
	var dx, dw, x, w, g F
	var m, k, d int
	if mx >= 0 {
		dx, g, w = b.Out(mx), b.In(mx, 0), b.In(mx, 1)
		m, d = b.Shape(mx, 0)
		_, k = b.Shape(mx, 1)
	}
	switch {
	case mw >= 0 && mx >= 0: // the members read the same g and w
		dw, x = b.Out(mw), b.In(mw, 0)
	case mw >= 0:
		dw, x, g, w = b.Out(mw), b.In(mw, 0), b.In(mw, 1), b.In(mw, 2)
		m, _ = b.Shape(mw, 0)
		_, d = b.Shape(mw, 1)
		_, k = b.Shape(mw, 2)
	case mx < 0:
		return fmt.Errorf("kernel mix gradient without members")
	}
	return b.KernelMixGrad(dx, dw, x, w, g, m, k, d)
}

// dropout applies the step's mask (forward and backward alike), or copies outside training or
// at rate 0.
func dropout[F, X, M any](b Backend[F, X, M], _ prog.Op, nd *prog.Node) error {
	out, x, n := b.Out(0), b.In(primary(b), 0), b.OutElems(0)
	if !b.Feed().Training(nd.State) || nd.Rate == 0 {
		return b.Copy(out, x, n)
	}
	return b.Dropout(out, x, n, nd.Rate, b.Feed().DropSeed(nd.State))
}
