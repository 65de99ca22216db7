package train

import (
	"io"
	"slices"
	"testing"
	"time"
)

// TestLapSignsFlipPerTrainingBatch checks the spectral encoding's training-time sign flip: every
// training batch draws fresh column signs from the run's seeded generator, so the same seed
// gives the same flips, and evaluation never flips.
func TestLapSignsFlipPerTrainingBatch(t *testing.T) {
	const q = 3
	draw := func(seed int64) [][]float32 {
		c := nm2(t, "train.batch_size=8", "dataset.encoding=lp", "dataset.q=3")
		r := &run{o: Options{Run: c, Seed: seed, Dir: c.Dir(seed), Workers: 1}, cfg: c, start: time.Now(), log: io.Discard}
		defer r.closeDevice()
		if err := prepareInPlace(r); err != nil {
			t.Fatal(err)
		}
		defer r.tr.Close()
		if r.io.NodeEnc != "lp" || r.io.NodePE != q {
			t.Fatalf("the model reads a %d-wide %q encoding, want the %d-wide Laplacian", r.io.NodePE, r.io.NodeEnc, q)
		}
		bt := r.testB[0]
		plain, _, err := r.tr.Eval(bt)
		if err != nil {
			t.Fatal(err)
		}
		r.loop.Perm = make([]int32, len(r.train))
		for i := range r.loop.Perm {
			r.loop.Perm[i] = int32(i)
		}
		bs := r.cfg.Train.BatchSize
		var signs [][]float32
		for b := 0; b < (len(r.train)+bs-1)/bs; b++ {
			if _, err := r.trainBatch(b); err != nil {
				t.Fatal(err)
			}
			signs = append(signs, slices.Clone(r.tr.LapSign))
		}
		// The last training batch's signs are set on the trainer; evaluation ignores them.
		if loss, _, err := r.tr.Eval(bt); err != nil || loss != plain {
			t.Fatalf("evaluation loss %v (%v) with training signs %v set, %v without", loss, err, r.tr.LapSign, plain)
		}
		return signs
	}
	a := draw(41)
	if len(a) < 8 {
		t.Fatalf("%d training batches", len(a))
	}
	for j := 0; j < q; j++ {
		seen := map[float32]int{}
		for _, s := range a {
			if len(s) != q {
				t.Fatalf("%d signs, want %d", len(s), q)
			}
			seen[s[j]]++
		}
		if len(seen) != 2 || seen[1]+seen[-1] != len(a) {
			t.Errorf("column %d: signs %v over %d batches, want both +1 and −1 and nothing else", j, seen, len(a))
		}
	}
	if b := draw(41); !slices.EqualFunc(a, b, slices.Equal) {
		t.Error("the same seed drew different signs")
	}
	if b := draw(95); slices.EqualFunc(a, b, slices.Equal) {
		t.Error("seeds 41 and 95 drew the same signs")
	}
}
