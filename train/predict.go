package train

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/rundir"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// Predict loads a run directory's resolved config and checkpoint (the model as it is at its last
// epoch, which the run's final evaluation scored) and predicts the test split on the CPU. It
// writes nothing into the directory and takes no lock: the files it reads are written
// atomically.
func Predict(dir string, workers int, log io.Writer) (*runfiles.Predictions, error) {
	r, err := restoreRun(dir, workers, log)
	if err != nil {
		return nil, fmt.Errorf("predict %s: %w", dir, err)
	}
	defer r.tr.Close()
	c := r.cfg
	if len(r.testB) == 0 {
		return nil, fmt.Errorf("predict %s: %s has no test split", dir, c.Dataset.Name)
	}
	step := r.step
	out := &runfiles.Predictions{Run: c.RunName(), Dataset: c.Dataset.Name, Seed: r.o.Seed, BatchSize: c.Train.BatchSize}
	k := r.io.Out
	for _, bt := range r.testB {
		_, pred, err := step.Eval(bt)
		if err != nil {
			return nil, fmt.Errorf("predict %s: %w", dir, err)
		}
		switch {
		case r.io.Loss == nn.LossL1 || r.io.Loss == nn.LossBCE: // every output: targets or logits
			for g := 0; g < bt.NumGraphs; g++ {
				v := make([]float32, k)
				for j := range v {
					v[j] = float32(pred[g*k+j])
				}
				out.Values = append(out.Values, v)
			}
			continue
		case r.io.Readout != nn.ReadoutNode:
			for g := 0; g < bt.NumGraphs; g++ {
				out.Graphs = append(out.Graphs, int32(argmax(pred[g*k:(g+1)*k])))
			}
			continue
		}
		labels := bt.Union.NodeLabel
		for g := 0; g < bt.NumGraphs; g++ {
			var ps, ys []int32
			for v := bt.NodeOff[g]; v < bt.NodeOff[g+1]; v++ {
				if labels[v] < 0 { // the CLS node
					continue
				}
				ps = append(ps, int32(argmax(pred[int(v)*k:(int(v)+1)*k])))
				ys = append(ys, labels[v])
			}
			out.Nodes, out.Labels = append(out.Nodes, ps), append(out.Labels, ys)
		}
	}
	return out, nil
}

// WritePredictions predicts a run directory's test split (Predict) and writes the result into
// the directory (runfiles.PredictionsFile), atomically, holding the directory's lock so that no
// trainer runs there meanwhile.
func WritePredictions(dir string, workers int, log io.Writer) (string, error) {
	lock, err := rundir.LockDir(dir, log)
	if err != nil {
		return "", err
	}
	defer lock.Release()
	p, err := Predict(dir, workers, log)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, runfiles.PredictionsFile)
	if err := runfiles.WritePredictions(path, p); err != nil {
		return "", err
	}
	return path, nil
}
