package testgraphs

import (
	"testing"
	"time"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/tensor"
)

// ZINC loads the first n molecules of the ZINC test split, skipping the test if the data
// folder is missing.
func ZINC(t testing.TB, n int) []*data.Graph {
	t.Helper()
	gs, _ := testdata.Load(t, "zinc", "test")
	return gs[:min(n, len(gs))]
}

// TrainFalls trains a float32 model with Adam (lr 1e-3) on gs in batches of size for the given
// number of steps and checks that the mean loss of the last 20 steps is below factor times that
// of the first 20.
func TrainFalls(t *testing.T, build nn.BuildFunc, gs []*data.Graph, size, steps int, factor float64) {
	t.Helper()
	var bs []*data.Batch
	for i := 0; i+size <= len(gs); i += size {
		b, err := data.NewBatch(gs[i : i+size])
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	buckets, err := nn.MakeBuckets(gs, size, 2)
	if err != nil {
		t.Fatal(err)
	}
	p, err := nn.NewParams(tensor.Float32, 7)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := nn.NewTrainer(p, build, buckets, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	start := time.Now()
	const window = 20
	var first, last float64
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
	t.Logf("%d steps of %d graphs in %v: mean loss of the first %d steps %.3f, of the last %d %.3f",
		steps, size, time.Since(start).Round(time.Millisecond), window, first, window, last)
	if !(last < factor*first) {
		t.Fatalf("loss did not fall enough: %.3f → %.3f (want below %.2f×)", first, last, factor)
	}
}

// ZINCFalls builds the model called name at its defaults (and sets, -set key=value) with
// newNet, its registry constructor, on 64 ZINC molecules (bond types as edge inputs, mean
// readout, PNA's δ from these graphs) and checks with TrainFalls (batches of 16, 60 steps) that
// its loss falls below 0.7 of its start.
func ZINCFalls(t *testing.T, name string, newNet func(config.Model, nn.IO) (nn.BuildFunc, int, error), sets ...string) {
	t.Helper()
	r, err := config.Load("", append([]string{"dataset.name=zinc", "model.name=" + name}, sets...))
	if err != nil {
		t.Fatal(err)
	}
	gs := ZINC(t, 64)
	io := nn.IO{NodeVocab: 28, EdgeVocab: 4, Readout: nn.ReadoutMean, Loss: nn.LossL1, Out: 1, AvgLogDeg: nn.AvgLogDegree(gs)}
	build, _, err := newNet(r.Model, io)
	if err != nil {
		t.Fatal(err)
	}
	TrainFalls(t, build, gs, 16, 60, 0.7)
}
