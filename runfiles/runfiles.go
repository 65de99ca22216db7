// Package runfiles is the on-disk form of a training run: the files of a run directory
// (<out>/<run name>/seed<seed>/), the result.json record (Result), the metrics.jsonl lines
// (Epoch), the checkpoint container, the stop reasons and metric names those files use, and the
// one atomic file write every package of the module writes through.
//
// It imports only the standard library, so the packages that read runs (sweep, report) do
// not depend on the training code.
package runfiles

// Files of a run directory (<out>/<run name>/seed<seed>/).
const (
	ConfigFile     = "config.yaml"   // the fully resolved config
	MetricsFile    = "metrics.jsonl" // one Epoch per line
	ResultFile     = "result.json"   // a Result, written once the run has stopped
	CheckpointFile = "checkpoint.bin"
	// PredictionsFile holds a trained model's test predictions (train -predict), checkpoint container.
	PredictionsFile = "predictions.bin"
	LockFile        = "lock"      // the trainer's advisory lock, with its holder's PID, host and start time
	LogFile         = "train.log" // the trainer's output, when a sweep or a Slurm task keeps it
	// TBDir is the folder of the run's TensorBoard event files (package tfevents).
	TBDir = "tb"
	// TBFinalPrefix starts the TensorBoard tags of a run's final figures (final/test_<metric>,
	// final/val_<metric>, final/train_<metric>), written once at its end.
	TBFinalPrefix = "final/"
	// OldPrefix starts the name of the hidden folder (OldPrefix + UTC time) into which a
	// restarted run's files are moved; hidden so that result scans skip it.
	OldPrefix = ".old-"
)

// Stop reasons (Result.StoppedBy).
const (
	StopMinLR     = "min_lr"
	StopMaxTime   = "max_time"
	StopMaxEpochs = "max_epochs"
	StopAccuracy  = "train_accuracy" // the training accuracy reached train.stop_accuracy
	StopNaN       = "nan"
	StopSignal    = "signal" // interrupted: the run can be resumed from its checkpoint
)

// Finished reports whether a run that stopped this way is over (a signal or a non-finite loss
// leaves it resumable or to be inspected).
func Finished(stoppedBy string) bool {
	return stoppedBy == StopMinLR || stoppedBy == StopMaxTime || stoppedBy == StopMaxEpochs || stoppedBy == StopAccuracy
}

// Metric names (Result.Metric).
const (
	MetricMAE         = "mae"               // lower is better
	MetricAccuracy    = "accuracy"          // %, higher is better
	MetricWeightedAcc = "weighted_accuracy" // SBM per-batch balanced accuracy, %, higher is better
	MetricAP          = "ap"                // multi-label average precision (LRGB, OGB eval_ap), a fraction in [0, 1], higher is better
)

// KnownMetric reports whether m is one of the Metric* names.
func KnownMetric(m string) bool {
	return m == MetricMAE || m == MetricAccuracy || m == MetricWeightedAcc || m == MetricAP
}

// IsAccuracy reports whether the metric is an accuracy in % (what train.stop_accuracy compares
// and the tables scale to a fraction).
func IsAccuracy(metric string) bool { return metric == MetricAccuracy || metric == MetricWeightedAcc }

// LowerIsBetter reports whether smaller values of the metric are better (MAE).
func LowerIsBetter(metric string) bool { return metric == MetricMAE }
