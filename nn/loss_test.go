package nn

import (
	"math"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
)

// TestValidateLosses: the L1 loss takes any number of targets on a graph-level readout; the BCE
// loss any number of labels on a mean or CLS readout; each is refused elsewhere, naming why.
func TestValidateLosses(t *testing.T) {
	base := IO{NodeVocab: 4}
	for _, c := range []struct {
		loss, readout string
		out           int
		want          string // "" for valid
	}{
		{LossL1, ReadoutMean, 1, ""},
		{LossL1, ReadoutCLS, 11, ""},
		{LossL1, ReadoutRoot, 3, ""},
		{LossL1, ReadoutNode, 1, "the L1 loss needs a graph-level readout"},
		{LossL1, ReadoutMean, 0, "output width 0"},
		{LossBCE, ReadoutMean, 10, ""},
		{LossBCE, ReadoutCLS, 1, ""},
		{LossBCE, ReadoutRoot, 10, "the BCE loss needs a graph-level readout (mean, sum or cls), readout is root"},
		{LossBCE, ReadoutSum, 10, ""},
		{LossL1, ReadoutSum, 1, ""},
		{LossBCE, ReadoutNode, 10, "readout is node"},
		{"mse", ReadoutMean, 1, `loss "mse", want l1, bce, ce or sbm_ce`},
	} {
		io := base
		io.Loss, io.Readout, io.Out = c.loss, c.readout, c.out
		err := io.Validate()
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s, %s, out %d: %v, want %q", c.loss, c.readout, c.out, err, c.want)
		}
		if err == nil {
			s := io.InputSpec()
			if s.Targets != c.out || s.Classes != 0 {
				t.Errorf("%s, out %d: input spec with %d targets and %d classes, want %d and 0", c.loss, c.out, s.Targets, s.Classes, c.out)
			}
		}
	}
}

// TestTargetWeights: the targets and weights of the two element-wise losses, by hand.
func TestTargetWeights(t *testing.T) {
	nan := float32(math.NaN())
	// 3 graphs × 2 columns in a holder of 4 graphs (the last is padding).
	bt := &data.Batch{NumGraphs: 3, YDim: 2, Y: []float32{1, 0, nan, 1, 0, nan}}
	y, w := make([]float32, 8), make([]float32, 8)
	for i := range y {
		y[i], w[i] = 9, 9 // stale values of an earlier batch
	}
	// BCE: 4 labelled entries → w = 1/4 on them; the NaN entries and the padding get y = w = 0.
	if err := TargetWeights(y, w, bt, 2, true); err != nil {
		t.Fatal(err)
	}
	same32(t, "BCE targets", y, []float32{1, 0, 0, 1, 0, 0, 0, 0})
	same32(t, "BCE weights", w, []float32{0.25, 0.25, 0, 0.25, 0.25, 0, 0, 0})
	// L1: 3 graphs × 2 targets → w = 1/6 on all six real entries.
	bt.Y = []float32{0.5, -1, 2, 3, 4, 5}
	if err := TargetWeights(y, w, bt, 2, false); err != nil {
		t.Fatal(err)
	}
	same32(t, "L1 targets", y, []float32{0.5, -1, 2, 3, 4, 5, 0, 0})
	sixth := 1 / float32(6)
	same32(t, "L1 weights", w, []float32{sixth, sixth, sixth, sixth, sixth, sixth, 0, 0})

	for _, c := range []struct {
		bt   *data.Batch
		bce  bool
		want string
	}{
		{&data.Batch{NumGraphs: 2, YDim: 1, Y: []float32{1, 0}}, false, "batch targets have width 1 (2 values for 2 graphs), want 2"},
		{&data.Batch{NumGraphs: 1, YDim: 2, Y: []float32{1, 0.5}}, true, "graph 0, label 1 of the batch is 0.5, want 0, 1 or NaN"},
	} {
		if err := TargetWeights(y, w, c.bt, 2, c.bce); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
		}
	}
}

func same32(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	}
}
