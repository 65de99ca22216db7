package train

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/rewiregnn/rewiregnn/gpuexec"
	"github.com/rewiregnn/rewiregnn/internal/peakmem"
	"github.com/rewiregnn/rewiregnn/runfiles"

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

// probeGPU opens the GPU for cuda and auto runs, probeEmu the emulated GPU for emu runs; tests
// replace them.
var (
	probeGPU gpu.Prober = gpu.ProbeCUDA
	probeEmu gpu.Prober = gpu.ProbeEmulated
)

// chooseDevice resolves the config's device before the data is loaded, so that -device cuda
// without a GPU (or -device emu without a C++ compiler) fails at once. The run's GPU options
// (train.precision and the gpu section, config.Run.GPUOptions) go to the device here, their one
// entrance (gpu.Choose): tf32 or bf16 on the CPU (device cpu, or auto without a GPU) is refused
// before anything else happens.
func (r *run) chooseDevice() error {
	opts, err := r.cfg.GPUOptions()
	if err != nil {
		return err
	}
	ch, err := gpu.Choose(r.cfg.Device, opts, probeGPU, probeEmu)
	if err != nil {
		return err
	}
	r.choice = ch // closeDevice releases it, whatever follows
	r.precisionNote = ch.PrecisionNote
	return nil
}

// attachDevice puts the built (and possibly restored) trainer on the chosen device.
func (r *run) attachDevice() error {
	if r.choice.Backend == nil {
		r.step = cpuStepper{r.tr}
		return nil
	}
	g, err := gpu.NewTrainerWith(r.tr, r.choice.Backend, r.choice.Options)
	if err != nil {
		return fmt.Errorf("%s: %w", r.choice.Note, err)
	}
	g.Log = r.log
	r.gpu, r.step = g, g
	return nil
}

// peakBytes is the most memory the run has held so far (runfiles.Epoch.PeakBytes): its GPU
// allocator's high-water mark, or on the CPU the process's peak resident set; 0 where neither
// is known.
func (r *run) peakBytes() int64 {
	if r.gpu != nil {
		peak, _, _, _ := r.gpu.Backend().Memory()
		return peak
	}
	return peakmem.Process()
}

// trainStep trains on batch b of the epoch's nb. On the CPU it assembles the batch and steps.
// On the GPU (gpu.Trainer.StepAhead) it launches the step unless the step before launched it,
// then, while the device runs, assembles batch b+1 of the same epoch (drawing its Laplacian
// signs) and launches its step behind b's unless more is false, then waits for b's results.
// Errors are those of the loop: a batch's as they are, a step's with the epoch and batch.
func (r *run) trainStep(b, nb int, more bool) (*data.Batch, float64, []float64, error) {
	if r.gpu == nil {
		bt, err := r.trainBatch(b)
		if err != nil {
			return nil, 0, nil, err
		}
		loss, pred, err := r.step.StepPred(bt)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("epoch %d batch %d: %w", r.loop.Epoch, b, err)
		}
		return bt, loss, pred, nil
	}
	bt := r.ahead.bt
	if bt == nil || r.ahead.b != b {
		if err := r.dropAhead(); err != nil {
			return nil, 0, nil, err
		}
		var err error
		if bt, err = r.trainBatch(b); err != nil {
			return nil, 0, nil, err
		}
	}
	r.ahead = ahead{}
	var next func() *data.Batch
	if more && b+1 < nb {
		next = func() *data.Batch {
			rng, err := r.pcg.MarshalBinary()
			if err != nil {
				return nil // assembled in turn
			}
			r.ahead = ahead{b: b + 1, rng: rng}
			r.ahead.bt, _ = r.trainBatch(b + 1) // on error assembled again in turn, reporting it then
			return r.ahead.bt
		}
	}
	loss, pred, launchedNext, err := r.gpu.StepAhead(bt, next)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("epoch %d batch %d: %w", r.loop.Epoch, b, err)
	}
	if !launchedNext {
		if err := r.dropAhead(); err != nil { // not staged: assembled again in turn
			return nil, 0, nil, err
		}
	}
	r.ahead.launched = launchedNext
	return bt, loss, pred, nil
}

// launchedAhead reports whether batch b's step was launched by the step before it (it must then
// be waited for and counted before the loop may stop).
func (r *run) launchedAhead(b int) bool { return r.ahead.launched && r.ahead.b == b }

// ahead is a training batch assembled (and its step launched on the GPU) before its turn,
// with the generator's state from before its Laplacian signs were drawn.
type ahead struct {
	bt       *data.Batch
	b        int
	rng      []byte
	launched bool // its step is launched (it can no longer be dropped)
}

// dropAhead forgets a batch assembled ahead and puts the generator back to before it, so that
// a checkpoint taken now resumes exactly as an uninterrupted run continues.
func (r *run) dropAhead() error {
	if r.ahead.launched {
		return fmt.Errorf("epoch %d: batch %d was launched ahead and cannot be dropped", r.loop.Epoch, r.ahead.b)
	}
	if r.ahead.rng != nil {
		if err := r.pcg.UnmarshalBinary(r.ahead.rng); err != nil {
			return fmt.Errorf("generator state: %w", err)
		}
	}
	r.ahead = ahead{}
	return nil
}

// deviceName is the device as result.json records it.
func (r *run) deviceName() string {
	if r.choice.Backend == nil {
		return fmt.Sprintf("cpu (%d threads)", runtime.GOMAXPROCS(0))
	}
	return r.choice.Backend.String()
}

// gpuRecord is result.json's record of the GPU options the run trained with (nil on the CPU):
// the options the device was chosen with, the CUDA graphs as the trainer replayed them (off
// where a capture failed) and the kernels' target.
func (r *run) gpuRecord() *runfiles.GPUOptions {
	if r.choice.Backend == nil {
		return nil
	}
	o := r.choice.Options
	rec := &runfiles.GPUOptions{Precision: string(o.Precision), EdgeFolds: o.EdgeFolds.String(), BatchedProducts: o.BatchedProducts,
		CUDAGraphs: o.Graphs, NarrowGradW: o.NarrowGradW, KernelDefines: strings.Join(o.KernelDefines, ","), Arch: o.Arch}
	if r.gpu != nil {
		rec.CUDAGraphs, _ = r.gpu.Graphs()
	}
	if c, ok := r.choice.Backend.(*gpuexec.CUDA); ok && c.Kernels != nil {
		rec.Kernels = c.Kernels.Target
	}
	return rec
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
