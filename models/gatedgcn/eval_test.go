package gatedgcn

import (
	"math"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/tensor"
)

// TestEval checks that evaluation uses the running statistics (so it differs from the training
// loss on the same batch), leaves them unchanged, is repeatable, and that the predictions it
// returns give its loss.
func TestEval(t *testing.T) {
	gs := loadZINC(t, 24)
	bt, err := data.NewBatch(gs[:12])
	if err != nil {
		t.Fatal(err)
	}
	p, err := nn.NewParams(tensor.Float64, 2)
	if err != nil {
		t.Fatal(err)
	}
	buckets, err := nn.MakeBuckets(gs, 12, 2)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := nn.NewTrainer(p, nn.BuildOf(ZINC(), Build), buckets, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for s := 0; s < 5; s++ {
		if _, err := tr.Step(bt); err != nil {
			t.Fatal(err)
		}
	}
	mean := append([]float64(nil), p.BN["layer0.bn_h"].RunMean...)
	l1, pred, err := tr.Eval(bt)
	if err != nil {
		t.Fatal(err)
	}
	l2, _, err := tr.Eval(bt)
	if err != nil {
		t.Fatal(err)
	}
	if l1 != l2 {
		t.Fatalf("evaluation not repeatable: %v then %v", l1, l2)
	}
	for i, v := range p.BN["layer0.bn_h"].RunMean {
		if v != mean[i] {
			t.Fatal("evaluation changed the running statistics")
		}
	}
	want := 0.0
	for g, v := range pred {
		want += math.Abs(v-float64(bt.Y[g])) / float64(bt.NumGraphs)
	}
	if math.Abs(want-l1) > 1e-12 {
		t.Fatalf("eval loss %v, predictions give %v", l1, want)
	}
	n, err := tr.Net(0)
	if err != nil {
		t.Fatal(err)
	}
	train, err := n.Run(bt)
	if err != nil {
		t.Fatal(err)
	}
	if train == l1 {
		t.Fatal("training-mode and evaluation losses are identical: running statistics unused?")
	}
	t.Logf("eval loss %.4f, training-mode loss %.4f", l1, train)
}
