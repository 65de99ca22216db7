package gatedgcn

import (
	"testing"
	"time"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/tensor"
)

func batches(t testing.TB, gs []*data.Graph, size int) []*data.Batch {
	t.Helper()
	var out []*data.Batch
	for i := 0; i+size <= len(gs); i += size {
		b, err := data.NewBatch(gs[i : i+size])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// TestTrainZINC trains the ZINC network on 96 real test molecules in batches of 16 for a few
// hundred Adam steps (fewer with -short) and checks that the L1 loss falls.
func TestTrainZINC(t *testing.T) {
	steps := 200
	if testing.Short() {
		steps = 80
	}
	gs := loadZINC(t, 96)
	bs := batches(t, gs, 16)
	buckets, err := nn.MakeBuckets(gs, 16, 2)
	if err != nil {
		t.Fatal(err)
	}
	p, err := nn.NewParams(tensor.Float32, 7)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := nn.NewTrainer(p, Builder(ZINC()), buckets, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	start := time.Now()
	var first, last float64
	const window = 20
	for s := 0; s < steps; s++ {
		loss, err := tr.Step(bs[s%len(bs)])
		if err != nil {
			t.Fatal(err)
		}
		if s < window {
			first += loss / window
		}
		if s >= steps-window {
			last += loss / window
		}
	}
	t.Logf("%d steps in %v: mean loss of the first %d steps %.3f, of the last %d %.3f", steps, time.Since(start), window, first, window, last)
	if !(last < 0.6*first) {
		t.Fatalf("loss did not fall: %.3f → %.3f", first, last)
	}
}
