// Package metric holds the benchmark's metric definitions that both sides of the project need:
// the trainer scores with them, the reports recompute them from saved predictions. Standard
// library only.
package metric

import "slices"

// SBMAccuracy is benchmarking-gnns' per-batch accuracy_SBM (docs/protocol.md
// §"Losses and metrics"), literally: the confusion matrix CM runs over the sorted labels present in
// targets ∪ predictions (K of them); for r = 0..K−1, rec_r = CM[r][r] / #{i : y_i = r}, or 0 when
// no target equals r (r is used both as a position in CM and as a label value, as in the reference
// code); the result is 100·Σ rec_r / K.
func SBMAccuracy(targets, preds []int32) float64 {
	set := append(slices.Clone(targets), preds...)
	slices.Sort(set)
	set = slices.Compact(set)
	k := len(set)
	if k == 0 {
		return 0
	}
	pos := make(map[int32]int, k)
	for i, c := range set {
		pos[c] = i
	}
	diag := make([]int, k)
	count := make([]int, k)
	for i, y := range targets {
		if pos[y] == pos[preds[i]] {
			diag[pos[y]]++
		}
		if int(y) < k {
			count[y]++
		}
	}
	sum := 0.0
	for r := 0; r < k; r++ {
		if count[r] > 0 {
			sum += float64(diag[r]) / float64(count[r])
		}
	}
	return 100 * sum / float64(k)
}
