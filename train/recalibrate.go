package train

import (
	"fmt"
	"io"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/nn"
)

// Recalibration is a run's final model evaluated on its training split in evaluation mode twice:
// with the batch-norm running statistics training left (what result.json's train_metric holds)
// and with statistics re-estimated from the training split with the parameters frozen
// (Recalibrate). Metrics are in result.json's units (accuracy in percent, MAE as it is).
type Recalibration struct {
	Run          string  `json:"run"`
	Seed         int64   `json:"seed"`
	Metric       string  `json:"metric"`
	Stored       float64 `json:"stored"`       // eval mode, the running statistics of training
	Recalibrated float64 `json:"recalibrated"` // eval mode, the re-estimated statistics
	Batches      int     `json:"batches"`      // training batches the statistics were averaged over
	Graphs       int     `json:"graphs"`
}

// Recalibrate re-estimates every batch norm's running statistics of tr's model from the batches
// bs with the parameters frozen: it zeroes them, runs each batch forward through the
// evaluation net (no gradients, no optimiser step, no dropout, no Laplacian sign flip) with batch
// norm on the batch's own statistics, and leaves as running statistics the mean over the batches
// of the batch means and unbiased variances (ops.BNState.StartCalibration). Parameters,
// optimiser state and step count are untouched, so is the training flag of every batch norm. A
// report's tool (RecalibrateRun), on the CPU: training never calls it.
func Recalibrate(tr *nn.Trainer, bs []*data.Batch) error {
	was := map[string]bool{}
	for name, s := range tr.P.BN {
		was[name] = s.Training
		s.Training = true
		s.StartCalibration()
	}
	defer func() {
		for name, s := range tr.P.BN {
			s.StopCalibration()
			s.Training = was[name]
		}
	}()
	for i, bt := range bs {
		b, err := nn.PickBucket(tr.Buckets, bt)
		if err != nil {
			return fmt.Errorf("recalibrate: batch %d: %w", i, err)
		}
		n, err := tr.EvalNet(b)
		if err != nil {
			return fmt.Errorf("recalibrate: batch %d: %w", i, err)
		}
		if _, err := n.Run(bt); err != nil {
			return fmt.Errorf("recalibrate: batch %d: %w", i, err)
		}
	}
	return nil
}

// RecalibrateRun loads a run directory's final model from its checkpoint (restoreRun) and
// evaluates its training split, in the order and batches of the run's final evaluation, with the
// stored running statistics and again after Recalibrate on those batches. It writes nothing into
// the directory and changes nothing there.
func RecalibrateRun(dir string, workers int, log io.Writer) (*Recalibration, error) {
	r, err := restoreRun(dir, workers, log)
	if err != nil {
		return nil, fmt.Errorf("recalibrate %s: %w", dir, err)
	}
	defer r.tr.Close()
	trainB, err := batches(r.train, r.cfg.Train.BatchSize)
	if err != nil {
		return nil, fmt.Errorf("recalibrate %s: %w", dir, err)
	}
	out := &Recalibration{Run: r.cfg.RunName(), Seed: r.o.Seed, Metric: r.metric, Batches: len(trainB), Graphs: len(r.train)}
	stored, err := r.evaluate(trainB)
	if err != nil {
		return nil, fmt.Errorf("recalibrate %s: stored statistics: %w", dir, err)
	}
	if err := Recalibrate(r.tr, trainB); err != nil {
		return nil, fmt.Errorf("recalibrate %s: %w", dir, err)
	}
	recal, err := r.evaluate(trainB)
	if err != nil {
		return nil, fmt.Errorf("recalibrate %s: recalibrated statistics: %w", dir, err)
	}
	out.Stored, out.Recalibrated = stored.Value(), recal.Value()
	return out, nil
}
