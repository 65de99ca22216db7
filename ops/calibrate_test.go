package ops

import (
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// bnPass runs one training-mode batch norm over the rows×d matrix xs (every row kept) on st.
func bnPass(t *testing.T, st *BNState, rows, d int, xs []float64) {
	t.Helper()
	g := gorgonia.NewGraph()
	x := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(rows, d), gorgonia.WithValue(tensor.New(tensor.WithShape(rows, d), tensor.WithBacking(xs))), gorgonia.WithName("x"))
	ones, zeros := make([]float64, d), make([]float64, d)
	for i := range ones {
		ones[i] = 1
	}
	gamma := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(d), gorgonia.WithValue(tensor.New(tensor.WithShape(d), tensor.WithBacking(ones))), gorgonia.WithName("gamma"))
	beta := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(d), gorgonia.WithValue(tensor.New(tensor.WithShape(d), tensor.WithBacking(zeros))), gorgonia.WithName("beta"))
	keep := make([]bool, rows)
	for i := range keep {
		keep[i] = true
	}
	if _, err := BatchNorm(x, gamma, beta, st, &Mask{Keep: keep}); err != nil {
		t.Fatal(err)
	}
	runGraph(t, g)
}

// TestBatchNormCalibration: during a calibration the running statistics are the plain mean over
// the batches of the batch means and unbiased variances, whatever they held before (batches of
// different sizes, hand-computed); after it, the momentum update resumes.
func TestBatchNormCalibration(t *testing.T) {
	st := NewBNState("bn", 2)
	st.RunMean, st.RunVar = []float64{7, -7}, []float64{9, 9}
	st.StartCalibration()
	// Batch A, 3 rows: column 0 {1, 3, 5} mean 3, unbiased var 4; column 1 {10, 20, 60} mean 30, var 700.
	bnPass(t, st, 3, 2, []float64{1, 10, 3, 20, 5, 60})
	// Batch B, 2 rows: column 0 {2, 6} mean 4, var 8; column 1 {0, 0} mean 0, var 0.
	bnPass(t, st, 2, 2, []float64{2, 0, 6, 0})
	if n := st.StopCalibration(); n != 2 {
		t.Fatalf("%d batches averaged, want 2", n)
	}
	const tol = 1e-12
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"mean 0", st.RunMean[0], 3.5}, {"mean 1", st.RunMean[1], 15},
		{"var 0", st.RunVar[0], 6}, {"var 1", st.RunVar[1], 350},
	} {
		if abs(c.got-c.want) > tol {
			t.Errorf("running %s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// Momentum again: batch B once more moves the mean of column 0 from 3.5 by 0.1 × (4 − 3.5).
	bnPass(t, st, 2, 2, []float64{2, 0, 6, 0})
	if want := 0.9*3.5 + 0.1*4; abs(st.RunMean[0]-want) > tol {
		t.Errorf("after the calibration: running mean 0 = %v, want %v", st.RunMean[0], want)
	}
}
