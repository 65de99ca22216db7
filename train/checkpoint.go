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
	// Config is the resolved config the run was trained with (config.Run.YAML), so that a resume
	// under another one is refused by name; empty in checkpoints written before it was added.
	Config []byte
	// ConfigHash and Departures are the run's provenance when the checkpoint was written: its
	// config hash and the departures in force over its sessions so far. A session stopped
	// before it recorded an epoch leaves them nowhere else, and the config.yaml it rewrote
	// holds its values, not the protocol's. Empty in checkpoints written before they were added.
	ConfigHash string
	Departures []runfiles.Departure
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
		if len(vals) != t.Shape().TotalSize() {
			return fmt.Errorf("checkpoint: parameter %q has %d values for shape %v", name, len(vals), t.Shape())
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
	if err := c.checkMoments(p); err != nil {
		return err
	}
	p.Step = c.Step
	opt.SetState(c.Adam)
	return nil
}

// checkMoments reports Adam moments of a parameter the model lacks or of the wrong length.
func (c *Checkpoint) checkMoments(p *nn.Params) error {
	for kind, ms := range map[string]map[string][]float64{"first": c.Adam.M, "second": c.Adam.V} {
		for name, m := range ms {
			t, ok := p.T[name]
			if !ok || len(m) != t.Shape().TotalSize() {
				return fmt.Errorf("checkpoint: Adam %s moment %q has %d values, the model's parameter %s", kind, name, len(m), describeParam(t, ok))
			}
		}
	}
	return nil
}

func describeParam(t *tensor.Dense, ok bool) string {
	if !ok {
		return "does not exist"
	}
	return fmt.Sprintf("has shape %v", t.Shape())
}

// CheckLoop reports a loop state that does not fit a run of nTrain training graphs in nb
// batches per epoch with the training meter want: a negative epoch or count, a position
// outside the epoch, an order that is not a permutation of the training graphs, or a meter of
// another metric or width.
func (l *Loop) CheckLoop(nTrain, nb int, want *Meter) error {
	switch {
	case l.Epoch < 0 || l.Resumed < 0:
		return fmt.Errorf("checkpoint: loop at epoch %d after %d resumptions", l.Epoch, l.Resumed)
	case l.Perm == nil:
		return nil
	case len(l.Perm) != nTrain:
		return fmt.Errorf("checkpoint: the epoch's order has %d graphs, the run %d training graphs", len(l.Perm), nTrain)
	case l.Next < 0 || l.Next > nb:
		return fmt.Errorf("checkpoint: next batch %d outside the epoch's %d batches", l.Next, nb)
	case l.Train == nil:
		return fmt.Errorf("checkpoint: the epoch's order without its training meter")
	case l.Train.Metric != want.Metric || l.Train.Classes != want.Classes || len(l.Train.Confusion) != len(want.Confusion) ||
		len(l.Train.Scores) != len(l.Train.Labels) || len(l.Train.Scores)%max(want.Classes, 1) != 0:
		return fmt.Errorf("checkpoint: the epoch's training meter (%s, %d classes, %d confusion counts, %d scores, %d labels) does not fit the run's (%s, %d classes)",
			l.Train.Metric, l.Train.Classes, len(l.Train.Confusion), len(l.Train.Scores), len(l.Train.Labels), want.Metric, want.Classes)
	}
	seen := make([]bool, nTrain)
	for i, j := range l.Perm {
		if j < 0 || int(j) >= nTrain || seen[j] {
			return fmt.Errorf("checkpoint: the epoch's order is not a permutation of the %d training graphs (entry %d is %d)", nTrain, i, j)
		}
		seen[j] = true
	}
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
