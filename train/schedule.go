package train

import (
	"math"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// Plateau is PyTorch's ReduceLROnPlateau as benchmarking-gnns uses it (docs/protocol.md
// §"Learning-rate schedule"): mode min, relative threshold 1e-4, cooldown 0, no lower bound, eps
// 1e-8. After Patience+1 consecutive epochs without a relative improvement of the best value, the
// rate is multiplied by Factor (unless the change would be at most Eps) and the count restarts.
type Plateau struct {
	LR       float64
	Factor   float64
	Patience int
	Best     float64 // +Inf before the first step
	Bad      int     // epochs since the last improvement
}

// NewPlateau returns the schedule at lr.
func NewPlateau(lr, factor float64, patience int) *Plateau {
	return &Plateau{LR: lr, Factor: factor, Patience: patience, Best: math.Inf(1)}
}

const (
	plateauThreshold = 1e-4
	plateauEps       = 1e-8
)

// Step records one epoch's monitored value and reports whether the rate was reduced.
func (p *Plateau) Step(v float64) bool {
	if v < p.Best*(1-plateauThreshold) {
		p.Best, p.Bad = v, 0
	} else {
		p.Bad++
	}
	if p.Bad <= p.Patience {
		return false
	}
	p.Bad = 0
	if next := p.LR * p.Factor; p.LR-next > plateauEps {
		p.LR = next
		return true
	}
	return false
}

// StopByLR is the min_lr stop rule of docs/protocol.md §"Stop rules": the rate has fallen
// strictly below minLR.
func StopByLR(lr, minLR float64) bool { return lr < minLR }

// stopRule names the stop rule (runfiles.StopAccuracy, StopMinLR, StopMaxTime, StopMaxEpochs, in
// that order) that ends a run at an epoch boundary with learning rate lr after elapsed seconds
// and epochs finished epochs, the last with training accuracy trainAcc (%; classification), or
// returns "" when the run goes on.
func stopRule(c config.Train, lr, elapsed float64, epochs int, trainAcc float64) string {
	switch {
	case c.StopAccuracy > 0 && trainAcc >= c.StopAccuracy:
		return runfiles.StopAccuracy
	case StopByLR(lr, c.MinLR):
		return runfiles.StopMinLR
	case timeSpent(c, elapsed):
		return runfiles.StopMaxTime
	case epochsSpent(c, epochs):
		return runfiles.StopMaxEpochs
	}
	return ""
}

// timeSpent reports whether elapsed seconds exceed train.max_time.
func timeSpent(c config.Train, elapsed float64) bool { return elapsed > c.MaxTime.Seconds() }

// epochsSpent reports whether epochs finished epochs reach train.max_epochs.
func epochsSpent(c config.Train, epochs int) bool { return epochs >= c.MaxEpochs }
