package tfread

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

// Run is a run directory's tb folder read back: per epoch (the event's step) the scalars of
// its event, and the end's events (hparams summaries, final/ figures) in order.
type Run struct {
	Epochs map[int64]map[string]float32
	End    []Event
}

// ReadRun reads the tb folder of the run directory dir; an epoch two events hold is an error.
func ReadRun(dir string) (*Run, error) {
	tb := filepath.Join(dir, runfiles.TBDir)
	evs, err := ReadDir(tb)
	if err != nil {
		return nil, err
	}
	r := &Run{Epochs: map[int64]map[string]float32{}}
	for _, e := range evs {
		switch {
		case e.FileVersion != "":
		case len(e.Values) > 0 && (strings.HasPrefix(e.Values[0].Tag, "_hparams_/") || strings.HasPrefix(e.Values[0].Tag, "final/")):
			r.End = append(r.End, e)
		default:
			if r.Epochs[e.Step] != nil {
				return nil, fmt.Errorf("%s: epoch %d is held twice", tb, e.Step)
			}
			vals := map[string]float32{}
			for _, v := range e.Values {
				if !v.HasSimple {
					return nil, fmt.Errorf("%s: epoch %d: %s is no simple value", tb, e.Step, v.Tag)
				}
				vals[v.Tag] = v.Simple
			}
			r.Epochs[e.Step] = vals
		}
	}
	return r, nil
}

// MatchMetrics reads the run directory dir's tb folder and checks that its epochs are those of
// its metrics.jsonl: every epoch once, with each figure under its TensorBoard tag as a float32
// (train/loss, train/<metric>, val/loss and val/<metric> with a validation split,
// test/<metric> with a test split, lr, time/epoch_seconds, time/eval_seconds,
// time/elapsed_seconds, memory/peak_bytes where the record has peak_bytes) and no other tag.
func MatchMetrics(dir, metric string, hasVal, hasTest bool) (*Run, error) {
	eps, err := runfiles.ReadMetrics(filepath.Join(dir, runfiles.MetricsFile))
	if err != nil {
		return nil, err
	}
	r, err := ReadRun(dir)
	if err != nil {
		return nil, err
	}
	if len(r.Epochs) != len(eps) {
		return nil, fmt.Errorf("%s: the tb folder holds %d epochs, metrics.jsonl %d", dir, len(r.Epochs), len(eps))
	}
	for _, ep := range eps {
		want := map[string]float64{"train/loss": ep.TrainLoss, "train/" + metric: ep.TrainMetric, "lr": ep.LR,
			"time/epoch_seconds": ep.Seconds, "time/eval_seconds": ep.EvalSeconds, "time/elapsed_seconds": ep.Elapsed}
		if hasVal {
			want["val/loss"], want["val/"+metric] = ep.ValLoss, ep.ValMetric
		}
		if hasTest {
			want["test/"+metric] = ep.TestMetric
			if ep.TestLoss != nil {
				want["test/loss"] = *ep.TestLoss
			}
		}
		if ep.PeakBytes > 0 {
			want["memory/peak_bytes"] = float64(ep.PeakBytes)
		}
		got := r.Epochs[int64(ep.Epoch)]
		if len(got) != len(want) {
			return nil, fmt.Errorf("%s: epoch %d: tags %v, want those of %v", dir, ep.Epoch, got, want)
		}
		for tag, x := range want {
			if v, ok := got[tag]; !ok || v != float32(x) {
				return nil, fmt.Errorf("%s: epoch %d %s: %v (present %v), metrics.jsonl %v", dir, ep.Epoch, tag, v, ok, float32(x))
			}
		}
	}
	return r, nil
}

// SameFigures compares the epochs of two runs' boards, the measurements aside: timings (time/)
// and peak memory (memory/).
func SameFigures(a, b *Run) error {
	if len(a.Epochs) != len(b.Epochs) {
		return fmt.Errorf("%d and %d epochs", len(a.Epochs), len(b.Epochs))
	}
	for step, vals := range a.Epochs {
		if len(vals) != len(b.Epochs[step]) {
			return fmt.Errorf("epoch %d: tags %v and %v", step, vals, b.Epochs[step])
		}
		for tag, v := range vals {
			if w, ok := b.Epochs[step][tag]; !measured(tag) && (!ok || w != v) {
				return fmt.Errorf("epoch %d %s: %v and %v", step, tag, v, w)
			}
		}
	}
	return nil
}

// measured reports a tag whose value is a measurement of the machine, not of the training:
// never equal between two runs.
func measured(tag string) bool {
	return strings.HasPrefix(tag, "time/") || strings.HasPrefix(tag, "memory/")
}
