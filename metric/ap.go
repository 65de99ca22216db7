package metric

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// AveragePrecision is the multi-task average precision of LRGB's Peptides-func (the OGB
// evaluator's eval_ap, which LRGB uses; docs/protocol.md §"Losses and metrics"): scores and
// labels are rows×cols (row-major, one row per graph, one column per task); a label is 1
// (positive), 0 (negative) or NaN (missing). Each task with at least one positive and one
// negative labelled entry contributes the average precision of its labelled entries
// (TaskAP); the result is the mean over those tasks. It fails when no task qualifies, or on a
// label that is not 0, 1 or NaN.
func AveragePrecision(scores []float64, labels []float32, cols int) (float64, error) {
	if cols < 1 || len(scores) != len(labels) || len(labels)%cols != 0 {
		return 0, fmt.Errorf("average precision: %d scores and %d labels in %d columns", len(scores), len(labels), cols)
	}
	sum, tasks := 0.0, 0
	s := make([]float64, 0, len(labels)/cols)
	y := make([]bool, 0, len(labels)/cols)
	for c := 0; c < cols; c++ {
		s, y = s[:0], y[:0]
		pos, neg := 0, 0
		for i := c; i < len(labels); i += cols {
			switch v := labels[i]; {
			case v != v: // missing
				continue
			case v == 1:
				pos++
			case v == 0:
				neg++
			default:
				return 0, fmt.Errorf("average precision: row %d, task %d: label %g, want 0, 1 or NaN (missing)", i/cols, c, v)
			}
			if math.IsNaN(scores[i]) {
				return 0, fmt.Errorf("average precision: row %d, task %d: the score is NaN", i/cols, c)
			}
			s, y = append(s, scores[i]), append(y, labels[i] == 1)
		}
		if pos == 0 || neg == 0 {
			continue
		}
		sum += TaskAP(s, y)
		tasks++
	}
	if tasks == 0 {
		return 0, fmt.Errorf("average precision: none of the %d tasks has both a positive and a negative label", cols)
	}
	return sum / float64(tasks), nil
}

// TaskAP is the average precision of one task, as scikit-learn's average_precision_score: with
// the distinct scores as thresholds in decreasing order, AP = Σ_n (R_n − R_{n−1})·P_n, where
// P_n and R_n are the precision and recall of predicting positive every entry scoring at least
// the n-th threshold (entries of equal score enter together) and R_0 = 0. It is NaN without a
// positive entry.
func TaskAP(scores []float64, positive []bool) float64 {
	order := make([]int, len(scores))
	total := 0
	for i := range order {
		order[i] = i
		if positive[i] {
			total++
		}
	}
	if total == 0 {
		return math.NaN()
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
	ap, tp, seen, lastRecall := 0.0, 0, 0, 0.0
	for i := 0; i < len(order); {
		j := i
		for ; j < len(order) && (j == i || scores[order[j]] == scores[order[i]]); j++ {
			if positive[order[j]] {
				tp++
			}
		}
		seen += j - i
		recall := float64(tp) / float64(total)
		ap += (recall - lastRecall) * float64(tp) / float64(seen)
		lastRecall, i = recall, j
	}
	return ap
}

// MAE is the mean absolute error over all entries of pred and y (equal lengths: graphs ×
// targets), summed in order in float64.
func MAE(pred []float64, y []float32) float64 {
	s := 0.0
	for i, p := range pred {
		s += math.Abs(p - float64(y[i]))
	}
	return s / float64(max(len(pred), 1))
}
