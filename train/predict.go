package train

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// Predict loads a run directory's resolved config and checkpoint (the model as it is at its last
// epoch, which the run's final evaluation scored) and predicts the test split on the CPU. It
// writes nothing into the directory and takes no lock: the files it reads are written
// atomically.
func Predict(dir string, workers int, log io.Writer) (*runfiles.Predictions, error) {
	if log == nil {
		log = io.Discard
	}
	c, err := config.Load(filepath.Join(dir, runfiles.ConfigFile), []string{"device=cpu"})
	if err != nil {
		return nil, fmt.Errorf("predict %s: %w", dir, err)
	}
	ck, err := ReadCheckpoint(filepath.Join(dir, runfiles.CheckpointFile))
	if err != nil {
		return nil, fmt.Errorf("predict %s: %w", dir, err)
	}
	r := &run{o: Options{Run: c, Seed: ck.Seed, Dir: dir, Workers: workers, NoMemoryGuard: true}, cfg: c, log: log}
	if err := r.loadData(); err != nil {
		return nil, fmt.Errorf("predict %s: %w", dir, err)
	}
	if len(r.testB) == 0 {
		return nil, fmt.Errorf("predict %s: %s has no test split", dir, c.Dataset.Name)
	}
	build, err := r.model()
	if err != nil {
		return nil, fmt.Errorf("predict %s: %w", dir, err)
	}
	if err := r.buildTrainer(build); err != nil {
		return nil, fmt.Errorf("predict %s: %w", dir, err)
	}
	defer r.tr.Close()
	if err := ck.Restore(r.p, r.tr.Opt); err != nil {
		return nil, fmt.Errorf("predict %s: %w", dir, err)
	}
	step := cpuStepper{r.tr}
	out := &runfiles.Predictions{Run: c.RunName(), Dataset: c.Dataset.Name, Seed: ck.Seed, BatchSize: c.Train.BatchSize}
	k := r.io.Out
	for _, bt := range r.testB {
		_, pred, err := step.Eval(bt)
		if err != nil {
			return nil, fmt.Errorf("predict %s: %w", dir, err)
		}
		if r.io.Readout != nn.ReadoutNode {
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
	lock, err := LockRun(dir, log)
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
