package train

import (
	"fmt"
	"runtime"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/gpu"
	"github.com/rewiregnn/rewiregnn/nn"
)

// stepper is what the training loop trains and evaluates through: the CPU trainer, or the
// GPU executor on the same nets.
type stepper interface {
	StepPred(bt *data.Batch) (float64, []float64, error)
	Eval(bt *data.Batch) (float64, []float64, error)
	// Sync brings the parameters, optimiser moments and running statistics to the host
	// (before a checkpoint or the result).
	Sync() error
}

// cpuStepper is the CPU trainer, whose state lives on the host.
type cpuStepper struct{ *nn.Trainer }

func (cpuStepper) Sync() error { return nil }

// probeGPU opens the GPU for cuda and auto runs; tests replace it.
var probeGPU gpu.Prober = gpu.ProbeCUDA

// chooseDevice resolves the config's device before the data is loaded, so that -device cuda
// without a GPU fails at once.
func (r *run) chooseDevice() error {
	ch, err := gpu.Choose(r.cfg.Device, probeGPU)
	if err != nil {
		return err
	}
	r.choice = ch
	return nil
}

// attachDevice puts the built (and possibly restored) trainer on the chosen device.
func (r *run) attachDevice() error {
	if r.choice.Backend == nil {
		r.step = cpuStepper{r.tr}
		return nil
	}
	g, err := gpu.NewTrainer(r.tr, r.choice.Backend)
	if err != nil {
		return fmt.Errorf("%s: %w", r.choice.Note, err)
	}
	r.gpu, r.step = g, g
	return nil
}

// deviceName is the device as result.json records it.
func (r *run) deviceName() string {
	if r.choice.Backend == nil {
		return fmt.Sprintf("cpu (%d threads)", runtime.GOMAXPROCS(0))
	}
	return r.choice.Backend.String()
}

// closeDevice frees the GPU trainer and releases the device.
func (r *run) closeDevice() {
	if r.gpu != nil {
		r.gpu.Close()
	}
	if c, ok := r.choice.Backend.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}
