package kern

// GaussianWeights is the CPU kernel of ops.GaussianWeights (MoNet's kernel weights; GPU twin:
// cuda/ops.go GaussianWeights): for pseudo-coordinates u [m, p], means mu and inverse standard
// deviations is [kk, p], w [m, kk] = exp(−½ Σ_c (u[i,c] − mu[j,c])²·is[j,c]²), the sum over c
// taken in float64 in column order from the differences computed in T.
func GaussianWeights[T Float](w, u, mu, is []T, m, kk, p int) {
	var block [expBlock]float64 // the exponentials through Exps a block of rows at a time
	buf, rows := expRows(&block, kk)
	for i0 := 0; i0 < m; i0 += rows {
		i1 := min(i0+rows, m)
		b := buf[:(i1-i0)*kk]
		for i := i0; i < i1; i++ {
			for j := 0; j < kk; j++ {
				acc := 0.0
				for c := 0; c < p; c++ {
					dv := float64(u[i*p+c] - mu[j*p+c])
					sv := float64(is[j*p+c])
					acc += dv * dv * sv * sv
				}
				b[(i-i0)*kk+j] = -0.5 * acc
			}
		}
		Exps(b, b)
		for q, v := range b {
			w[i0*kk+q] = T(v)
		}
	}
}

// GaussianWeightsBackward writes the gradients du [m, p], dmu and dis [kk, p] of
// GaussianWeights from its output w and the output gradient g [m, kk]: with γ = g[i,j]·w[i,j]
// (a product in T), d = u[i,c] − mu[j,c] and s = is[j,c],
//
//	du[i,c] = −Σ_j γ·d·s²,   dmu[j,c] = Σ_i γ·d·s²,   dis[j,c] = −Σ_i γ·d²·s,
//
// each term computed in float64 and rounded to T before it is added, in the order of i, then
// j. The sums over i run in row order on one goroutine. A nil du, dmu or dis is not computed.
func GaussianWeightsBackward[T Float](du, dmu, dis, u, mu, is, w, g []T, m, kk, p int) {
	if du != nil {
		clear(du[:m*p])
	}
	if dmu != nil {
		clear(dmu[:kk*p])
	}
	if dis != nil {
		clear(dis[:kk*p])
	}
	for i := 0; i < m; i++ {
		for j := 0; j < kk; j++ {
			gw := float64(g[i*kk+j] * w[i*kk+j])
			for c := 0; c < p; c++ {
				dv := float64(u[i*p+c] - mu[j*p+c])
				sv := float64(is[j*p+c])
				if du != nil {
					du[i*p+c] -= T(gw * dv * sv * sv)
				}
				if dmu != nil {
					dmu[j*p+c] += T(gw * dv * sv * sv)
				}
				if dis != nil {
					dis[j*p+c] -= T(gw * dv * dv * sv)
				}
			}
		}
	}
}
