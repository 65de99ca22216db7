package train

import (
	"io"
	"path/filepath"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// restoreRun rebuilds a run directory's model on the CPU from its resolved config and
// checkpoint: the model as it is at its last epoch, which the run's final evaluation scored,
// with its data loaded. It writes nothing and takes no lock (the files it reads are written
// atomically). The caller closes r.tr.
func restoreRun(dir string, workers int, log io.Writer) (*run, error) {
	if log == nil {
		log = io.Discard
	}
	c, err := config.Load(filepath.Join(dir, runfiles.ConfigFile), []string{"device=cpu"})
	if err != nil {
		return nil, err
	}
	ck, err := ReadCheckpoint(filepath.Join(dir, runfiles.CheckpointFile))
	if err != nil {
		return nil, err
	}
	r := &run{o: Options{Run: c, Seed: ck.Seed, Dir: dir, Workers: workers, NoMemoryGuard: true}, cfg: c, log: log}
	build, _, err := r.dataAndModel(false)
	if err != nil {
		return nil, err
	}
	r.metric = metricFor(r.io)
	if err := r.buildTrainer(build); err != nil {
		return nil, err
	}
	if err := ck.Restore(r.p, r.tr.Opt); err != nil {
		r.tr.Close()
		return nil, err
	}
	r.step = cpuStepper{r.tr}
	return r, nil
}

// MetricFor is the metric of a model's task (runfiles.Metric*), from its loss: accuracy for
// cross-entropy, the weighted accuracy for the SBM loss, average precision for the multi-label
// BCE loss, MAE (over every target of every graph) for L1.
func MetricFor(io nn.IO) string { return metricFor(io) }

func metricFor(io nn.IO) string {
	switch io.Loss {
	case nn.LossCE:
		return runfiles.MetricAccuracy
	case nn.LossSBM:
		return runfiles.MetricWeightedAcc
	case nn.LossBCE:
		return runfiles.MetricAP
	}
	return runfiles.MetricMAE
}
