package train

import (
	"math"
	"testing"
)

// TestPlateauScript replays a scripted validation-loss sequence through the schedule with
// patience 2 and checks every halving by hand: an epoch improves when its loss is below
// best·(1 − 1e-4); the rate halves on the 3rd consecutive epoch without improvement.
func TestPlateauScript(t *testing.T) {
	p := NewPlateau(1e-3, 0.5, 2)
	script := []struct {
		loss   float64
		halved bool
		lr     float64
	}{
		{1.0, false, 1e-3},     // best 1.0
		{0.9, false, 1e-3},     // best 0.9
		{0.89995, false, 1e-3}, // 0.89995 ≥ 0.9·(1−1e-4) = 0.89991: not an improvement (bad 1)
		{0.95, false, 1e-3},    // bad 2
		{0.91, true, 5e-4},     // bad 3 > 2: halve, bad 0
		{0.92, false, 5e-4},    // bad 1
		{0.80, false, 5e-4},    // improvement, bad 0
		{0.80, false, 5e-4},    // equal is no improvement: bad 1
		{0.81, false, 5e-4},    // bad 2
		{0.82, true, 2.5e-4},   // halve
		{0.70, false, 2.5e-4},
	}
	for i, s := range script {
		if got := p.Step(s.loss); got != s.halved || math.Abs(p.LR-s.lr) > 1e-18 {
			t.Fatalf("epoch %d (loss %v): halved %v lr %v, want %v %v", i, s.loss, got, p.LR, s.halved, s.lr)
		}
	}
}

// TestPlateauStop: with a loss that never improves after the first epoch and patience P, the
// rate halves every P+1 epochs; from 1e-3 it first drops below min_lr = 1e-6 after the 10th
// halving (1e-3·2⁻¹⁰ = 9.77e-7), i.e. at epoch 1 + 10(P+1) − 1.
func TestPlateauStop(t *testing.T) {
	for _, patience := range []int{0, 5, 10} {
		p := NewPlateau(1e-3, 0.5, patience)
		stop := -1
		for epoch := 0; epoch < 1000; epoch++ {
			p.Step(1)
			if StopByLR(p.LR, 1e-6) {
				stop = epoch
				break
			}
		}
		if want := 10 * (patience + 1); stop != want {
			t.Fatalf("patience %d: stopped after epoch %d, want %d", patience, stop, want)
		}
		if p.LR != 1e-3/1024 {
			t.Fatalf("patience %d: final lr %v", patience, p.LR)
		}
	}
}
