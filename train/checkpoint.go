package train

import (
	"fmt"
	"slices"

	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/ops"
	"github.com/rewiregnn/rewiregnn/runfiles"
	"gorgonia.org/tensor"
)

// Loop is the training loop's position and history: enough to continue a run exactly where it
// stopped, at an epoch boundary or inside an epoch.
type Loop struct {
	Epoch      int     // the epoch in progress, or the next one when Perm is nil
	Perm       []int32 // this epoch's order of the training graphs; nil at an epoch boundary
	Next       int     // first batch of Perm not trained yet
	Train      *Meter  // this epoch's training loss and metric so far
	EpochSecs  float64 // training seconds spent in this epoch so far
	Elapsed    float64 // wall seconds of the run before the current session
	TrainSecs  float64 // training seconds of the finished epochs (for seconds_per_epoch)
	Plateau    Plateau
	RNG        []byte // the shuffling and sign-flip generator
	Resumed    int
	Last       *runfiles.Epoch // the last finished epoch's record
	Preprocess float64
}

// Checkpoint is everything a run needs to resume: parameters, batch-norm statistics, dropout
// seeds, optimiser and loop state.
type Checkpoint struct {
	Run       string
	Seed      int64
	Params    map[string][]float64
	Shapes    map[string][]int
	BNMean    map[string][]float64
	BNVar     map[string][]float64
	DropSeeds map[string]uint64
	Step      uint64
	Adam      nn.AdamState
	Loop      Loop
}

// Capture copies the model and optimiser state.
func Capture(run string, seed int64, p *nn.Params, opt *nn.Adam, loop Loop) *Checkpoint {
	c := &Checkpoint{Run: run, Seed: seed, Params: map[string][]float64{}, Shapes: map[string][]int{},
		BNMean: map[string][]float64{}, BNVar: map[string][]float64{}, DropSeeds: map[string]uint64{},
		Step: p.Step, Adam: opt.State(), Loop: loop}
	for name, t := range p.T {
		c.Params[name] = ops.Values(t)
		c.Shapes[name] = slices.Clone([]int(t.Shape()))
	}
	for name, s := range p.BN {
		c.BNMean[name], c.BNVar[name] = slices.Clone(s.RunMean), slices.Clone(s.RunVar)
	}
	for name, s := range p.Drop {
		c.DropSeeds[name] = s.Seed
	}
	return c
}

// Restore writes the checkpoint's state into p and opt, whose networks must already be built
// (so every tensor exists): names and shapes must match.
func (c *Checkpoint) Restore(p *nn.Params, opt *nn.Adam) error {
	if len(c.Params) != len(p.T) {
		return fmt.Errorf("checkpoint has %d parameter tensors, the model %d", len(c.Params), len(p.T))
	}
	for name, t := range p.T {
		vals, ok := c.Params[name]
		if !ok || !slices.Equal(c.Shapes[name], []int(t.Shape())) {
			return fmt.Errorf("checkpoint: parameter %q missing or of shape %v, the model has %v", name, c.Shapes[name], t.Shape())
		}
		switch t.Dtype() {
		case tensor.Float64:
			copy(t.Float64s(), vals)
		default:
			d := t.Float32s()
			for i, v := range vals {
				d[i] = float32(v)
			}
		}
	}
	for name, s := range p.BN {
		m, v := c.BNMean[name], c.BNVar[name]
		if len(m) != len(s.RunMean) || len(v) != len(s.RunVar) {
			return fmt.Errorf("checkpoint: batch-norm statistics %q missing or of the wrong width", name)
		}
		copy(s.RunMean, m)
		copy(s.RunVar, v)
	}
	for name, s := range p.Drop {
		seed, ok := c.DropSeeds[name]
		if !ok {
			return fmt.Errorf("checkpoint: dropout site %q missing", name)
		}
		s.Seed = seed
	}
	p.Step = c.Step
	opt.SetState(c.Adam)
	return nil
}

// ReadCheckpoint reads and verifies a checkpoint (the container of runfiles.ReadCheckpoint).
func ReadCheckpoint(path string) (*Checkpoint, error) {
	c := &Checkpoint{}
	if err := runfiles.ReadCheckpoint(path, c); err != nil {
		return nil, err
	}
	return c, nil
}
