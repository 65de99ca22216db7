package train

import (
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/runfiles"
	"gorgonia.org/tensor"
)

// fuzzModel is a tiny model state for checkpoints to restore into: one 2×3 weight, one
// batch-norm site of width 2, one dropout site.
func fuzzModel(t testing.TB) (*nn.Params, *nn.Adam) {
	p, err := nn.NewParams(tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Get("w", nn.Const(0.5), 2, 3); err != nil {
		t.Fatal(err)
	}
	p.BNState("bn", 2)
	p.DropState("drop", 0.1)
	return p, nn.NewAdam(1e-3)
}

// fuzzCheckpoint is a valid checkpoint of fuzzModel inside an epoch.
func fuzzCheckpoint(t testing.TB) *Checkpoint {
	p, opt := fuzzModel(t)
	c := Capture("run", 1, p, opt, Loop{Epoch: 2, Perm: []int32{2, 0, 1}, Next: 1,
		Train: NewMeter(runfiles.MetricWeightedAcc, 2), RNG: []byte{1, 2, 3}})
	c.Adam.M = map[string][]float64{"w": make([]float64, 6)}
	c.Adam.V = map[string][]float64{"w": make([]float64, 6)}
	return c
}

// FuzzDecodeCheckpoint feeds arbitrary container payloads (checksum fixed, so the gob decoder
// and the checks behind it are reached) to the checkpoint reader and restores what decodes into
// a model: errors, never a panic; a restored state re-encodes to a checkpoint that decodes the
// same.
func FuzzDecodeCheckpoint(f *testing.F) {
	good, err := runfiles.EncodeCheckpoint(fuzzCheckpoint(f))
	if err != nil {
		f.Fatal(err)
	}
	payload := good[len("RWGNNCK1") : len(good)-4]
	f.Add(payload)
	f.Add(payload[:len(payload)/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		c := &Checkpoint{}
		if err := runfiles.DecodeCheckpoint(runfiles.WithCheckpointCRC(b), c); err != nil {
			return
		}
		p, opt := fuzzModel(t)
		if err := c.Restore(p, opt); err != nil {
			return
		}
		if err := c.Loop.CheckLoop(3, 2, NewMeter(runfiles.MetricWeightedAcc, 2)); err != nil {
			return
		}
		again := Capture(c.Run, c.Seed, p, opt, c.Loop)
		enc, err := runfiles.EncodeCheckpoint(again)
		if err != nil {
			t.Fatalf("restored state does not encode: %v", err)
		}
		back := &Checkpoint{}
		if err := runfiles.DecodeCheckpoint(enc, back); err != nil {
			t.Fatalf("re-encoded checkpoint does not decode: %v", err)
		}
		if err := back.Restore(p, opt); err != nil {
			t.Fatalf("re-encoded checkpoint does not restore: %v", err)
		}
	})
}

// TestRestoreRejectsMismatchedState covers the checks a decoded checkpoint passes before its
// values are copied: each corruption gives an error naming what is wrong, never a panic.
func TestRestoreRejectsMismatchedState(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func(c *Checkpoint)
		want  string
	}{
		{"too many values", func(c *Checkpoint) { c.Params["w"] = make([]float64, 7) }, `parameter "w" has 7 values`},
		{"short moment", func(c *Checkpoint) { c.Adam.M["w"] = make([]float64, 2) }, `Adam first moment "w" has 2 values`},
		{"foreign moment", func(c *Checkpoint) { c.Adam.V["x"] = nil }, `moment "x" has 0 values, the model's parameter does not exist`},
	} {
		ck := fuzzCheckpoint(t)
		c.spoil(ck)
		p, opt := fuzzModel(t)
		if err := ck.Restore(p, opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestCheckLoop covers the loop checks of a resumed run.
func TestCheckLoop(t *testing.T) {
	want := NewMeter(runfiles.MetricWeightedAcc, 2)
	if err := fuzzCheckpoint(t).Loop.CheckLoop(3, 2, want); err != nil {
		t.Fatalf("valid loop rejected: %v", err)
	}
	for _, c := range []struct {
		name  string
		spoil func(l *Loop)
		want  string
	}{
		{"negative epoch", func(l *Loop) { l.Epoch = -1 }, "loop at epoch -1"},
		{"short order", func(l *Loop) { l.Perm = l.Perm[:2] }, "order has 2 graphs, the run 3"},
		{"repeated graph", func(l *Loop) { l.Perm[0] = 0 }, "not a permutation"},
		{"graph out of range", func(l *Loop) { l.Perm[1] = 3 }, "entry 1 is 3"},
		{"next past the end", func(l *Loop) { l.Next = 3 }, "next batch 3 outside the epoch's 2 batches"},
		{"no meter", func(l *Loop) { l.Train = nil }, "training meter"},
		{"other metric", func(l *Loop) { l.Train = NewMeter(runfiles.MetricMAE, 1) }, "training meter"},
	} {
		l := fuzzCheckpoint(t).Loop
		c.spoil(&l)
		if err := l.CheckLoop(3, 2, want); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}
