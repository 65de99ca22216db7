package nn

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// LayerNorm normalises every kept row of x ([rows, d]) over its d features and returns
// γ⊙x̂+β (PyTorch LayerNorm, ε = 1e-5, biased variance). Rows the mask drops come out as zeros
// and get no gradient.
func LayerNorm(x, gamma, beta *gorgonia.Node, mask *Mask) (*gorgonia.Node, error) {
	if x.Dims() != 2 || x.Shape()[0] != len(mask.Keep) {
		return nil, fmt.Errorf("layer norm: input shape %v, want [%d, d]", x.Shape(), len(mask.Keep))
	}
	d := x.Shape()[1]
	if gamma.Dims() != 1 || beta.Dims() != 1 || gamma.Shape()[0] != d || beta.Shape()[0] != d {
		return nil, fmt.Errorf("layer norm: γ %v and β %v, want [%d]", gamma.Shape(), beta.Shape(), d)
	}
	n, err := gorgonia.ApplyOp(&lnOp{mask: mask}, x, gamma, beta)
	if err != nil {
		return nil, fmt.Errorf("layer norm: %w", err)
	}
	return n, nil
}

type lnOp struct {
	base
	mask   *Mask
	out    buffer
	xhat   []float64
	invStd []float64 // per row
}

func (op *lnOp) Arity() int            { return 3 }
func (op *lnOp) String() string        { return "LayerNorm" }
func (op *lnOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "LayerNorm%p", op) }
func (op *lnOp) Hashcode() uint32      { return hashOf(op) }
func (op *lnOp) Type() hm.Type         { return hm.NewFnType(matT(), vecT(), vecT(), matT()) }
func (op *lnOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := inShape(op, in, 0)
	if err != nil {
		return nil, err
	}
	return s.Clone(), nil
}

func (op *lnOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
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
	if rows != len(op.mask.Keep) {
		return nil, fmt.Errorf("%v: %d rows, mask has %d", op, rows, len(op.mask.Keep))
	}
	if len(op.xhat) != rows*cols {
		op.xhat, op.invStd = make([]float64, rows*cols), make([]float64, rows)
	}
	out := op.out.get(ds[0].Dtype(), rows, cols)
	if ds[0].Dtype() == tensor.Float64 {
		lnForward(op, ds[0].Float64s(), cols)
		bnAffine(out.Float64s(), op.xhat, ds[1].Float64s(), ds[2].Float64s(), op.mask.Keep)
	} else {
		lnForward(op, ds[0].Float32s(), cols)
		bnAffine(out.Float32s(), op.xhat, ds[1].Float32s(), ds[2].Float32s(), op.mask.Keep)
	}
	return out, nil
}

func lnForward[T Float](op *lnOp, x []T, d int) {
	for r, k := range op.mask.Keep {
		xh := op.xhat[r*d : (r+1)*d]
		if !k {
			clear(xh)
			op.invStd[r] = 0
			continue
		}
		mu := 0.0
		for _, v := range x[r*d : (r+1)*d] {
			mu += float64(v)
		}
		mu /= float64(d)
		va := 0.0
		for _, v := range x[r*d : (r+1)*d] {
			va += (float64(v) - mu) * (float64(v) - mu)
		}
		inv := 1 / math.Sqrt(va/float64(d)+BNEps)
		op.invStd[r] = inv
		for c, v := range x[r*d : (r+1)*d] {
			xh[c] = (float64(v) - mu) * inv
		}
	}
}

func (op *lnOp) DiffWRT(int) []bool { return []bool{true, true, true} }
func (op *lnOp) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	res := make(gorgonia.Nodes, 3)
	for which := range res {
		n, err := gorgonia.ApplyOp(&lnGradOp{fwd: op, which: which}, in[1], grad)
		if err != nil {
			return nil, fmt.Errorf("%v gradient: %w", op, err)
		}
		res[which] = n
	}
	return res, nil
}

// lnGradOp: which 0: dx = (1/σ)(γ⊙dy − mean(γ⊙dy) − x̂·mean(γ⊙dy⊙x̂)) per kept row;
// which 1: dγ = Σ_rows dy⊙x̂; which 2: dβ = Σ_rows dy.
type lnGradOp struct {
	base
	fwd   *lnOp
	which int
	out   buffer
}

func (op *lnGradOp) Arity() int            { return 2 }
func (op *lnGradOp) String() string        { return fmt.Sprintf("LayerNormGrad{%d}", op.which) }
func (op *lnGradOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%s%p", op, op) }
func (op *lnGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *lnGradOp) Type() hm.Type {
	if op.which == 0 {
		return hm.NewFnType(vecT(), matT(), matT())
	}
	return hm.NewFnType(vecT(), matT(), vecT())
}
func (op *lnGradOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
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

func (op *lnGradOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
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
	var out *tensor.Dense
	if op.which == 0 {
		out = op.out.get(dy.Dtype(), rows, cols)
	} else {
		out = op.out.get(dy.Dtype(), cols)
	}
	if dy.Dtype() == tensor.Float64 {
		lnBackward(op, out.Float64s(), g.Float64s(), dy.Float64s(), cols)
	} else {
		lnBackward(op, out.Float32s(), g.Float32s(), dy.Float32s(), cols)
	}
	return out, nil
}

func lnBackward[T Float](op *lnGradOp, dst, gamma, dy []T, d int) {
	f := op.fwd
	if op.which > 0 {
		clear(dst)
	}
	for r, k := range f.mask.Keep {
		xh := f.xhat[r*d : (r+1)*d]
		g := dy[r*d : (r+1)*d]
		switch op.which {
		case 1:
			if k {
				for c := range dst {
					dst[c] += T(float64(g[c]) * xh[c])
				}
			}
			continue
		case 2:
			if k {
				for c := range dst {
					dst[c] += g[c]
				}
			}
			continue
		}
		o := dst[r*d : (r+1)*d]
		if !k {
			clear(o)
			continue
		}
		m1, m2 := 0.0, 0.0
		for c := range o {
			gg := float64(gamma[c]) * float64(g[c])
			m1 += gg
			m2 += gg * xh[c]
		}
		m1 /= float64(d)
		m2 /= float64(d)
		for c := range o {
			o[c] = T(f.invStd[r] * (float64(gamma[c])*float64(g[c]) - m1 - xh[c]*m2))
		}
	}
}
