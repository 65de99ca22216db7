package runlog

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/internal/plural"
	"github.com/rewiregnn/rewiregnn/rundir"
	"github.com/rewiregnn/rewiregnn/runfiles"
	"github.com/rewiregnn/rewiregnn/tfevents"
)

// TensorBoard events (docs/design.md §"TensorBoard"): each session of a run appends to a new
// event file in <run dir>/tb/ one event per epoch, holding the figures of the metrics.jsonl
// record of that epoch (epochScalars), and at the run's end the hparams plugin's session
// summaries with the final figures. A resume first repairs the folder (repairBoard) so that
// its files hold each epoch the checkpoint covers once, as metrics.jsonl does.
//
// TensorBoard is a view of the run, not part of it: an error writing it is reported once in
// the run's log and the session trains on without events; the next -resume writes the epochs
// the folder lacks from metrics.jsonl, and for a run that is over (none will resume it)
// `train -rebuild-tb DIR` (RebuildBoard) writes the whole folder anew from metrics.jsonl and
// result.json.

// epochScalars are the TensorBoard scalars of one metrics.jsonl record, the same values under
// TensorBoard's tags (step: the record's epoch); the splits a run lacks are left out.
func epochScalars(ep runfiles.Epoch, metric string, hasVal, hasTest bool) []tfevents.Scalar {
	s := []tfevents.Scalar{{Tag: "train/loss", Value: ep.TrainLoss}, {Tag: "train/" + metric, Value: ep.TrainMetric}}
	if hasVal {
		s = append(s, tfevents.Scalar{Tag: "val/loss", Value: ep.ValLoss}, tfevents.Scalar{Tag: "val/" + metric, Value: ep.ValMetric})
	}
	if hasTest {
		s = append(s, tfevents.Scalar{Tag: "test/" + metric, Value: ep.TestMetric})
		if ep.TestLoss != nil { // absent in records written before runs kept it
			s = append(s, tfevents.Scalar{Tag: "test/loss", Value: *ep.TestLoss})
		}
	}
	s = append(s, tfevents.Scalar{Tag: "lr", Value: ep.LR}, tfevents.Scalar{Tag: "time/epoch_seconds", Value: ep.Seconds},
		tfevents.Scalar{Tag: "time/eval_seconds", Value: ep.EvalSeconds}, tfevents.Scalar{Tag: "time/elapsed_seconds", Value: ep.Elapsed})
	if ep.PeakBytes > 0 {
		s = append(s, tfevents.Scalar{Tag: "memory/peak_bytes", Value: float64(ep.PeakBytes)})
	}
	return s
}

// epochEvent reports whether an event of the folder is an epoch's (not a version event, and
// not one of the end's hparams or final figures).
func epochEvent(in tfevents.Info) bool {
	if len(in.Tags) == 0 {
		return false
	}
	for _, t := range in.Tags {
		if strings.HasPrefix(t, tfevents.HParamsTagPrefix) || strings.HasPrefix(t, runfiles.TBFinalPrefix) {
			return false
		}
	}
	return true
}

// Board is a session's TensorBoard event file in a run directory's tb folder; its methods do
// nothing on a nil Board or once writing failed.
type Board struct {
	dir             string // the run directory
	metric          string
	hasVal, hasTest bool
	log             io.Writer
	w               *tfevents.Writer // nil: none (it failed, or is closed)
}

// OpenBoard readies the TensorBoard folder of the run directory dir for this session: it
// repairs the files there to hold epochs (those the checkpoint covers; none for a new run),
// starts a new event file and writes into it the covered epochs no file holds. The run is scored
// by metric and has the splits hasVal and hasTest say; log gets the notices (nil: discard).
func OpenBoard(dir string, epochs []runfiles.Epoch, metric string, hasVal, hasTest bool, log io.Writer) *Board {
	if log == nil {
		log = io.Discard
	}
	b := &Board{dir: dir, metric: metric, hasVal: hasVal, hasTest: hasTest, log: log}
	tb := filepath.Join(dir, runfiles.TBDir)
	seen, err := repairBoard(tb, len(epochs), b.log)
	if err != nil {
		b.failed(err)
		return b
	}
	host, _ := os.Hostname()
	if b.w, err = tfevents.Create(tb, time.Now(), host); err != nil {
		b.failed(err)
		return b
	}
	var missing []int
	for _, ep := range epochs {
		if !seen[int64(ep.Epoch)] {
			missing = append(missing, ep.Epoch)
			b.Epoch(ep)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(b.log, "tensorboard: %s: wrote %s from %s (no event file held them)\n",
			tb, epochRange(missing), runfiles.MetricsFile)
	}
	return b
}

// epochRange names a list of epochs: "epoch 3", "epochs 0 to 5", "7 epochs from 2 to 12".
func epochRange(eps []int) string {
	first, last := eps[0], eps[len(eps)-1]
	switch {
	case len(eps) == 1:
		return fmt.Sprintf("epoch %d", first)
	case last-first+1 == len(eps):
		return fmt.Sprintf("epochs %d to %d", first, last)
	}
	return fmt.Sprintf("%s from %d to %d", plural.Count(len(eps), "epoch"), first, last)
}

// Epoch writes one epoch's event, from the record appended to metrics.jsonl.
func (b *Board) Epoch(ep runfiles.Epoch) {
	if b == nil || b.w == nil {
		return
	}
	ev := tfevents.ScalarEvent(tfevents.Wall(time.Now()), int64(ep.Epoch), epochScalars(ep, b.metric, b.hasVal, b.hasTest))
	if err := b.w.Write(ev); err != nil {
		b.failed(err)
	}
}

// End writes the hparams plugin's summaries of a run (of config c and seed) that ended (not one
// stopped by a signal, which a resume continues): the session's hyperparameters (hparamsOf) and
// start time, the final figures of result.json under final/, and the session's end with its
// status (success for a finished run, failure for a diverged one).
func (b *Board) End(c *config.Run, seed int64, res *runfiles.Result) {
	if b == nil || b.w == nil || res.StoppedBy == runfiles.StopSignal {
		return
	}
	for _, ev := range endEvents(c, seed, res, time.Now()) {
		if err := b.w.Write(ev); err != nil {
			b.failed(err)
			return
		}
	}
}

// endEvents are the events End writes at now for the run of config c and seed whose
// result is res.
func endEvents(c *config.Run, seed int64, res *runfiles.Result, now time.Time) [][]byte {
	wall := tfevents.Wall(now)
	start := tfevents.Wall(now.Add(-time.Duration(res.TotalSeconds * float64(time.Second))))
	evs := [][]byte{tfevents.SessionStartEvent(wall, hparamsOf(c, seed, res.GPU), c.RunName(), start)}
	status := tfevents.StatusFailure
	if !res.Diverged() {
		status = tfevents.StatusSuccess
		evs = append(evs, tfevents.ScalarEvent(wall, int64(res.Epochs), finalScalars(res)))
	}
	return append(evs, tfevents.SessionEndEvent(wall, status, wall))
}

// finalScalars are result.json's final figures, of the splits the run had:
// final/test_<metric>, final/val_<metric>, final/train_<metric>.
func finalScalars(res *runfiles.Result) []tfevents.Scalar {
	m := res.Metric
	s := []tfevents.Scalar{{Tag: runfiles.TBFinalPrefix + "test_" + m, Value: res.TestMetric}}
	if res.ValSplit != "none" {
		s = append(s, tfevents.Scalar{Tag: runfiles.TBFinalPrefix + "val_" + m, Value: res.ValMetric})
	}
	return append(s, tfevents.Scalar{Tag: runfiles.TBFinalPrefix + "train_" + m, Value: res.TrainMetric})
}

// hparamsOf is the hparams summary's record of a run: the config.HParamKeys of its config
// and its seed, and on a GPU the GPU options it used (result.json's gpu, as gpu.<key> and
// train.precision). (The trainer does not know which keys a sweep's grid varies; the sweep's
// experiment summary names those.)
func hparamsOf(c *config.Run, seed int64, g *runfiles.GPUOptions) map[string]tfevents.HValue {
	hp := map[string]tfevents.HValue{"seed": tfevents.Number(float64(seed))}
	for _, k := range config.HParamKeys {
		v, _ := c.Value(k)
		if h, ok := tfevents.HValueOf(v); ok {
			hp[k] = h
		}
	}
	maps.Copy(hp, gpuHParams(g))
	return hp
}

// gpuHParams are the hparams of a run's GPU options (none on the CPU).
func gpuHParams(g *runfiles.GPUOptions) map[string]tfevents.HValue {
	if g == nil {
		return nil
	}
	return map[string]tfevents.HValue{
		config.KeyPrecision:       tfevents.String(g.Precision),
		config.KeyEdgeFolds:       tfevents.String(g.EdgeFolds),
		config.KeyBatchedProducts: tfevents.Bool(g.BatchedProducts),
		config.KeyCUDAGraphs:      tfevents.Bool(g.CUDAGraphs),
		config.KeyNarrowGradW:     tfevents.Bool(g.NarrowGradW),
		config.KeyKernelDefines:   tfevents.String(g.KernelDefines),
		config.KeyArch:            tfevents.Number(float64(g.Arch)),
	}
}

// failed reports an error of the TensorBoard files once and stops writing them for the rest of
// the session; training goes on.
func (b *Board) failed(err error) {
	fmt.Fprintf(b.log, "tensorboard: %v; training goes on without TensorBoard events (a -resume writes the missing epochs from %s; once the run is over, %s rebuilds its %s folder from %s and %s)\n",
		err, runfiles.MetricsFile, rundir.Suggest("-rebuild-tb", b.dir), runfiles.TBDir, runfiles.MetricsFile, runfiles.ResultFile)
	b.Close()
}

// Close closes the session's event file.
func (b *Board) Close() {
	if b == nil || b.w == nil {
		return
	}
	if err := b.w.Close(); err != nil {
		fmt.Fprintln(b.log, err)
	}
	b.w = nil
}

// repairBoard makes the event files of dir hold the epochs 0 … covered-1 at most once each,
// and nothing else: it drops from each file the epochs at or past covered (written after the
// checkpoint that is resumed, by a session that was killed), a torn or corrupt tail and what
// follows it, an epoch an earlier file holds already, and the end's hparams and final figures
// (a resumed run ends again). A file that changes is rewritten atomically; one left with no
// epoch is removed. It returns the epochs the files hold.
func repairBoard(dir string, covered int, log io.Writer) (map[int64]bool, error) {
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if n := e.Name(); e.Type().IsRegular() && strings.HasPrefix(n, tfevents.FilePrefix) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	seen := map[int64]bool{}
	for _, n := range names {
		if err := repairFile(filepath.Join(dir, n), covered, seen, log); err != nil {
			return nil, err
		}
	}
	return seen, nil
}

// repairFile is repairBoard's work on one file.
func repairFile(path string, covered int, seen map[int64]bool, log io.Writer) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	recs, _, tail := tfevents.Records(b)
	var out []byte
	kept, dropped := 0, 0
	for i, rec := range recs {
		in, err := tfevents.Decode(rec)
		switch {
		case err == nil && i == 0 && in.FileVersion != "":
			out = tfevents.AppendRecord(out, rec)
		case err == nil && epochEvent(in) && in.Step >= 0 && in.Step < int64(covered) && !seen[in.Step]:
			seen[in.Step] = true
			out = tfevents.AppendRecord(out, rec)
			kept++
		default:
			dropped++
		}
	}
	if kept == 0 {
		if err := os.Remove(path); err != nil {
			return err
		}
		fmt.Fprintf(log, "tensorboard: removed %s: it held no epoch of the %s the checkpoint covers\n", path, plural.Count(covered, "epoch"))
		return nil
	}
	if dropped == 0 && tail == nil {
		return nil
	}
	if err := runfiles.WriteAtomic(path, out, tfevents.FilePerm); err != nil {
		return err
	}
	what := plural.Count(dropped, "event")
	if tail != nil {
		what += fmt.Sprintf(" and a tail it could not read (%v)", tail)
	}
	fmt.Fprintf(log, "tensorboard: %s: kept %s of the %s the checkpoint covers, dropped %s\n",
		path, plural.Count(kept, "epoch"), plural.Count(covered, "epoch"), what)
	return nil
}
