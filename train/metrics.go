package train

import (
	"math"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/metric"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// Meter accumulates one split's loss and metric over the batches of an epoch, with the reductions
// of docs/protocol.md §"Losses and metrics": the loss, MAE and the SBM accuracy are unweighted
// means over batches; accuracy is correct/total over the split. Its fields are exported so a
// checkpoint can carry a half-finished epoch.
type Meter struct {
	Metric    string
	Classes   int
	Batches   int
	LossSum   float64
	MetricSum float64 // per-batch MAE or SBM accuracy, summed
	Correct   int
	Total     int
	Confusion []int64 // Classes×Classes over the split, SBM only (whole-split balanced accuracy)
}

// NewMeter returns an empty meter for metric over classes (0 for regression).
func NewMeter(metric string, classes int) *Meter {
	m := &Meter{Metric: metric, Classes: classes}
	if metric == runfiles.MetricWeightedAcc {
		m.Confusion = make([]int64, classes*classes)
	}
	return m
}

// Add records one batch: its loss and the predictions of its real rows (graphs, or nodes for
// node-level tasks; pred has Out values per row).
func (m *Meter) Add(loss float64, pred []float64, bt *data.Batch) {
	m.Batches++
	m.LossSum += loss
	switch m.Metric {
	case runfiles.MetricMAE:
		s := 0.0
		for g := 0; g < bt.NumGraphs; g++ {
			s += math.Abs(pred[g] - float64(bt.Y[g]))
		}
		m.MetricSum += s / float64(bt.NumGraphs)
	case runfiles.MetricAccuracy:
		for g, y := range bt.Labels {
			if argmax(pred[g*m.Classes:(g+1)*m.Classes]) == int(y) {
				m.Correct++
			}
			m.Total++
		}
	case runfiles.MetricWeightedAcc:
		labels := bt.Union.NodeLabel
		preds := make([]int32, 0, len(labels))
		ys := make([]int32, 0, len(labels))
		for v, y := range labels {
			if y < 0 { // the CLS node
				continue
			}
			p := int32(argmax(pred[v*m.Classes : (v+1)*m.Classes]))
			preds, ys = append(preds, p), append(ys, y)
			m.Confusion[int(y)*m.Classes+int(p)]++
		}
		m.MetricSum += metric.SBMAccuracy(ys, preds)
	}
}

// Loss is the mean loss over batches.
func (m *Meter) Loss() float64 { return m.LossSum / float64(max(m.Batches, 1)) }

// Value is the split's metric: MAE, or accuracy in %.
func (m *Meter) Value() float64 {
	if m.Metric == runfiles.MetricAccuracy {
		return 100 * float64(m.Correct) / float64(max(m.Total, 1))
	}
	return m.MetricSum / float64(max(m.Batches, 1))
}

// Balanced is the whole-split balanced accuracy in % (the mean per-class recall over the
// classes present), the second SBM figure beside the per-batch one.
func (m *Meter) Balanced() float64 {
	k := m.Classes
	sum, present := 0.0, 0
	for c := 0; c < k; c++ {
		var n int64
		for p := 0; p < k; p++ {
			n += m.Confusion[c*k+p]
		}
		if n > 0 {
			sum += float64(m.Confusion[c*k+c]) / float64(n)
			present++
		}
	}
	return 100 * sum / float64(max(present, 1))
}

func argmax(xs []float64) int {
	best := 0
	for i, x := range xs {
		if x > xs[best] {
			best = i
		}
	}
	return best
}
