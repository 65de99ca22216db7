package main

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/nn"
)

// stepper trains on one batch, calling ahead (nil: none) while the device computes the step;
// Stage loads and queues a batch ahead of its step. *gpu.Trainer is one.
type stepper interface {
	StepAhead(bt *data.Batch, ahead func() error) (float64, []float64, error)
	Stage(bt *data.Batch) error
}

// cpuStepper is the CPU trainer as a stepper: nothing to overlap, ahead runs after the step.
type cpuStepper struct{ tr *nn.Trainer }

func (c cpuStepper) StepAhead(bt *data.Batch, ahead func() error) (float64, []float64, error) {
	loss, pred, err := c.tr.StepPred(bt)
	if err == nil && ahead != nil {
		err = ahead()
	}
	return loss, pred, err
}

func (cpuStepper) Stage(*data.Batch) error { return nil }

// trainBatches trains on every batch next returns, as cmd/train's loop does: each batch is
// taken from next and staged while the step before it runs. each (nil: none) sees every batch
// before its step.
func trainBatches(s stepper, next func() (*data.Batch, error), each func(*data.Batch) error) error {
	bt, err := next()
	for k := 0; err == nil && bt != nil; k++ {
		if each != nil {
			if err := each(bt); err != nil {
				return err
			}
		}
		var nb *data.Batch
		ahead := func() error {
			var err error
			if nb, err = next(); err != nil || nb == nil {
				return err
			}
			return s.Stage(nb)
		}
		if _, _, err := s.StepAhead(bt, ahead); err != nil {
			return fmt.Errorf("batch %d: %w", k, err)
		}
		bt = nb
	}
	return err
}
