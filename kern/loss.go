package kern

import "math"

// The losses (ops.MaskedL1, ops.MaskedBCE, ops.WeightedCE; GPU twins: the launchers of the same names in
// cuda/ops.go). Each loss is summed in float64 over the rows in order, on one goroutine, and
// rounded to T once; g, the upstream gradient of the loss, is a float64 scalar.

// MaskedL1 writes out[0] = Σ_i w[i]·|p[i] − y[i]| over n entries, summed in float64.
func MaskedL1[T Float](out, p, y, w []T, n int) {
	s := 0.0
	for i := range p[:n] {
		s += float64(w[i]) * math.Abs(float64(p[i])-float64(y[i]))
	}
	out[0] = T(s)
}

// MaskedL1Backward writes dp = g·w ⊙ sign(p − y) over n entries (0 where p = y, as PyTorch),
// the product taken in float64.
func MaskedL1Backward[T Float](dp, p, y, w []T, g float64, n int) {
	for i := range dp[:n] {
		s := 0.0
		if p[i] > y[i] {
			s = 1
		} else if p[i] < y[i] {
			s = -1
		}
		dp[i] = T(g * float64(w[i]) * s)
	}
}

// MaskedBCE writes out[0] = Σ_i w[i]·ℓ(z[i], y[i]) over n entries, summed in float64 in order,
// with ℓ the binary cross-entropy of a logit z against a target y (BCEWithLogits):
// ℓ(z, y) = max(z, 0) − z·y + log(1 + e^(−|z|)), which neither overflows nor loses the small
// terms for large |z|. Entries with w = 0 add nothing (a missing label carries w = 0, y = 0).
func MaskedBCE[T Float](out, z, y, w []T, n int) {
	s := 0.0
	for i := range z[:n] {
		s += float64(w[i]) * bceTerm(float64(z[i]), float64(y[i]))
	}
	out[0] = T(s)
}

// MaskedBCEBackward writes dz = g·w ⊙ (σ(z) − y) over n entries, in float64 rounded to T once.
func MaskedBCEBackward[T Float](dz, z, y, w []T, g float64, n int) {
	for i := range dz[:n] {
		dz[i] = T(g * float64(w[i]) * (sigmoid64(float64(z[i])) - float64(y[i])))
	}
}

// bceTerm is ℓ(z, y) = max(z, 0) − z·y + log1p(e^(−|z|)).
func bceTerm(z, y float64) float64 {
	return math.Max(z, 0) - z*y + math.Log1p(math.Exp(-math.Abs(z)))
}

// sigmoid64 is σ(z) = 1/(1 + e^(−z)), through e^z/(1 + e^z) for z < 0 so no e^(−z) overflows.
func sigmoid64(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// WeightedCE writes out[0] = Σ_i w[i]·(−log softmax(z_i)[labels[i]]) / Σ_i w[i] for logits z
// [r, cl], over the rows with labels[i] ≥ 0 (labels < cl; −1: none) and w[i] ≠ 0; 0 when the
// weights of the labelled rows sum to 0. Both sums and the log-sum-exp run in float64.
func WeightedCE[T Float](out, z []T, labels []int32, w []float64, r, cl int) {
	out[0] = T(weightedCE[T](z, labels[:r], w, cl, nil, 0))
}

// WeightedCEBackward writes dz [r, cl] = g·w[i]/Σw·(softmax(z_i) − onehot(labels[i])) on the
// rows WeightedCE counts and 0 on the others, in float64 rounded to T per value.
func WeightedCEBackward[T Float](dz, z []T, labels []int32, w []float64, g float64, r, cl int) {
	weightedCE(z, labels[:r], w, cl, dz[:r*cl], g)
}

// weightedCE returns the loss; with grad non-nil it also writes g·∂loss/∂z into grad.
func weightedCE[T Float](z []T, labels []int32, weights []float64, cols int, grad []T, g float64) float64 {
	total := 0.0
	for i, y := range labels {
		if y >= 0 {
			total += weights[i]
		}
	}
	clear(grad)
	if total == 0 {
		return 0
	}
	loss := 0.0
	for i, y := range labels {
		w := weights[i]
		if y < 0 || w == 0 {
			continue
		}
		row := z[i*cols : (i+1)*cols]
		mx := float64(row[0])
		for _, v := range row[1:] {
			mx = math.Max(mx, float64(v))
		}
		sum := 0.0
		for _, v := range row {
			sum += math.Exp(float64(v) - mx)
		}
		logZ := mx + math.Log(sum)
		loss += w * (logZ - float64(row[y]))
		if grad != nil {
			scale := g * w / total
			gr := grad[i*cols : (i+1)*cols]
			for c, v := range row {
				gr[c] = T(scale * math.Exp(float64(v)-logZ))
			}
			gr[y] -= T(scale)
		}
	}
	return loss / total
}
