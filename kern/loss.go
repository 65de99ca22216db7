package kern

import "math"

// The losses (ops.MaskedL1, ops.WeightedCE; GPU twins: the launchers of the same names in
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
