package nn

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BNEps is the constant added to the variance (PyTorch BatchNorm1d's default).
const BNEps = 1e-5

// BNMomentum is the weight of the batch statistics in the running statistics.
const BNMomentum = 0.1

// BNState is the running statistics of one batch-norm layer, shared by every compiled graph
// (shape bucket) of a model, and the switch between training and evaluation.
type BNState struct {
	Name     string
	RunMean  []float64
	RunVar   []float64
	Training bool
}

// NewBNState returns running statistics for d features: mean 0, variance 1, training on.
func NewBNState(name string, d int) *BNState {
	s := &BNState{Name: name, RunMean: make([]float64, d), RunVar: make([]float64, d), Training: true}
	for i := range s.RunVar {
		s.RunVar[i] = 1
	}
	return s
}

// BatchNorm normalises the kept rows of x ([rows, d]) per column and returns γ⊙x̂+β (REFERENCE
// §1.2). In training the statistics are the mean and biased variance over the rows mask keeps,
// and the running statistics are updated with momentum 0.1 and the unbiased variance; in
// evaluation the running statistics are used. Rows the mask drops come out as zeros and get no
// gradient.
func BatchNorm(x, gamma, beta *gorgonia.Node, st *BNState, mask *Mask) (*gorgonia.Node, error) {
	if x.Dims() != 2 || x.Shape()[0] != len(mask.Keep) || x.Shape()[1] != len(st.RunMean) {
		return nil, fmt.Errorf("batch norm %q: input shape %v, want [%d, %d]", st.Name, x.Shape(), len(mask.Keep), len(st.RunMean))
	}
	if gamma.Dims() != 1 || beta.Dims() != 1 || gamma.Shape()[0] != len(st.RunMean) || beta.Shape()[0] != len(st.RunMean) {
		return nil, fmt.Errorf("batch norm %q: γ %v and β %v, want [%d]", st.Name, gamma.Shape(), beta.Shape(), len(st.RunMean))
	}
	n, err := gorgonia.ApplyOp(&bnOp{st: st, mask: mask}, x, gamma, beta)
	if err != nil {
		return nil, fmt.Errorf("batch norm %q: %w", st.Name, err)
	}
	return n, nil
}

// bnOp keeps, from its last forward pass, x̂ and 1/σ per column for the backward ops.
type bnOp struct {
	base
	st     *BNState
	mask   *Mask
	out    buffer
	xhat   []float64
	invStd []float64
	mean   []float64
}

func (op *bnOp) Arity() int            { return 3 }
func (op *bnOp) String() string        { return fmt.Sprintf("BatchNorm{%s}", op.st.Name) }
func (op *bnOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%s%p", op, op) }
func (op *bnOp) Hashcode() uint32      { return hashOf(op) }
func (op *bnOp) Type() hm.Type {
	a, b := matT(), vecT()
	return hm.NewFnType(a, b, b, a)
}
func (op *bnOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := inShape(op, in, 0)
	if err != nil {
		return nil, err
	}
	return s.Clone(), nil
}

func (op *bnOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	if err := arity(op, vs); err != nil {
		return nil, err
	}
	var ds [3]*tensor.Dense
	for i := range ds {
		d, err := dense(op, vs[i], i)
		if err != nil {
			return nil, err
		}
		ds[i] = d
	}
	if err := sameType(op, ds[:]...); err != nil {
		return nil, err
	}
	rows, cols := rowsCols(ds[0])
	if rows != len(op.mask.Keep) || cols != len(op.st.RunMean) {
		return nil, fmt.Errorf("%v: input %dx%d, want %dx%d", op, rows, cols, len(op.mask.Keep), len(op.st.RunMean))
	}
	kept := op.mask.Count()
	if op.st.Training && kept < 2 {
		return nil, fmt.Errorf("%v: %d real rows; training statistics need at least 2", op, kept)
	}
	if len(op.xhat) != rows*cols {
		op.xhat = make([]float64, rows*cols)
		op.invStd = make([]float64, cols)
		op.mean = make([]float64, cols)
	}
	out := op.out.get(ds[0].Dtype(), rows, cols)
	switch ds[0].Dtype() {
	case tensor.Float64:
		op.forward(ds[0].Float64s(), kept)
		bnAffine(out.Float64s(), op.xhat, ds[1].Float64s(), ds[2].Float64s(), op.mask.Keep)
	default:
		bnForward(op, ds[0].Float32s(), kept)
		bnAffine(out.Float32s(), op.xhat, ds[1].Float32s(), ds[2].Float32s(), op.mask.Keep)
	}
	return out, nil
}

func (op *bnOp) forward(x []float64, kept int) { bnForward(op, x, kept) }

// bnForward computes op.xhat and op.invStd from x, and updates the running statistics when
// training.
func bnForward[T Float](op *bnOp, x []T, kept int) {
	cols := len(op.st.RunMean)
	parallelCols(cols, len(op.mask.Keep), func(c0, c1 int) { bnForwardCols(op, x, kept, c0, c1) })
}

// bnForwardCols does columns [c0, c1) of bnForward.
func bnForwardCols[T Float](op *bnOp, x []T, kept, c0, c1 int) {
	cols := len(op.st.RunMean)
	keep := op.mask.Keep
	mean, inv := op.mean, op.invStd
	if op.st.Training {
		clear(mean[c0:c1])
		clear(inv[c0:c1]) // holds the sum of squared deviations first
		for r, k := range keep {
			if !k {
				continue
			}
			for c := c0; c < c1; c++ {
				mean[c] += float64(x[r*cols+c])
			}
		}
		for c := c0; c < c1; c++ {
			mean[c] /= float64(kept)
		}
		for r, k := range keep {
			if !k {
				continue
			}
			for c := c0; c < c1; c++ {
				dv := float64(x[r*cols+c]) - mean[c]
				inv[c] += dv * dv
			}
		}
		for c := c0; c < c1; c++ {
			v := inv[c] / float64(kept)
			op.st.RunMean[c] = (1-BNMomentum)*op.st.RunMean[c] + BNMomentum*mean[c]
			op.st.RunVar[c] = (1-BNMomentum)*op.st.RunVar[c] + BNMomentum*inv[c]/float64(kept-1)
			inv[c] = 1 / math.Sqrt(v+BNEps)
		}
	} else {
		for c := c0; c < c1; c++ {
			mean[c] = op.st.RunMean[c]
			inv[c] = 1 / math.Sqrt(op.st.RunVar[c]+BNEps)
		}
	}
	for r, k := range keep {
		xh := op.xhat[r*cols : (r+1)*cols]
		if !k {
			clear(xh[c0:c1])
			continue
		}
		for c := c0; c < c1; c++ {
			xh[c] = (float64(x[r*cols+c]) - mean[c]) * inv[c]
		}
	}
}

func bnAffine[T Float](dst []T, xhat []float64, gamma, beta []T, keep []bool) {
	cols := len(gamma)
	parallelCols(cols, len(keep), func(c0, c1 int) {
		for r, k := range keep {
			d := dst[r*cols : (r+1)*cols]
			if !k {
				clear(d[c0:c1])
				continue
			}
			xh := xhat[r*cols : (r+1)*cols]
			for c := c0; c < c1; c++ {
				d[c] = gamma[c]*T(xh[c]) + beta[c]
			}
		}
	})
}

func (op *bnOp) DiffWRT(int) []bool { return []bool{true, true, true} }
func (op *bnOp) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	dx, err := gorgonia.ApplyOp(&bnGradOp{fwd: op, which: 0}, in[1], grad)
	if err != nil {
		return nil, fmt.Errorf("%v gradient: %w", op, err)
	}
	dg, err := gorgonia.ApplyOp(&bnGradOp{fwd: op, which: 1}, in[1], grad)
	if err != nil {
		return nil, fmt.Errorf("%v gradient: %w", op, err)
	}
	db, err := gorgonia.ApplyOp(&bnGradOp{fwd: op, which: 2}, in[1], grad)
	if err != nil {
		return nil, fmt.Errorf("%v gradient: %w", op, err)
	}
	return gorgonia.Nodes{dx, dg, db}, nil
}

// bnGradOp computes one of the batch norm's gradients (which: 0 x, 1 γ, 2 β) from γ and the
// output gradient, using the forward op's saved x̂ and 1/σ.
type bnGradOp struct {
	base
	fwd   *bnOp
	which int
	out   buffer
	tmp   []float64
	kept  int
}

func (op *bnGradOp) Arity() int { return 2 }
func (op *bnGradOp) String() string {
	return fmt.Sprintf("BatchNormGrad{%s,%d}", op.fwd.st.Name, op.which)
}
func (op *bnGradOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%s%p", op, op) }
func (op *bnGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *bnGradOp) Type() hm.Type {
	a, b := matT(), vecT()
	if op.which == 0 {
		return hm.NewFnType(b, a, a)
	}
	return hm.NewFnType(b, a, b)
}
func (op *bnGradOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	i := 1
	if op.which > 0 {
		i = 0
	}
	s, err := inShape(op, in, i)
	if err != nil {
		return nil, err
	}
	return s.Clone(), nil
}

func (op *bnGradOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	if err := arity(op, vs); err != nil {
		return nil, err
	}
	g, err := dense(op, vs[0], 0)
	if err != nil {
		return nil, err
	}
	dy, err := dense(op, vs[1], 1)
	if err != nil {
		return nil, err
	}
	if err := sameType(op, g, dy); err != nil {
		return nil, err
	}
	rows, cols := rowsCols(dy)
	if len(op.fwd.xhat) != rows*cols {
		return nil, fmt.Errorf("%v: no forward pass of shape %dx%d to differentiate", op, rows, cols)
	}
	if len(op.tmp) != 2*cols {
		op.tmp = make([]float64, 2*cols)
	}
	var out *tensor.Dense
	if op.which == 0 {
		out = op.out.get(dy.Dtype(), rows, cols)
	} else {
		out = op.out.get(dy.Dtype(), cols)
	}
	op.kept = op.fwd.mask.Count()
	switch dy.Dtype() {
	case tensor.Float64:
		bnBackward(op, out.Float64s(), g.Float64s(), dy.Float64s())
	default:
		bnBackward(op, out.Float32s(), g.Float32s(), dy.Float32s())
	}
	return out, nil
}

// bnBackward: with S1 = Σ dy and S2 = Σ dy⊙x̂ over kept rows, dβ = S1, dγ = S2, and in training
// dx = γ/σ ⊙ (dy − S1/R − x̂⊙S2/R) on kept rows (R kept rows); in evaluation dx = γ/σ ⊙ dy.
func bnBackward[T Float](op *bnGradOp, dst, gamma, dy []T) {
	parallelCols(len(gamma), len(op.fwd.mask.Keep), func(c0, c1 int) { bnBackwardCols(op, dst, gamma, dy, c0, c1) })
}

// bnBackwardCols does columns [c0, c1) of bnBackward.
func bnBackwardCols[T Float](op *bnGradOp, dst, gamma, dy []T, c0, c1 int) {
	f := op.fwd
	cols := len(gamma)
	keep := f.mask.Keep
	s1, s2 := op.tmp[:cols], op.tmp[cols:]
	clear(s1[c0:c1])
	clear(s2[c0:c1])
	for r, k := range keep {
		if !k {
			continue
		}
		switch op.which { // dγ needs only S2, dβ only S1
		case 1:
			for c := c0; c < c1; c++ {
				s2[c] += float64(dy[r*cols+c]) * f.xhat[r*cols+c]
			}
		case 2:
			for c := c0; c < c1; c++ {
				s1[c] += float64(dy[r*cols+c])
			}
		default:
			for c := c0; c < c1; c++ {
				v := float64(dy[r*cols+c])
				s1[c] += v
				s2[c] += v * f.xhat[r*cols+c]
			}
		}
	}
	switch op.which {
	case 1:
		for c := c0; c < c1; c++ {
			dst[c] = T(s2[c])
		}
		return
	case 2:
		for c := c0; c < c1; c++ {
			dst[c] = T(s1[c])
		}
		return
	}
	n := float64(op.kept)
	for r, k := range keep {
		d := dst[r*cols : (r+1)*cols]
		if !k {
			clear(d[c0:c1])
			continue
		}
		for c := c0; c < c1; c++ {
			scale := float64(gamma[c]) * f.invStd[c]
			g := float64(dy[r*cols+c])
			if f.st.Training {
				d[c] = T(scale * (g - s1[c]/n - f.xhat[r*cols+c]*s2[c]/n))
			} else {
				d[c] = T(scale * g)
			}
		}
	}
}
