package train

import (
	"fmt"
	"math"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/metric"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// Meter accumulates one split's loss and metric over the batches of an epoch, with the reductions
// of docs/protocol.md §"Losses and metrics": the loss, the MAE of one target (ZINC, AQSOL) and the
// SBM accuracy are unweighted means over batches; accuracy is correct/total over the split; the
// MAE of several targets (Peptides-struct) is the mean over every entry of the split, as LRGB
// computes it; average precision is computed once over the whole split's scores. Its fields are exported so
// a checkpoint can carry a half-finished epoch.
type Meter struct {
	Metric    string
	Classes   int // the model's outputs per row: classes, labels (AP) or targets (MAE)
	Batches   int
	LossSum   float64
	MetricSum float64 // per-batch MAE of one target or SBM accuracy, summed
	AbsSum    float64 // MAE of several targets: |pred − y| summed over the split's entries, in order
	Entries   int     // MAE of several targets: the entries AbsSum holds
	Correct   int
	Total     int
	Confusion []int64   // Classes×Classes over the split, SBM only (whole-split balanced accuracy)
	Scores    []float64 // AP only: the split's logits so far, Classes per graph
	Labels    []float32 // AP only: their labels (NaN: missing)
}

// NewMeter returns an empty meter for metric over classes (the model's output width).
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
		if m.Classes > 1 {
			for i, y := range bt.Y {
				m.AbsSum += math.Abs(pred[i] - float64(y))
			}
			m.Entries += len(bt.Y)
			break
		}
		m.MetricSum += metric.MAE(pred[:len(bt.Y)], bt.Y)
	case runfiles.MetricAP:
		m.Scores = append(m.Scores, pred[:len(bt.Y)]...)
		m.Labels = append(m.Labels, bt.Y...)
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

// Value is the split's metric: MAE, accuracy in %, or average precision. The average precision
// of a split none of whose tasks has both a positive and a negative label is NaN (the trainer
// refuses such splits before training: CheckAPSplit).
func (m *Meter) Value() float64 {
	switch m.Metric {
	case runfiles.MetricAccuracy:
		return 100 * float64(m.Correct) / float64(max(m.Total, 1))
	case runfiles.MetricMAE:
		if m.Classes > 1 {
			return m.AbsSum / float64(max(m.Entries, 1))
		}
	case runfiles.MetricAP:
		ap, err := metric.AveragePrecision(m.Scores, m.Labels, m.Classes)
		if err != nil {
			return math.NaN()
		}
		return ap
	}
	return m.MetricSum / float64(max(m.Batches, 1))
}

// CheckAPSplit reports a split whose average precision is undefined: its graphs' labels (cols
// per graph) give no task both a positive and a negative label, or hold a value that is not 0,
// 1 or NaN.
func CheckAPSplit(split string, gs []*data.Graph, cols int) error {
	var labels []float32
	for i, g := range gs {
		if len(g.Y) != cols {
			return fmt.Errorf("%s split: graph %d has %d labels, the model predicts %d", split, i, len(g.Y), cols)
		}
		labels = append(labels, g.Y...)
	}
	if _, err := metric.AveragePrecision(make([]float64, len(labels)), labels, cols); err != nil {
		return fmt.Errorf("%s split: %w", split, err)
	}
	return nil
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
