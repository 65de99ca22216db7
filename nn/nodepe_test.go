package nn_test

import (
	"slices"
	"testing"

	"github.com/rewiregnn/rewiregnn/internal/testgraphs"
	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/tensor"
)

// TestNodePELoad checks how the node encoding reaches the model: the random-walk encoding
// (IO.NodeEnc rwse) is loaded as it is, with no sign vector to flip it, the Laplacian encoding
// (lp) is multiplied column by column by LapSign, and both are zero on padding nodes.
func TestNodePELoad(t *testing.T) {
	bt, err := testgraphs.Tiny() // 7 nodes with a 2-wide node encoding
	if err != nil {
		t.Fatal(err)
	}
	pe := bt.Union.NodePE
	b := nn.Bucket{Nodes: 10, Edges: 20, Graphs: 3}
	for _, c := range []struct {
		name  string
		io    nn.IO
		signs []float32 // set on LapSign before loading (nil: leave it)
		want  []float32
	}{
		{"rwse", nn.IO{NodeVocab: 5, NodeEnc: "rwse", NodePE: 2, Readout: nn.ReadoutMean, Loss: nn.LossL1, Out: 1}, nil, pe},
		{"lp", nn.IO{NodeVocab: 5, NodeEnc: "lp", NodePE: 2, Readout: nn.ReadoutMean, Loss: nn.LossL1, Out: 1}, []float32{1, -1}, flipOdd(pe)},
	} {
		if err := c.io.Validate(); err != nil {
			t.Fatal(err)
		}
		spec := c.io.InputSpec()
		if spec.NodePE != 2 || spec.LapSign != (c.io.NodeEnc == "lp") {
			t.Fatalf("%s: input spec %+v", c.name, spec)
		}
		in := nn.NewInputs(b, tensor.Float32, spec)
		if (in.LapSign != nil) != (c.io.NodeEnc == "lp") {
			t.Fatalf("%s: LapSign %v", c.name, in.LapSign)
		}
		if c.signs != nil {
			copy(in.LapSign, c.signs)
		}
		if err := in.Load(bt); err != nil {
			t.Fatal(err)
		}
		got := in.NodePE.Float32s()
		want := append(slices.Clone(c.want), make([]float32, 2*(b.Nodes-bt.Union.N))...)
		if !slices.Equal(got, want) {
			t.Errorf("%s: loaded %v, want %v", c.name, got, want)
		}
	}
	for _, bad := range []nn.IO{{NodeEnc: "adj", NodePE: 2}, {NodeEnc: "lp"}, {NodePE: 2}, {NodeEnc: "lpp", NodePE: 2}} {
		bad.NodeVocab, bad.Readout, bad.Loss, bad.Out = 5, nn.ReadoutMean, nn.LossL1, 1
		if err := bad.Validate(); err == nil {
			t.Errorf("node encoding %q of width %d accepted", bad.NodeEnc, bad.NodePE)
		}
	}
}

// flipOdd negates the second of each pair of values.
func flipOdd(x []float32) []float32 {
	out := slices.Clone(x)
	for i := 1; i < len(out); i += 2 {
		out[i] = -out[i]
	}
	return out
}
