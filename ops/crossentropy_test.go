package ops

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rewiregnn/rewiregnn/internal/gradcheck"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestWeightedCEGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	g := gorgonia.NewGraph()
	z := gradcheck.RandMatrix(g, rng, "logits", 6, 4)
	labels := &Index{Name: "labels", Idx: []int32{2, 0, -1, 3, 1, 2}, W: []float64{0.5, 1, 7, 0.25, 0, 2}}
	l, err := WeightedCE(z, labels)
	if err != nil {
		t.Fatal(err)
	}
	gradcheck.Assert(t, g, l, z)
}

// A hand case: two rows, uniform weights. Row 0 logits (0, ln 3): p = (1/4, 3/4), label 1;
// row 1 logits (0, 0): p = (1/2, 1/2), label 0. Loss = (−ln ¾ − ln ½)/2.
func TestWeightedCEValue(t *testing.T) {
	g := gorgonia.NewGraph()
	z := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(3, 2), gorgonia.WithName("z"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(3, 2), tensor.WithBacking([]float64{0, math.Log(3), 0, 0, 5, -5}))))
	labels := &Index{Name: "y", Idx: []int32{1, 0, -1}, W: []float64{1, 1, 1}}
	l, err := WeightedCE(z, labels)
	if err != nil {
		t.Fatal(err)
	}
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	want := (-math.Log(0.75) - math.Log(0.5)) / 2
	if got := l.Value().Data().(float64); math.Abs(got-want) > 1e-12 {
		t.Fatalf("loss %v, want %v", got, want)
	}
	labels.Idx[0] = 2
	vm.Reset()
	if err := vm.RunAll(); err == nil {
		t.Fatal("a label outside the classes was accepted")
	}
}

func TestSBMClassWeights(t *testing.T) {
	// V = 5 labelled rows: class 0 ×3, class 1 ×2; w_0 = 2/5, w_1 = 3/5; the CLS row (−1) gets 0.
	w := make([]float64, 6)
	if err := SBMClassWeights([]int32{0, 1, 0, -1, 0, 1}, 3, w); err != nil {
		t.Fatal(err)
	}
	want := []float64{0.4, 0.6, 0.4, 0, 0.4, 0.6}
	for i := range w {
		if math.Abs(w[i]-want[i]) > 1e-15 {
			t.Fatalf("weights %v, want %v", w, want)
		}
	}
	if err := SBMClassWeights([]int32{0, 3}, 3, w); err == nil {
		t.Fatal("label outside the classes accepted")
	}
}
