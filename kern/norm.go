package kern

import "math"

// LayerNormRows normalises every kept row of x ([len(keep), d]) over its d features with the
// biased variance and eps: xhat = (x − μ)/σ and invStd = 1/σ per row (zeros on dropped rows).
func LayerNormRows[T Float](xhat, invStd []float64, x []T, d int, keep []bool, eps float64) {
	for r, k := range keep {
		xh := xhat[r*d : (r+1)*d]
		if !k {
			clear(xh)
			invStd[r] = 0
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
		inv := 1 / math.Sqrt(va/float64(d)+eps)
		invStd[r] = inv
		for c, v := range x[r*d : (r+1)*d] {
			xh[c] = (float64(v) - mu) * inv
		}
	}
}

// LayerNormGradRows is the gradient of a layer norm from the xhat and invStd of its forward
// pass (LayerNormRows) and the output gradient dy: which 0: dst = dx =
// (1/σ)(γ⊙dy − mean(γ⊙dy) − x̂·mean(γ⊙dy⊙x̂)) per kept row (0 on the others); which 1:
// dst = dγ = Σ_rows dy⊙x̂; which 2: dst = dβ = Σ_rows dy (kept rows only).
func LayerNormGradRows[T Float](which int, dst, gamma, dy []T, d int, xhat, invStd []float64, keep []bool) {
	if which > 0 {
		clear(dst)
	}
	for r, k := range keep {
		xh := xhat[r*d : (r+1)*d]
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
			o[c] = T(invStd[r] * (float64(gamma[c])*float64(g[c]) - m1 - xh[c]*m2))
		}
	}
}

// LayerNormAffine sets dst = γ⊙x̂+β on kept rows and 0 on the others.
func LayerNormAffine[T Float](dst []T, xhat []float64, gamma, beta []T, keep []bool) {
	cols := len(gamma)
	ParallelRange(len(keep), cols, func(lo, hi int) {
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

// LayerNormBufs are the buffers of one masked layer norm over rows×d: inputs X [rows, d],
// Gamma, Beta [d], Keep [rows]; outputs Out [rows, d], and Xhat [rows, d] and InvStd [rows]
// kept for the backward pass (in float64 on the CPU).
type LayerNormBufs[T Float] struct {
	X, Gamma, Beta []T
	Keep           []bool
	Out            []T
	Xhat, InvStd   []float64
}

// LayerNorm is the forward pass of a masked layer norm (cuda.Kernels.LayerNorm): Xhat and
// InvStd as LayerNormRows, then Out = γ⊙x̂+β on kept rows and 0 on the others.
func LayerNorm[T Float](b LayerNormBufs[T], rows, d int, eps float64) {
	keep := b.Keep[:rows]
	LayerNormRows(b.Xhat[:rows*d], b.InvStd[:rows], b.X[:rows*d], d, keep, eps)
	LayerNormAffine(b.Out[:rows*d], b.Xhat[:rows*d], b.Gamma[:d], b.Beta[:d], keep)
}

// LayerNormBackward is the backward pass of a layer norm (cuda.Kernels.LayerNormBackward) from
// the forward pass's Xhat and InvStd, b.Gamma, b.Keep and the output gradient dy: dx [rows, d],
// dgamma and dbeta [d] as LayerNormGradRows; an output passed as nil is not computed.
func LayerNormBackward[T Float](dx, dgamma, dbeta, dy []T, b LayerNormBufs[T], rows, d int) {
	keep, xhat, invStd := b.Keep[:rows], b.Xhat[:rows*d], b.InvStd[:rows]
	for which, dst := range [][]T{dx, dgamma, dbeta} {
		if dst != nil {
			LayerNormGradRows(which, dst[:[]int{rows * d, d, d}[which]], b.Gamma[:d], dy[:rows*d], d, xhat, invStd, keep)
		}
	}
}
