package train

import (
	"fmt"
	"io"

	"github.com/rewiregnn/rewiregnn/gpu"
	"github.com/rewiregnn/rewiregnn/internal/memlimit"
	"github.com/rewiregnn/rewiregnn/memplan"
	"github.com/rewiregnn/rewiregnn/models"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/prep"
)

// The memory plan of a run (train -plan): what the memory guard estimates on the CPU, with and
// without activation recomputation, what the GPU executor's plan holds on the device, and the
// largest batch size that fits a budget, all from the preprocessed data and the compiled nets'
// plans, without training.

// PlanMemory preprocesses o.Run's data and plans its memory against budget (bytes; 0: what this
// machine makes available). With the cache it reads only the graphs' sizes (the cache files are
// built chunk by chunk where missing), so the plan of a split too large for memory can be made;
// without it, or with a subset, it loads the graphs. Nothing is trained and no run directory is
// written.
func PlanMemory(o Options, budget int64) (*memplan.Plan, error) {
	c := o.Run
	r := &run{o: o, cfg: c, log: o.Log}
	if r.log == nil {
		r.log = io.Discard
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := ResolveRadius(c, r.log, o.Workers); err != nil {
		return nil, err
	}
	if err := Resolve(c); err != nil {
		return nil, err
	}
	if budget <= 0 {
		l, err := memlimit.Available()
		if err != nil {
			return nil, fmt.Errorf("plan: %w (give the budget with -budget SIZE)", err)
		}
		budget = l.Bytes
	}
	build, _, err := r.dataAndModel(true) // the graphs' sizes, without holding the split
	if err != nil {
		return nil, err
	}
	bs := c.Train.BatchSize
	pl := &memplan.Plan{Name: c.RunName(), BatchSize: bs, Budget: budget, Layers: c.Model.Layers}
	for _, rc := range []bool{false, true} {
		need := func(b int) (int64, error) {
			e, err := r.mem().Estimate(build, b, rc)
			return e.Need(), err
		}
		est, err := r.mem().Estimate(build, bs, rc)
		if err != nil {
			return nil, err
		}
		fits, err := memplan.LargestFit(need, bs, est.Need(), budget)
		if err != nil {
			return nil, err
		}
		if rc {
			pl.CPURecompute, pl.FitsCPURecompute = est, fits
		} else {
			pl.CPU, pl.FitsCPU = est, fits
		}
	}
	if pl.GPU, err = r.gpuEstimate(build, bs); err != nil {
		return nil, err
	}
	gneed := func(b int) (int64, error) {
		g, err := r.gpuEstimate(build, b)
		return g.Total(), err
	}
	if pl.FitsGPU, err = memplan.LargestFit(gneed, bs, pl.GPU.Total(), budget); err != nil {
		return nil, err
	}
	return pl, nil
}

// model returns the run's BuildFunc (and sets its IO and parameter count), on the training
// graphs' degree statistics once they are loaded.
func (r *run) model() (nn.BuildFunc, error) {
	var build nn.BuildFunc
	var err error
	if r.io, build, r.params, err = models.FromConfig(r.cfg, r.spec); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if r.train == nil { // a memory plan, or the guard before the graphs are loaded
		return build, nil
	}
	// The network reads the training graphs' degree statistics (PNA's δ); every model is built
	// on them, the others ignore them.
	r.io.AvgLogDeg = nn.AvgLogDegree(r.train)
	if build, _, err = models.Build(r.cfg.Model, r.io); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	return build, nil
}

// gpuEstimate plans the device memory at batch size bs from the GPU executor's plans of the
// nets of the buckets the run uses and of its large evaluation batches.
func (r *run) gpuEstimate(build nn.BuildFunc, bs int) (memplan.GPUEstimate, error) {
	g := memplan.GPUEstimate{Params: int64(r.params) * 12} // value and Adam's two moments, float32
	buckets, train, eval, p, err := r.mem().UsedNets(bs)
	if err != nil {
		return g, err
	}
	opts, err := r.cfg.GPUOptions()
	if err != nil {
		return g, err
	}
	for i, b := range buckets {
		for _, tr := range []bool{true, false} {
			if (tr && !train[i]) || (!tr && !eval[i]) {
				continue
			}
			n, err := build(p, b, tr)
			if err != nil {
				return g, fmt.Errorf("memory plan, bucket %v: %w", b, err)
			}
			pl, err := gpu.CompileWith(n, p, opts)
			if err != nil {
				return g, fmt.Errorf("memory plan, bucket %v: %w", b, err)
			}
			if pl.Bytes() > g.Activations {
				g.Activations, g.ActEdges, g.ActTrain = pl.Bytes(), b.Edges, tr
			}
			g.Holders += n.In.Bytes()
			n.Close()
		}
	}
	// The net of the large evaluation batches (evalbatch.go), at the size Options.EvalBatch
	// allows; a run halves it where the device has less room.
	if b, ok := groupBucket([][]prep.GraphSize{r.sizes[1], r.sizes[2], r.sizes[0]}, bs, evalBatchFor(r.o.EvalBatch, bs)); ok {
		n, err := build(p, b, false)
		if err != nil {
			return g, fmt.Errorf("memory plan, large evaluation bucket %v: %w", b, err)
		}
		pl, err := gpu.CompileWith(n, p, opts)
		if err != nil {
			return g, fmt.Errorf("memory plan, large evaluation bucket %v: %w", b, err)
		}
		if pl.Bytes() > g.Activations {
			g.Activations, g.ActEdges, g.ActTrain = pl.Bytes(), b.Edges, false
		}
		g.Holders += n.In.Bytes()
		n.Close()
	}
	return g, nil
}
