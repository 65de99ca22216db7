package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rewiregnn/rewiregnn/internal/gradcheck"
	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestDropoutGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	g := gorgonia.NewGraph()
	x := gradcheck.RandMatrix(g, rng, "x", 7, 5)
	c := gradcheck.RandMatrix(g, rng, "c", 7, 5)
	p, _ := NewParams(tensor.Float64, 1)
	p.Step = 9
	y, err := ops.Dropout(x, p.DropState("d", 0.4))
	if err != nil {
		t.Fatal(err)
	}
	l := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, c))))
	gradcheck.Assert(t, g, l, x)
}

// TestDropoutMask: in training about Rate of the entries are zero and the rest scaled by
// 1/(1−Rate); the mask is fixed within a step and changes with it; evaluation is the identity.
func TestDropoutMask(t *testing.T) {
	const rows, cols, rate = 200, 50, 0.3
	p, _ := NewParams(tensor.Float32, 1)
	st := p.DropState("d", rate)
	g := gorgonia.NewGraph()
	ones := make([]float32, rows*cols)
	for i := range ones {
		ones[i] = 1
	}
	x := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(rows, cols), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(ones))))
	y, err := ops.Dropout(x, st)
	if err != nil {
		t.Fatal(err)
	}
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	run := func() []float32 {
		vm.Reset()
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		return append([]float32(nil), y.Value().Data().([]float32)...)
	}
	a := run()
	zeros := 0
	for _, v := range a {
		switch {
		case v == 0:
			zeros++
		case math.Abs(float64(v)-1/(1-rate)) > 1e-6:
			t.Fatalf("survivor %v, want %v", v, 1/(1-rate))
		}
	}
	// 10 000 Bernoulli(0.3) draws: std 0.0046; allow 4 std.
	if f := float64(zeros) / float64(len(a)); math.Abs(f-rate) > 0.02 {
		t.Fatalf("dropped fraction %.4f, want %.2f", f, rate)
	}
	if b := run(); !equal32(a, b) {
		t.Fatal("the mask changed within a step")
	}
	p.Step++
	if b := run(); equal32(a, b) {
		t.Fatal("the mask did not change with the step")
	}
	p.SetTraining(false)
	if b := run(); !equal32(b, ones) {
		t.Fatal("evaluation is not the identity")
	}
	if _, err := ops.Dropout(x, ops.NewDropState("bad", 1, 0, &p.Step)); err == nil {
		t.Fatal("rate 1 was accepted")
	}
}

func equal32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
