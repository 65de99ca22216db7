// Package models connects the experiment config to the networks: it derives a dataset's input
// layer and head (nn.IO) from its description and the encoding, and builds the network a config
// names through the registry of models (Register, Names; every package under models/, listed in
// registered.go by go generate).
package models

//go:generate go run gen.go

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/nn"
)

// Encoding is the preprocessing a network is built for.
type Encoding struct {
	Name     string // an encoding of data's registry (none, adj, short, lp, rwse, …)
	R        int    // rewiring radius
	Q        int    // Laplacian width (lp)
	RWSteps  int    // random-walk steps k (rwse)
	CLS      bool   // graphs carry a CLS node
	SPLinear bool   // shortest path by Linear(1→d) instead of a table
}

// IO returns the input layer, with its encodings, and the head of a dataset (docs/protocol.md
// §"Input layer and encoders", §"Readouts", §"MLP readout"). Feature widths are read off the
// dataset's constants: the CLS node's feature row has the nodes' width, C_e the edges'.
func IO(spec *data.Spec, enc Encoding) (nn.IO, error) {
	io := nn.IO{}
	cls := btoi(enc.CLS) // the CLS node's fresh id: one more row in every node table
	switch {
	case spec.NodeVocabs != nil:
		for _, v := range spec.NodeVocabs {
			io.NodeVocabs = append(io.NodeVocabs, v+cls)
		}
	case spec.NodeVocab > 0:
		io.NodeVocab = spec.NodeVocab + cls
		io.NodeCols = len(spec.CLSNode.Cat)
	default:
		io.NodeFloat = len(spec.CLSNode.Float)
	}
	switch {
	case spec.EdgeVocabs != nil: // C_e's ids are in the vocabularies
		io.EdgeVocabs = append([]int(nil), spec.EdgeVocabs...)
	case spec.EdgeVocab > 0:
		io.EdgeVocab = spec.EdgeVocab
	default:
		io.EdgeFloat = len(spec.EdgeConst.Float)
	}
	if err := enc.input(&io); err != nil {
		return io, fmt.Errorf("%s: %w", spec.Name, err)
	}
	graphReadout := nn.ReadoutMean
	if enc.CLS {
		graphReadout = nn.ReadoutCLS
	}
	switch spec.Task {
	case data.GraphRegression:
		io.Readout, io.Loss, io.Out = graphReadout, nn.LossL1, max(spec.Targets, 1)
	case data.GraphMultiLabel:
		io.Readout, io.Loss, io.Out = graphReadout, nn.LossBCE, spec.Classes
	case data.GraphClass:
		io.Readout, io.Loss, io.Out = graphReadout, nn.LossCE, spec.Classes
	case data.NodeClass:
		io.Readout, io.Loss, io.Out = nn.ReadoutNode, nn.LossSBM, spec.Classes
	case data.RootClass:
		io.Readout, io.Loss, io.Out = nn.ReadoutRoot, nn.LossCE, spec.Classes
	default:
		return io, fmt.Errorf("%s: unknown task %q", spec.Name, spec.Task)
	}
	if err := io.Validate(); err != nil {
		return io, fmt.Errorf("%s: %w", spec.Name, err)
	}
	return io, nil
}

// Build returns the BuildFunc and the parameter count of the network m describes on io, from
// the constructor registered under m.Name.
func Build(m config.Model, io nn.IO) (nn.BuildFunc, int, error) {
	io.InDropout = m.InFeatDropout
	newNet, ok := registry[m.Name]
	if !ok {
		return nil, 0, fmt.Errorf("model.name %q, want %s", m.Name, orList(Names()))
	}
	return newNet(m, io)
}

// FromConfig returns the input/output description, the BuildFunc and the parameter count of a
// run's network on its dataset: the encoding, CLS node and shortest-path encoder from the
// dataset section, an explicit model.readout over the task's default, and model.edge_feat
// (off: no edge input, bgnn's plain MoNet).
func FromConfig(r *config.Run, spec *data.Spec) (nn.IO, nn.BuildFunc, int, error) {
	enc := Encoding{Name: r.Dataset.Encoding, R: r.Dataset.R, Q: r.Dataset.Q, RWSteps: r.Dataset.RWSteps, CLS: r.Dataset.CLS, SPLinear: r.Model.SPEncoder == "linear"}
	io, err := IO(spec, enc)
	if err != nil {
		return io, nil, 0, err
	}
	if r.Model.Readout != "" && r.Model.Readout != "auto" {
		io.Readout = r.Model.Readout
	}
	if !r.Model.EdgeFeat {
		io.EdgeVocab, io.EdgeVocabs, io.EdgeFloat = 0, nil, 0
	}
	if err := io.Validate(); err != nil {
		return io, nil, 0, fmt.Errorf("%s: %w", spec.Name, err)
	}
	build, params, err := Build(r.Model, io)
	return io, build, params, err
}

// input sets io's encoding inputs as data's registry says the encoding enters a model.
func (enc Encoding) input(io *nn.IO) error {
	name := enc.Name
	if name == "" {
		name = "none"
	}
	e, ok := data.LookupEncoding(name)
	if !ok {
		return fmt.Errorf("encoding %q, want %s", enc.Name, orList(data.EncodingNames()))
	}
	width := e.WidthOf(data.EncodingParams{R: enc.R, Q: enc.Q, Steps: enc.RWSteps})
	if e.NeedsWidth() && width < 1 {
		return fmt.Errorf("the %s encoding needs %s, got %d", e.Name, e.Need, width)
	}
	switch e.Input {
	case data.EdgeAdj:
		io.AdjDim = width
	case data.EdgeSP:
		io.SPRows, io.SPLinear = width+2, enc.SPLinear
	case data.NodeVector:
		io.NodeEnc, io.NodePE = e.Name, width
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
