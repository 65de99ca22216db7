package nn_test

import (
	"math"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testgraphs"
	"github.com/rewiregnn/rewiregnn/models"
	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestSharedSlotsChangeNothing: a net whose values share buffers by the liveness plan gives, bit
// for bit, the loss, prediction and gradients of the same net with a buffer per value, while
// every buffer is filled with NaN as soon as its value's last reader has run (so an op that
// read a value after its lifetime, through a reference it kept, would show). The plan also
// takes less memory than a buffer per value.
func TestSharedSlotsChangeNothing(t *testing.T) {
	gs := testgraphs.ZINC(t, 96)
	bt := zincBatches(t, gs, 48)[0]
	buckets, err := nn.MakeBuckets(gs, 48, 1)
	if err != nil {
		t.Fatal(err)
	}
	for name, build := range zincModels(t) {
		for _, train := range []bool{true, false} {
			var runs [2][]float32
			for k, shared := range []bool{false, true} {
				p, err := nn.NewParams(tensor.Float32, 7)
				if err != nil {
					t.Fatal(err)
				}
				n, err := build(p, buckets[0], train)
				if err != nil {
					t.Fatal(err)
				}
				m := n.Runner()
				if err := m.SetShared(shared); err != nil {
					t.Fatal(err)
				}
				m.SetPoison(shared)
				if shared {
					slots, unshared := m.PlanBytes()
					if slots >= unshared {
						t.Errorf("%s train=%v: slots take %d bytes, a buffer per value %d", name, train, slots, unshared)
					}
				}
				for range 2 {
					if _, err := n.Run(bt); err != nil {
						t.Fatal(err)
					}
				}
				out := append([]float32(nil), values(t, n.Loss.Value())...)
				out = append(out, values(t, n.Pred.Value())...)
				_, grads := n.Gradients()
				for _, g := range grads {
					out = append(out, values(t, g)...)
				}
				runs[k] = out
			}
			if len(runs[0]) != len(runs[1]) {
				t.Fatalf("%s train=%v: %d and %d values", name, train, len(runs[0]), len(runs[1]))
			}
			for i := range runs[0] {
				a, b := runs[0][i], runs[1][i]
				if math.Float32bits(a) != math.Float32bits(b) || math.IsNaN(float64(b)) {
					t.Fatalf("%s train=%v: value %d is %v with a buffer per value, %v with shared slots", name, train, i, a, b)
				}
			}
		}
	}
}

// zincModels are the registered models at their defaults on ZINC (MoNet with its edge
// embedding), with sets (-set key=value) applied to each.
func zincModels(t *testing.T, sets ...string) map[string]nn.BuildFunc {
	t.Helper()
	out := map[string]nn.BuildFunc{}
	for _, name := range models.Names() {
		r, err := config.Load("", append([]string{"dataset.name=zinc", "model.name=" + name}, sets...))
		if err != nil {
			t.Fatal(err)
		}
		// AvgLogDeg: PNA's δ, about ZINC's at r = 1 (these tests compare runs of one network)
		build, _, err := models.Build(r.Model, nn.IO{NodeVocab: 28, EdgeVocab: 4, Readout: nn.ReadoutMean, Loss: nn.LossL1, Out: 1, AvgLogDeg: 1})
		if err != nil {
			t.Fatal(err)
		}
		out[name] = build
	}
	return out
}

// zincBatches cuts gs into batches of size graphs (a shorter rest is dropped).
func zincBatches(t *testing.T, gs []*data.Graph, size int) []*data.Batch {
	t.Helper()
	var bts []*data.Batch
	for i := 0; i+size <= len(gs); i += size {
		bt, err := data.NewBatch(gs[i : i+size])
		if err != nil {
			t.Fatal(err)
		}
		bts = append(bts, bt)
	}
	return bts
}

func values(t *testing.T, v gorgonia.Value) []float32 {
	t.Helper()
	switch d := v.Data().(type) {
	case []float32:
		return d
	case float32:
		return []float32{d}
	}
	t.Fatalf("value of type %T", v.Data())
	return nil
}

// TestArenaChangesNothing: a trainer whose nets share one arena (the default) trains, bit for
// bit, like one whose nets each own their activations, over batches of two buckets with
// evaluation steps between the training steps.
func TestArenaChangesNothing(t *testing.T) {
	gs := testgraphs.ZINC(t, 96)
	buckets, err := nn.MakeBuckets(gs, 24, 2)
	if err != nil {
		t.Fatal(err)
	}
	bts := zincBatches(t, gs, 24)
	for name, build := range zincModels(t) {
		var runs [2][]float64
		for k, shared := range []bool{false, true} {
			p, err := nn.NewParams(tensor.Float32, 3)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := nn.NewTrainer(p, build, buckets, 1e-3)
			if err != nil {
				t.Fatal(err)
			}
			if !shared {
				tr.Arena = nil
			}
			for epoch := 0; epoch < 2; epoch++ {
				for _, bt := range bts {
					loss, err := tr.Step(bt)
					if err != nil {
						t.Fatal(err)
					}
					_, pred, err := tr.Eval(bts[0])
					if err != nil {
						t.Fatal(err)
					}
					runs[k] = append(append(runs[k], loss), pred...)
				}
			}
			tr.Close()
		}
		for i := range runs[0] {
			if math.Float64bits(runs[0][i]) != math.Float64bits(runs[1][i]) {
				t.Fatalf("%s: value %d is %v with nets owning their buffers, %v with an arena", name, i, runs[0][i], runs[1][i])
			}
		}
	}
}

// TestRecomputeSameTraining: training with activation recomputation gives, bit for bit, the
// losses, predictions, parameters and batch-norm running statistics of normal training, for
// each model (GatedGCN with dropout, so that the replayed forward steps must draw the same
// masks), and its training nets plan fewer activation bytes.
func TestRecomputeSameTraining(t *testing.T) {
	gs := testgraphs.ZINC(t, 96)
	buckets, err := nn.MakeBuckets(gs, 32, 1)
	if err != nil {
		t.Fatal(err)
	}
	bts := zincBatches(t, gs, 32)
	for name, build := range zincModels(t, "model.dropout=0.2") {
		var runs [2][]float64
		var planned [2]int64
		for k, recompute := range []bool{false, true} {
			p, err := nn.NewParams(tensor.Float32, 5)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := nn.NewTrainer(p, build, buckets, 1e-3)
			if err != nil {
				t.Fatal(err)
			}
			tr.Recompute = recompute
			n, err := tr.Net(0)
			if err != nil {
				t.Fatal(err)
			}
			n.Runner().SetPoison(true)
			planned[k], _ = n.Runner().PlanBytes()
			for epoch := 0; epoch < 2; epoch++ {
				for _, bt := range bts {
					loss, pred, err := tr.StepPred(bt)
					if err != nil {
						t.Fatal(err)
					}
					runs[k] = append(append(runs[k], loss), pred...)
				}
			}
			_, pred, err := tr.Eval(bts[0]) // on the running statistics
			if err != nil {
				t.Fatal(err)
			}
			runs[k] = append(runs[k], pred...)
			for _, name := range p.Names {
				for _, v := range p.T[name].Float32s() {
					runs[k] = append(runs[k], float64(v))
				}
			}
			tr.Close()
		}
		if len(runs[0]) != len(runs[1]) {
			t.Fatalf("%s: %d and %d values", name, len(runs[0]), len(runs[1]))
		}
		for i := range runs[0] {
			if math.Float64bits(runs[0][i]) != math.Float64bits(runs[1][i]) {
				t.Fatalf("%s: value %d is %v in normal training, %v with recomputation", name, i, runs[0][i], runs[1][i])
			}
		}
		if planned[1] >= planned[0] {
			t.Errorf("%s: recomputation plans %d activation bytes, normal training %d", name, planned[1], planned[0])
		}
		t.Logf("%s: activations %d bytes normal, %d with recomputation", name, planned[0], planned[1])
	}
}
