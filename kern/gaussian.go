package kern

import "math"

// GaussianWeights is the CPU kernel of ops.GaussianWeights (MoNet's kernel weights; GPU twin:
// cuda/ops.go GaussianWeights): for pseudo-coordinates u [m, p], means mu and inverse standard
// deviations is [kk, p], w [m, kk] = exp(−½ Σ_c (u[i,c] − mu[j,c])²·is[j,c]²), the sum over c
// taken in float64 in column order from the differences computed in T.
func GaussianWeights[T Float](w, u, mu, is []T, m, kk, p int) {
	for i := 0; i < m; i++ {
		for j := 0; j < kk; j++ {
			acc := 0.0
			for c := 0; c < p; c++ {
				dv := float64(u[i*p+c] - mu[j*p+c])
				sv := float64(is[j*p+c])
				acc += dv * dv * sv * sv
			}
			w[i*kk+j] = T(math.Exp(-0.5 * acc))
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
