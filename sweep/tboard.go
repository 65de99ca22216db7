package sweep

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/runfiles"
	"github.com/rewiregnn/rewiregnn/tfevents"
)

// ExperimentPath is the TensorBoard hparams experiment summary a local sweep of grid writes
// into root, its runs' out folder: an event file at the top of the folder TensorBoard is
// pointed at (tensorboard --logdir root), where the hparams plugin looks for the experiment.
func ExperimentPath(root, grid string) string {
	return filepath.Join(root, tfevents.FilePrefix+"sweep."+grid)
}

// WriteExperiment writes (atomically, replacing an earlier one) the hparams experiment summary
// of a sweep: as hyperparameters the config.HParamKeys whose values differ between the jobs'
// runs (all of them when none differs), each with the values it takes; as metrics the final
// figures the trainer writes at a run's end (final/test_<metric>, final/val_<metric>,
// final/train_<metric>) of the metrics of the jobs' results so far. TensorBoard's hparams tab
// then shows these columns for the runs' sessions (each run's tb folder; the seeds of a run are
// one session group).
func WriteExperiment(root, grid string, jobs []Job, now time.Time) error {
	path := ExperimentPath(root, grid)
	domains := map[string][]tfevents.HValue{}
	for _, k := range variedKeys(jobs) {
		seen := map[string]bool{}
		for _, j := range jobs {
			v, _ := j.Config.Value(k)
			h, ok := tfevents.HValueOf(v)
			if s := fmt.Sprint(v); ok && !seen[s] {
				seen[s] = true
				domains[k] = append(domains[k], h)
			}
		}
	}
	wall := tfevents.Wall(now)
	data := tfevents.AppendRecord(nil, tfevents.VersionEvent(wall))
	data = tfevents.AppendRecord(data, tfevents.ExperimentEvent(wall, domains, finalMetrics(jobs)))
	if err := runfiles.WriteAtomic(path, data, tfevents.FilePerm); err != nil {
		return fmt.Errorf("tensorboard experiment: %w", err)
	}
	return nil
}

// variedKeys are the config.HParamKeys whose values differ between the jobs' runs, or all of
// them when none does.
func variedKeys(jobs []Job) []string {
	var out []string
	for _, k := range config.HParamKeys {
		seen := map[string]bool{}
		for _, j := range jobs {
			v, _ := j.Config.Value(k)
			seen[fmt.Sprint(v)] = true
		}
		if len(seen) > 1 {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return config.HParamKeys
	}
	return out
}

// finalMetrics are the final/ tags of the metrics of the jobs' results (each metric once, in
// the jobs' order); a result without a validation split has no final/val_ figure.
func finalMetrics(jobs []Job) []tfevents.Metric {
	var out []tfevents.Metric
	seen := map[string]bool{}
	add := func(tag string, training bool) {
		if !seen[tag] {
			seen[tag] = true
			out = append(out, tfevents.Metric{Tag: tag, Training: training})
		}
	}
	for _, j := range jobs {
		res, err := runfiles.ReadResult(filepath.Join(j.Dir, runfiles.ResultFile))
		if err != nil || res.Diverged() {
			continue
		}
		add(runfiles.TBFinalPrefix+"test_"+res.Metric, false)
		if res.ValSplit != "none" {
			add(runfiles.TBFinalPrefix+"val_"+res.Metric, false)
		}
		add(runfiles.TBFinalPrefix+"train_"+res.Metric, true)
	}
	return out
}
