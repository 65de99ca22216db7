package main

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/nn"
)

// stepper trains on one batch as gpu.Trainer.StepAhead does: launching it unless the call
// before did, and while the device computes, taking the next batch from next and launching it
// behind (ahead). *gpu.Trainer is one.
type stepper interface {
	StepAhead(bt *data.Batch, next func() *data.Batch) (float64, []float64, bool, error)
}

// cpuStepper is the CPU trainer as a stepper: nothing to overlap, next is taken after the step
// and trained in turn.
type cpuStepper struct{ tr *nn.Trainer }

func (c cpuStepper) StepAhead(bt *data.Batch, next func() *data.Batch) (float64, []float64, bool, error) {
	loss, pred, err := c.tr.StepPred(bt)
	if err == nil && next != nil {
		next()
	}
	return loss, pred, false, err
}

// trainBatches trains on every batch next returns, as cmd/train's loop does: each batch is
// taken from next, staged and launched while the step before it runs. each (nil: none) sees
// every batch before its step.
func trainBatches(s stepper, next func() (*data.Batch, error), each func(*data.Batch) error) error {
	bt, err := next()
	for k := 0; err == nil && bt != nil; k++ {
		if each != nil {
			if err := each(bt); err != nil {
				return err
			}
		}
		var nb *data.Batch
		var nerr error
		_, _, _, serr := s.StepAhead(bt, func() *data.Batch {
			nb, nerr = next()
			return nb
		})
		if serr != nil {
			return fmt.Errorf("batch %d: %w", k, serr)
		}
		bt, err = nb, nerr
	}
	return err
}
