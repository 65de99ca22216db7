package runfiles

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// Epoch is one line of metrics.jsonl.
type Epoch struct {
	Epoch       int     `json:"epoch"` // 0-based
	LR          float64 `json:"lr"`    // learning rate used during this epoch
	TrainLoss   float64 `json:"train_loss"`
	TrainMetric float64 `json:"train_metric"`
	// ValLoss and ValMetric are the validation split's figures; a run without a validation
	// split (NoVal) leaves both keys out of its lines, and they read as 0.
	ValLoss    float64 `json:"val_loss"`
	ValMetric  float64 `json:"val_metric"`
	TestMetric float64 `json:"test_metric"`
	// TestLoss is the test split's loss in evaluation mode (the same reduction as val_loss);
	// absent for a run without a test split and in files written before runs recorded it.
	TestLoss    *float64 `json:"test_loss,omitempty"`
	Seconds     float64  `json:"seconds"`         // training part of the epoch (evaluation excluded)
	EvalSeconds float64  `json:"eval_seconds"`    // evaluation of val and test
	Elapsed     float64  `json:"elapsed_seconds"` // wall time since the run started (preprocessing included)
	// PeakBytes is the most memory the run had held by the epoch's end, a measurement like the
	// timings: on a GPU the bytes its device allocator had handed out at once, on the CPU the
	// process's peak resident set (shared by the seeds of -parallel); absent where the system
	// does not report it, and in files written before runs recorded it.
	PeakBytes int64 `json:"peak_bytes,omitempty"`
	// ConfigHash and Departures are those in force during this epoch (a resumed run may have
	// changed its budget); absent in files written before runs recorded them.
	ConfigHash string      `json:"config_hash,omitempty"`
	Departures []Departure `json:"departures,omitempty"`
	// NoVal marks the epoch of a run without a validation split (NeighborsMatch without
	// dataset.val_fraction): its line has no val_loss and no val_metric, and a line without
	// them reads with NoVal set.
	NoVal bool `json:"-"`
}

// epochJSON is Epoch without its methods, so that MarshalJSON and UnmarshalJSON can use the
// default encoding.
type epochJSON Epoch

// epochLine is a metrics.jsonl line as read, and as written without a validation split: the
// validation keys, shadowed by these pointers, are left out when nil and nil when absent.
type epochLine struct {
	epochJSON
	ValLoss   *float64 `json:"val_loss,omitempty"`
	ValMetric *float64 `json:"val_metric,omitempty"`
}

// MarshalJSON writes the epoch's line; without the validation keys when NoVal.
func (e Epoch) MarshalJSON() ([]byte, error) {
	if e.NoVal {
		return json.Marshal(epochLine{epochJSON: epochJSON(e)})
	}
	return json.Marshal(epochJSON(e)) // the keys in their order of old
}

// UnmarshalJSON reads a line strictly (an unknown key is an error naming it, as ParseMetrics
// wants); a line with neither val_loss nor val_metric is an epoch without a validation split
// (NoVal).
func (e *Epoch) UnmarshalJSON(b []byte) error {
	var l epochLine
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return err
	}
	*e = Epoch(l.epochJSON)
	e.NoVal = l.ValLoss == nil && l.ValMetric == nil
	e.ValLoss, e.ValMetric = deref(l.ValLoss), deref(l.ValMetric)
	return nil
}

// CheckFinite names the first of the epoch's losses and metrics that is not finite (metrics.jsonl
// can hold only finite numbers, and such an epoch has diverged).
func (e *Epoch) CheckFinite() error {
	for _, v := range []struct {
		name string
		x    float64
	}{{"train_loss", e.TrainLoss}, {"train_metric", e.TrainMetric}, {"val_loss", e.ValLoss},
		{"val_metric", e.ValMetric}, {"test_metric", e.TestMetric}, {"test_loss", deref(e.TestLoss)}} {
		if math.IsNaN(v.x) || math.IsInf(v.x, 0) {
			return fmt.Errorf("%s is %v", v.name, v.x)
		}
	}
	return nil
}

// deref is *x, or 0 for an absent value.
func deref(x *float64) float64 {
	if x == nil {
		return 0
	}
	return *x
}

// Result is result.json: the final metrics of a finished run.
type Result struct {
	Name     string `json:"name"`
	Dataset  string `json:"dataset"`
	Model    string `json:"model"`
	Encoding string `json:"encoding"`
	CLS      bool   `json:"cls"`
	R        int    `json:"r"`
	Seed     int64  `json:"seed"`

	Metric string `json:"metric"` // mae | accuracy | weighted_accuracy
	// The final metrics. A diverged run (Diverged) measured none: its result.json leaves the
	// three keys out, and they read as 0 here; use them only when Reportable says "".
	TestMetric  float64 `json:"test_metric"`
	ValMetric   float64 `json:"val_metric"`
	TrainMetric float64 `json:"train_metric"` // final evaluation of the training split in eval mode
	// Whole-split balanced accuracies (SBM datasets only), beside the per-batch definition.
	TestBalanced  *float64 `json:"test_balanced_accuracy,omitempty"`
	ValBalanced   *float64 `json:"val_balanced_accuracy,omitempty"`
	TrainBalanced *float64 `json:"train_balanced_accuracy,omitempty"`

	Epochs          int     `json:"epochs"`
	SecondsPerEpoch float64 `json:"seconds_per_epoch"` // mean wall time of the training part of an epoch
	TotalSeconds    float64 `json:"total_seconds"`     // whole run, preprocessing included
	PreprocessSecs  float64 `json:"preprocess_seconds"`
	TrainGraphs     int     `json:"train_graphs"`
	Params          int     `json:"params"`
	Device          string  `json:"device"`
	StoppedBy       string  `json:"stopped_by"` // min_lr | max_time | max_epochs | nan | signal
	FinalLR         float64 `json:"final_lr"`
	Resumed         int     `json:"resumed"` // times the run was resumed from a checkpoint
	// TestSplit names the split test_metric was measured on when the dataset has no test
	// split ("train" for the Erdős–Rényi task); empty for the test split.
	TestSplit string `json:"test_split,omitempty"`
	// ConfigHash is config.Run.Hash of the resolved config the run ended with: every key that
	// changes the trained model (not out, dataset.dir, dataset.cache, train.seeds, name,
	// device). Empty in results written before runs recorded it (Provenance Unknown).
	ConfigHash string `json:"config_hash,omitempty"`
	// Departures are the budget keys changed from the configured protocol, over the whole run
	// (all sessions); Reductions the budget keys the config itself set below the built-in
	// default.
	Departures []Departure `json:"departures,omitempty"`
	Reductions []Reduction `json:"reductions,omitempty"`
	// ValSplit is "none" when the run had no validation split (NeighborsMatch without
	// dataset.val_fraction): result.json then has no val_metric (ValMetric reads 0, and means
	// nothing); empty otherwise.
	ValSplit string `json:"val_split,omitempty"`
	// DataSource is "pyg" when the run read its dataset from the public distribution
	// (docs/datasets.md); empty for the dataset's other source (the data folder's files, computed
	// superpixels, a generator). Seeds of one setting from different sources are not aggregated.
	DataSource string `json:"data_source,omitempty"`
	// GPU are the GPU options a run on a GPU or the emulated GPU trained with; absent for a CPU
	// run and in results written before runs recorded them.
	GPU *GPUOptions `json:"gpu,omitempty"`
}

// GPUOptions are result.json's record of the GPU options a run used (train.precision and the
// config's gpu section, gpuopt.Options; docs/gpu.md §"Switches"), with what the device made of
// them: CUDAGraphs false where a capture failed and the steps were queued launch by launch,
// Kernels the kernels' target (compute_90, or the emulator's compiler).
type GPUOptions struct {
	Precision       string `json:"precision"`
	EdgeFolds       string `json:"edge_folds"`
	BatchedProducts bool   `json:"batched_products"`
	CUDAGraphs      bool   `json:"cuda_graphs"`
	NarrowGradW     bool   `json:"narrow_gradw"`
	KernelDefines   string `json:"kernel_defines,omitempty"`
	Arch            int    `json:"arch,omitempty"`
	Kernels         string `json:"kernels,omitempty"`
}

// Check verifies the fields of a result that reports rely on.
func Check(r *Result) error {
	switch {
	case r.Name == "":
		return errors.New(`key "name" is missing or empty`)
	case r.Dataset == "":
		return errors.New(`key "dataset" is missing or empty`)
	case r.Model == "":
		return errors.New(`key "model" is missing or empty`)
	case r.R < 1:
		return fmt.Errorf(`key "r" is %d, want ≥ 1`, r.R)
	case r.Epochs < 1 && Finished(r.StoppedBy): // interrupted or diverged inside its first epoch: 0
		return fmt.Errorf(`key "epochs" is %d, want ≥ 1`, r.Epochs)
	case r.Epochs < 0:
		return fmt.Errorf(`key "epochs" is %d, want ≥ 0`, r.Epochs)
	}
	if !KnownMetric(r.Metric) {
		return fmt.Errorf(`key "metric" is %q, want %s, %s, %s or %s`, r.Metric, MetricMAE, MetricAccuracy, MetricWeightedAcc, MetricAP)
	}
	switch r.StoppedBy {
	case StopMinLR, StopMaxTime, StopMaxEpochs, StopAccuracy, StopNaN, StopSignal:
	default:
		return fmt.Errorf(`key "stopped_by" is %q, want one of min_lr, max_time, max_epochs, train_accuracy, nan, signal`, r.StoppedBy)
	}
	if err := checkProvenance(r.ConfigHash, r.Departures); err != nil {
		return err
	}
	return checkReductions(r.Reductions)
}

// Diverged reports whether the run stopped on a non-finite loss (stopped_by nan). This
// is the one definition every reader uses (the trainer's summary, sweep, the tables): such a
// run has no final metrics, and its result.json holds none (MarshalJSON).
func (r *Result) Diverged() bool { return r.StoppedBy == StopNaN }

// Reportable says why a result has no final metrics a table may report, or "" when it has: a run
// stopped by a signal is unfinished (resume it), a diverged run measured nothing final.
func (r *Result) Reportable() string {
	epochs := fmt.Sprintf("%d epochs", r.Epochs)
	if r.Epochs == 1 {
		epochs = "1 epoch" // runfiles is a leaf: internal/plural's rule, for the one noun it needs
	}
	switch {
	case r.StoppedBy == StopSignal:
		return fmt.Sprintf("stopped by a signal after %s (unfinished; resume it)", epochs)
	case r.Diverged():
		return fmt.Sprintf("diverged: stopped on a non-finite loss after %s (no final metrics)", epochs)
	}
	return ""
}

// resultJSON is Result without its methods, so that MarshalJSON can encode it.
type resultJSON Result

// divergedJSON is a diverged result as result.json holds it: the metric keys, shadowed by
// these nil fields, are left out.
type divergedJSON struct {
	resultJSON
	TestMetric  *float64 `json:"test_metric,omitempty"`
	ValMetric   *float64 `json:"val_metric,omitempty"`
	TrainMetric *float64 `json:"train_metric,omitempty"`
}

// MarshalJSON writes the result; a diverged one without test_metric, val_metric and
// train_metric (and the balanced accuracies), since it has no final metrics, and one without a
// validation split (ValSplit "none") without val_metric.
func (r Result) MarshalJSON() ([]byte, error) {
	switch {
	case r.Diverged():
		r.clearMetrics()
		return json.Marshal(divergedJSON{resultJSON: resultJSON(r)})
	case r.ValSplit == "none":
		return json.Marshal(noValJSON{resultJSON: resultJSON(r)})
	}
	return json.Marshal(resultJSON(r))
}

// noValJSON is the result of a run without a validation split (ValSplit "none") as
// result.json holds it: val_metric, shadowed by this nil field, is left out.
type noValJSON struct {
	resultJSON
	ValMetric *float64 `json:"val_metric,omitempty"`
}

// clearMetrics zeroes the final metrics (a diverged result has none).
func (r *Result) clearMetrics() {
	r.TestMetric, r.ValMetric, r.TrainMetric = 0, 0, 0
	r.TestBalanced, r.ValBalanced, r.TrainBalanced = nil, nil, nil
}
