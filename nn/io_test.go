package nn

import (
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"
)

// TestIOTables: the shared form gives one table per column, the per-column form its own
// sizes; parameter counts and the batch inputs follow the tables.
func TestIOTables(t *testing.T) {
	for _, c := range []struct {
		name         string
		io           IO
		nodes, edges []int
		nodeP, edgeP int // at d = 10
	}{
		{"zinc", IO{NodeVocab: 29, EdgeVocab: 4}, []int{29}, []int{4}, 290, 40},
		{"neighborsmatch", IO{NodeVocab: 6, NodeCols: 2, EdgeFloat: 1}, []int{6, 6}, nil, 120, 20},
		{"peptides", IO{NodeVocabs: []int{120, 6, 13}, EdgeVocabs: []int{6, 7, 3}, AdjDim: 2}, []int{120, 6, 13}, []int{6, 7, 3}, 1390, 160 + 30},
		{"mnist", IO{NodeFloat: 3, EdgeFloat: 1}, nil, nil, 40, 20},
	} {
		io := c.io
		io.Readout, io.Loss, io.Out = ReadoutMean, LossL1, 1
		if err := io.Validate(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(io.NodeTables(), c.nodes) || !slices.Equal(io.EdgeTables(), c.edges) {
			t.Errorf("%s: tables %v %v, want %v %v", c.name, io.NodeTables(), io.EdgeTables(), c.nodes, c.edges)
		}
		if io.NodeParams(10) != c.nodeP || io.EdgeParams(10) != c.edgeP {
			t.Errorf("%s: %d node and %d edge input parameters, want %d and %d", c.name, io.NodeParams(10), io.EdgeParams(10), c.nodeP, c.edgeP)
		}
		s := io.InputSpec()
		if s.NodeCols != len(c.nodes) || s.EdgeCols != len(c.edges) {
			t.Errorf("%s: inputs read %d node and %d edge columns", c.name, s.NodeCols, s.EdgeCols)
		}
		in := NewInputs(Bucket{Nodes: 4, Edges: 4, Graphs: 1}, tensor.Float32, s)
		if len(in.NodeCat) != len(c.nodes) || len(in.EdgeCat) != len(c.edges) {
			t.Errorf("%s: %d node and %d edge index holders", c.name, len(in.NodeCat), len(in.EdgeCat))
		}
	}
}

// TestIOValidateTables: the two forms do not mix, and no table is empty.
func TestIOValidateTables(t *testing.T) {
	for _, c := range []struct {
		io   IO
		want string
	}{
		{IO{NodeVocab: 5, NodeVocabs: []int{5, 3}}, "exactly one form"},
		{IO{NodeCols: 2, NodeVocabs: []int{5, 3}}, "exactly one form"},
		{IO{NodeVocabs: []int{}}, "exactly one form"},
		{IO{NodeVocabs: []int{5, 0}}, "column 1 has a table of 0 rows"},
		{IO{NodeVocab: 5, EdgeVocab: 2, EdgeVocabs: []int{2}}, "edge input: per-column"},
		{IO{NodeVocab: 5, EdgeVocabs: []int{2}, EdgeFloat: 1}, "both vocabularies ([2]) and float features"},
		{IO{NodeVocabs: []int{5}, NodeFloat: 2}, "want exactly one"},
	} {
		io := c.io
		io.Readout, io.Loss, io.Out = ReadoutMean, LossL1, 1
		if err := io.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.io, err, c.want)
		}
	}
}
