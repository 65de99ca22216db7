package runfiles

import "fmt"

// Predictions are a trained model's predictions on its run's test split, in the split's order:
// for node tasks (CLUSTER, PATTERN) one class per original node of every test graph (CLS nodes
// left out) with the true classes beside them; for graph classification one class per graph;
// for graph regression (every target) and multi-label tasks (the logit of every label) the
// model's outputs per graph.
// train -predict writes them (predictions.bin); the reports read them.
type Predictions struct {
	Run       string
	Dataset   string
	Seed      int64
	BatchSize int         // the run's batch size: its evaluation batches hold this many graphs
	Nodes     [][]int32   // node tasks: Nodes[g][v] is the class of node v of test graph g
	Labels    [][]int32   // node tasks: the true classes, the same shape
	Graphs    []int32     // graph classification: the class of each test graph
	Values    [][]float32 // graph regression and multi-label tasks: Values[g] are the outputs for test graph g
}

// Check reports predictions that cannot be a model's on a test split.
func (p *Predictions) Check() error {
	switch {
	case p.Run == "" || p.Dataset == "":
		return fmt.Errorf("predictions without a run or dataset name")
	case p.BatchSize < 1:
		return fmt.Errorf("predictions of %s: batch size %d", p.Run, p.BatchSize)
	case len(p.Nodes) != len(p.Labels):
		return fmt.Errorf("predictions of %s: %d graphs of predicted nodes, %d of labels", p.Run, len(p.Nodes), len(p.Labels))
	case len(p.Nodes) == 0 && len(p.Graphs) == 0 && len(p.Values) == 0:
		return fmt.Errorf("predictions of %s: no test graph", p.Run)
	}
	for g := range p.Values {
		if len(p.Values[g]) != len(p.Values[0]) {
			return fmt.Errorf("predictions of %s: test graph %d has %d outputs, graph 0 has %d", p.Run, g, len(p.Values[g]), len(p.Values[0]))
		}
	}
	for g := range p.Nodes {
		if len(p.Nodes[g]) != len(p.Labels[g]) {
			return fmt.Errorf("predictions of %s: test graph %d has %d predicted nodes and %d labels", p.Run, g, len(p.Nodes[g]), len(p.Labels[g]))
		}
	}
	return nil
}

// WritePredictions writes p to path atomically in the checkpoint container (gob, CRC-32C).
func WritePredictions(path string, p *Predictions) error {
	if err := p.Check(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return WriteCheckpoint(path, p)
}

// ReadPredictions reads and verifies a predictions file.
func ReadPredictions(path string) (*Predictions, error) {
	p := new(Predictions)
	if err := ReadCheckpoint(path, p); err != nil {
		return nil, err
	}
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}
