package nn

import (
	"fmt"
	"math"

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
	st := &lnState{mask: mask}
	op := newFuncOp("LayerNorm", 3, sameAs(0), lnKernel[float64](st), lnKernel[float32](st))
	op.ranks = []int{2, 1, 1, 2}
	op.dev = DeviceOp{Mask: mask, State: st}
	op.check = func(s []tensor.Shape) error {
		if s[0][0] != len(mask.Keep) {
			return fmt.Errorf("%d rows, mask has %d", s[0][0], len(mask.Keep))
		}
		return nil
	}
	op.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		res := make(gorgonia.Nodes, 3)
		for which := range res {
			shape := sameAs(1) // dx has dy's shape, dγ and dβ γ's
			if which > 0 {
				shape = sameAs(0)
			}
			gop := newFuncOp(fmt.Sprintf("LayerNormGrad{%d}", which), 2, shape,
				lnGradKernel[float64](st, which), lnGradKernel[float32](st, which))
			gop.ranks = []int{1, 2, 2}
			if which > 0 {
				gop.ranks[2] = 1
			}
			gop.check = st.ready
			gop.dev = DeviceOp{Mask: mask, State: st, Which: which}
			n, err := apply(gop, in[1], g)
			if err != nil {
				return nil, err
			}
			res[which] = n
		}
		return res, nil
	}
	n, err := gorgonia.ApplyOp(op, x, gamma, beta)
	if err != nil {
		return nil, fmt.Errorf("layer norm: %w", err)
	}
	return n, nil
}

// lnState is what the forward pass keeps for the gradient ops: x̂ and 1/σ per row.
type lnState struct {
	mask   *Mask
	xhat   []float64
	invStd []float64
}

// ready checks that a forward pass of the gradient's shape ran (inputs γ and dy).
func (st *lnState) ready(s []tensor.Shape) error {
	if len(st.xhat) != s[1].TotalSize() {
		return fmt.Errorf("no forward pass of shape %v to differentiate", s[1])
	}
	return nil
}

func lnKernel[T Float](st *lnState) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) {
		rows, cols := s[0][0], s[0][1]
		st.xhat, st.invStd = scratch(&st.xhat, rows*cols), scratch(&st.invStd, rows)
		lnForward(st, in[0], cols)
		lnAffine(out, st.xhat, in[1], in[2], st.mask.Keep)
	}
}

func lnForward[T Float](st *lnState, x []T, d int) {
	for r, k := range st.mask.Keep {
		xh := st.xhat[r*d : (r+1)*d]
		if !k {
			clear(xh)
			st.invStd[r] = 0
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
		st.invStd[r] = inv
		for c, v := range x[r*d : (r+1)*d] {
			xh[c] = (float64(v) - mu) * inv
		}
	}
}

// lnGradKernel: which 0: dx = (1/σ)(γ⊙dy − mean(γ⊙dy) − x̂·mean(γ⊙dy⊙x̂)) per kept row;
// which 1: dγ = Σ_rows dy⊙x̂; which 2: dβ = Σ_rows dy.
func lnGradKernel[T Float](st *lnState, which int) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) { lnBackward(st, which, out, in[0], in[1], s[1][1]) }
}

func lnBackward[T Float](f *lnState, which int, dst, gamma, dy []T, d int) {
	if which > 0 {
		clear(dst)
	}
	for r, k := range f.mask.Keep {
		xh := f.xhat[r*d : (r+1)*d]
		g := dy[r*d : (r+1)*d]
		switch which {
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

// lnAffine sets dst = γ⊙x̂+β on kept rows and 0 on the others.
func lnAffine[T Float](dst []T, xhat []float64, gamma, beta []T, keep []bool) {
	cols := len(gamma)
	parallelRange(len(keep), cols, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			d := dst[r*cols : (r+1)*cols]
			if !keep[r] {
				clear(d)
				continue
			}
			xh := xhat[r*cols : (r+1)*cols]
			for c := range d {
				d[c] = gamma[c]*T(xh[c]) + beta[c]
			}
		}
	})
}
