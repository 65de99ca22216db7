package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/rewiregnn/rewiregnn/data"
)

// Allowed values of the enumerated keys.
var (
	Devices    = []string{"cpu", "cuda", "emu", "auto"} // gpu.Devices; emu: the emulated GPU (slow, for checking)
	Monitors   = []string{"val_loss", "train_loss"}
	SPEncoders = []string{"table", "linear"}
	Readouts   = []string{"mean", "sum", "cls", "node", "root"}
)

// ReadoutAuto is the config-file value of model.readout that Load replaces by the dataset's
// readout.
const ReadoutAuto = "auto"

// Task levels: what a dataset predicts, which decides the readouts it allows.
const (
	levelGraph = "graph" // one prediction per graph from pooled node features
	levelNode  = "node"  // one prediction per node
	levelRoot  = "root"  // one prediction per graph read at a designated node (NeighborsMatch)
)

// datasetLevel is the task level of a dataset of data's registry ("" for an unknown one).
func datasetLevel(name string) string {
	d, _, ok := data.LookupDataset(name)
	switch {
	case !ok:
		return ""
	case d.Task == data.NodeClass:
		return levelNode
	case d.Task == data.RootClass:
		return levelRoot
	}
	return levelGraph
}

// autoReadout is the readout "auto" stands for.
func autoReadout(dataset string, cls bool) string {
	switch datasetLevel(dataset) {
	case levelNode:
		return "node"
	case levelRoot:
		return "root"
	}
	if cls {
		return "cls"
	}
	return "mean"
}

// FieldError is one impossible value, with its dotted key.
type FieldError struct {
	Key string
	Msg string
}

func (e *FieldError) Error() string { return e.Key + ": " + e.Msg }

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

// Validate reports every impossible value, one *FieldError per problem (joined with
// errors.Join), or nil.
func (r *Run) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &FieldError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	oneOf := func(key, val string, allowed []string, what string) bool {
		if !contains(allowed, val) {
			bad(key, "unknown %s %q (want %s)", what, val, orList(allowed))
			return false
		}
		return true
	}

	if r.Name != "" && (!nameRE.MatchString(r.Name) || strings.Contains(r.Name, "..")) {
		bad("name", "%q cannot name a folder (letters, digits, '.', '_', '+', '-'; no '..')", r.Name)
	}
	oneOf("device", r.Device, Devices, "device")
	if r.Out == "" {
		bad("out", "empty: the runs need a folder")
	}

	// dataset
	d := &r.Dataset
	ds, _, dsKnown := data.LookupDataset(d.Name)
	if !dsKnown {
		bad("dataset.name", "unknown dataset %q (known: %s)", d.Name, strings.Join(data.DatasetNames(), ", "))
	}
	if d.R < 1 && d.R != RAuto {
		bad("dataset.r", "the rewiring radius must be at least 1 (or auto), got %d", d.R)
	}
	enc, encOK := data.LookupEncoding(d.Encoding)
	if !encOK {
		bad("dataset.encoding", "unknown encoding %q (want %s)", d.Encoding, orList(data.EncodingNames()))
	}
	needs := encOK && enc.NeedsWidth() && enc.WidthOf(d.encodingParams()) < 1
	if d.Q < 0 {
		bad("dataset.q", "the Laplacian width cannot be negative, got %d", d.Q)
	} else if needs && enc.Width == data.WidthQ {
		bad("dataset.q", "the %s encoding needs %s, got %d", d.Encoding, enc.Need, d.Q)
	}
	if d.RWSteps < 0 {
		bad(KeyRWSteps, "the number of random-walk steps cannot be negative, got %d", d.RWSteps)
	} else if needs && enc.Width == data.WidthSteps {
		bad(KeyRWSteps, "the %s encoding needs %s, got %d", d.Encoding, enc.Need, d.RWSteps)
	} else if d.RWSteps > MaxRWSteps {
		bad(KeyRWSteps, "at most %d random-walk steps (the encoding has one column per step), got %d", MaxRWSteps, d.RWSteps)
	}
	if d.Subset < 0 {
		bad("dataset.subset", "want 0 (all graphs) or a positive count, got %d", d.Subset)
	}
	if d.ValFraction < 0 || d.ValFraction >= 1 {
		bad("dataset.val_fraction", "want a fraction in [0, 1), got %g", d.ValFraction)
	}
	noVal := !contains(ds.Splits, "val")
	if dsKnown && !noVal && d.ValFraction != 0 {
		bad("dataset.val_fraction", "%s has a validation split, so it must be 0 (it carves one only from datasets without: %s), got %g", d.Name, strings.Join(data.WithoutSplit("val"), ", "), d.ValFraction)
	}

	// model
	m := &r.Model
	modelOK := oneOf("model.name", m.Name, ModelNames, "model")
	if m.Layers < 1 {
		bad("model.layers", "want at least 1 layer, got %d", m.Layers)
	}
	if m.Hidden < 4 {
		bad("model.hidden", "want a hidden width of at least 4, got %d", m.Hidden)
	}
	for _, p := range []struct {
		key string
		v   float64
	}{{"model.dropout", m.Dropout}, {"model.in_feat_dropout", m.InFeatDropout}} {
		if p.v < 0 || p.v >= 1 {
			bad(p.key, "want a probability in [0, 1), got %g", p.v)
		}
	}
	oneOf("model.sp_encoder", m.SPEncoder, SPEncoders, "shortest-path encoder")
	if modelOK {
		r.validateModel(bad) // the model's own keys and rules, from its spec (spec.go)
	}
	if m.Readout == ReadoutAuto {
		bad("model.readout", "%q is resolved by Load from the dataset; give %s", m.Readout, orList(Readouts))
	} else if oneOf("model.readout", m.Readout, Readouts, "readout") && dsKnown {
		switch level := datasetLevel(d.Name); {
		case m.Readout == "cls" && !d.CLS:
			bad("model.readout", "cls reads the CLS node's feature, but dataset.cls is false")
		case level == levelNode && m.Readout != "node":
			bad("model.readout", "%q pools a graph, but %s predicts per node (want node)", m.Readout, d.Name)
		case level != levelNode && m.Readout == "node":
			bad("model.readout", "node predicts per node, but %s predicts per graph (want %s)", d.Name, autoReadout(d.Name, d.CLS))
		case level != levelRoot && m.Readout == "root":
			bad("model.readout", "root reads the NeighborsMatch root node; %s has none (want %s)", d.Name, autoReadout(d.Name, d.CLS))
		}
	}

	// train
	t := &r.Train
	if len(t.Seeds) == 0 {
		bad("train.seeds", "empty: give at least one seed (the paper's are 41,95,12,35)")
	} else {
		seen := map[int64]bool{}
		for _, s := range t.Seeds {
			if seen[s] {
				bad("train.seeds", "seed %d is listed twice", s)
			}
			seen[s] = true
		}
	}
	if t.BatchSize < 1 {
		bad("train.batch_size", "want at least 1 graph per batch, got %d", t.BatchSize)
	}
	if t.StopAccuracy < 0 || t.StopAccuracy > 100 {
		bad("train.stop_accuracy", "want a training accuracy in %% (0..100; 0 never stops), got %g", t.StopAccuracy)
	}
	if t.LR <= 0 {
		bad("train.lr", "the learning rate must be positive, got %g", t.LR)
	}
	if t.LRFactor <= 0 || t.LRFactor >= 1 {
		bad("train.lr_factor", "the plateau factor must lie strictly between 0 and 1, got %g", t.LRFactor)
	}
	if t.Patience < 0 {
		bad("train.patience", "cannot be negative, got %d", t.Patience)
	}
	if t.MinLR < 0 {
		bad("train.min_lr", "cannot be negative (0 never stops on the learning rate), got %g", t.MinLR)
	} else if t.LR > 0 && t.MinLR > t.LR {
		bad("train.min_lr", "must not exceed train.lr %g (the run would stop after its first epoch), got %g", t.LR, t.MinLR)
	}
	if t.MaxEpochs < 1 {
		bad("train.max_epochs", "want at least 1 epoch, got %d", t.MaxEpochs)
	}
	if t.MaxTime <= 0 {
		bad("train.max_time", "the wall-clock cap must be positive (like 12h or 90m), got %s", formatDuration(t.MaxTime))
	}
	if t.Buckets < 1 {
		bad("train.buckets", "want at least 1 shape bucket, got %d", t.Buckets)
	}
	r.validateGPU(bad)
	if oneOf("train.monitor", t.Monitor, Monitors, "monitor") && dsKnown && noVal && t.Monitor == "val_loss" && d.ValFraction == 0 {
		bad("train.monitor", "val_loss needs a validation split, which %s lacks: set dataset.val_fraction (e.g. 0.1) or monitor train_loss", d.Name)
	}
	return errors.Join(errs...)
}

// encodingParams are the settings an encoding's width may come from.
func (d *Dataset) encodingParams() data.EncodingParams {
	return data.EncodingParams{R: d.R, Q: d.Q, Steps: d.RWSteps}
}

// orList writes "a, b or c".
func orList(xs []string) string {
	if len(xs) == 1 {
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}
