// Package train runs the benchmark protocol (docs/protocol.md §"Training protocol"): epochs over
// shuffled batches, evaluation, the plateau learning-rate schedule, stop rules, metrics,
// checkpoints and resume, the memory guard and the device. The files it writes into a run
// directory are those of package runfiles; the directory's lock and a restart's old folder are
// package rundir's, metrics.jsonl on resume and the TensorBoard folder package runlog's, and the
// memory estimate package memplan's.
package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/gpu"
	"github.com/rewiregnn/rewiregnn/internal/plural"
	"github.com/rewiregnn/rewiregnn/memplan"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/posenc"
	"github.com/rewiregnn/rewiregnn/prep"
	"github.com/rewiregnn/rewiregnn/rundir"
	"github.com/rewiregnn/rewiregnn/runfiles"
	"github.com/rewiregnn/rewiregnn/runlog"
	"gorgonia.org/tensor"
)

// Options says what to run and where.
type Options struct {
	Run      *config.Run // validated, fully resolved
	Seed     int64
	Dir      string    // the run directory (created if missing)
	Resume   bool      // continue from Dir's checkpoint (a finished run: if the budget goes further)
	Log      io.Writer // one line per epoch and the run's notices (nil: discard)
	Progress bool      // redraw a progress bar with ETA during each epoch (for terminals)
	Workers  int       // preprocessing workers (0: all cores)
	// Memory is the budget the memory guard checks a CPU run against, in bytes (0: what the
	// cgroup or the machine makes available); NoMemoryGuard skips the check (memory.go).
	Memory        int64
	NoMemoryGuard bool
	// MemorySource says where Memory came from, for the guard's messages ("" means -memory):
	// train -parallel reads what the machine makes available once, before its runs start.
	MemorySource string
	// Parallel is the number of runs training at once in this process (train -parallel; 0 or
	// 1: this run alone). The memory guard gives each 1/Parallel of the budget and sets the
	// process's Go memory limit to Parallel times the run's need.
	Parallel int
	// AfterBatch, if set, runs after every training batch (tests use it to interrupt a run).
	AfterBatch func(epoch, batch int, p *nn.Params)
	// EvalBatch is the graphs a GPU run's large evaluation batch holds at most, rounded down to
	// a whole number of protocol batches (train.batch_size graphs each); 0 is DefaultEvalBatch,
	// and less than two protocol batches evaluates batch by batch (evalbatch.go). The metrics
	// are the same either way; the CPU always evaluates batch by batch.
	EvalBatch int
	// Restart moves Dir's files into Dir/.old-<UTC time>/ and starts afresh (not with Resume).
	Restart bool
	// Lock, if set, is the caller's lock on Dir (rundir.LockDir), held until Train returns; without it
	// Train locks Dir itself, so a second trainer on the same directory fails at once.
	Lock *rundir.Lock
	// CheckpointEvery is the longest a run trains without writing a checkpoint: besides the one
	// after every epoch, one inside an epoch once this much time has passed since the last
	// (0: DefaultCheckpointEvery; negative: after every epoch only). Results are the same
	// either way; a run killed without a word loses at most this much of its training.
	CheckpointEvery time.Duration
}

// DefaultCheckpointEvery bounds what a run killed without a word (its machine stopped) loses.
const DefaultCheckpointEvery = 10 * time.Minute

// ErrNaN is returned (wrapped) when a loss is not finite: a training batch's, or an epoch's
// evaluation of the validation or test split.
var ErrNaN = errors.New("a loss is not finite")

// run is one training session of one seed.
type run struct {
	o                Options
	cfg              *config.Run
	spec             *data.Spec
	dataSource       string // data.SourcePyG when the dataset was read from its public distribution
	train, val, test []*data.Graph
	sizes            [3][]prep.GraphSize // the sizes of train, val and test (the memory guard reads them)
	valB, testB      []*data.Batch       // fixed evaluation batches
	est              *memplan.Estimate   // the memory guard's estimate (nil: not checked)
	io               nn.IO
	params           int
	p                *nn.Params
	tr               *nn.Trainer
	step             stepper      // tr, or the GPU trainer on its nets (device.go)
	choice           gpu.Choice   // the device
	precisionNote    string       // what train.precision does on the device ("" for fp32)
	gpu              *gpu.Trainer // nil on the CPU
	ahead            ahead        // the GPU's next batch, assembled while the device runs (device.go)
	large            largeEval    // evaluation in large batches (GPU runs; evalbatch.go)
	pcg              *rand.PCG
	rng              *rand.Rand
	loop             Loop
	epochs           []runfiles.Epoch
	prior            []runfiles.Epoch // the provenance a resumed session starts from (departures)
	metric           string
	start            time.Time
	lastCheckpoint   time.Time // when this session last wrote one (its start before the first)
	savedAt          string    // where the run's last checkpoint stands (checkpointPlace; "": none written)
	base             float64   // run seconds before this session
	log              io.Writer
	board            *runlog.Board // this session's TensorBoard event file (nil: none)
}

// Train runs (or resumes) one seed of a config and returns its result, which it also writes to
// the run directory with the per-epoch metrics and a checkpoint after every epoch. A cancelled
// ctx (SIGINT, SIGTERM) checkpoints the position inside the epoch and stops with
// runfiles.StopSignal; a non-finite loss stops with runfiles.StopNaN, keeping the last good
// checkpoint, and returns ErrNaN.
func Train(ctx context.Context, o Options) (*runfiles.Result, error) {
	now := time.Now()
	r := &run{o: o, cfg: o.Run, start: now, lastCheckpoint: now, log: o.Log}
	if r.log == nil {
		r.log = io.Discard
	}
	// A config that cannot run (no GPU for device cuda, a missing data folder) fails before the
	// run directory is created, so that it leaves no empty one behind.
	defer r.closeDevice()
	if err := r.cfg.Validate(); err != nil {
		return nil, err
	}
	if err := r.chooseDevice(); err != nil {
		return nil, err
	}
	if err := Resolve(r.cfg); err != nil {
		return nil, err
	}
	unlock, ckpt, build, err := r.setUp()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := r.prepare(ckpt, build); err != nil {
		return nil, err
	}
	defer r.tr.Close()
	r.board = runlog.OpenBoard(r.o.Dir, r.epochs, r.metric, r.val != nil, r.test != nil, r.log)
	defer r.board.Close()
	stop, err := r.loopEpochs(ctx)
	if err != nil && !errors.Is(err, ErrNaN) {
		return nil, err
	}
	res, ferr := r.finish(stop)
	if ferr != nil {
		return nil, ferr
	}
	return res, err
}

// setUp makes every check that can be made before training and readies the run directory: it
// returns the lock's release, the checkpoint to resume (nil for a fresh start) and the model.
// A run directory that exists already (a resume, a restart, a fresh start over a run) is locked
// first, so that what it holds is refused before the data is read; a new one is created only
// once the data, the model and the memory guard have passed, so that a run that cannot train
// leaves no folder behind. A restart moves the old files aside only then, too.
func (r *run) setUp() (unlock func(), ckpt *Checkpoint, build nn.BuildFunc, err error) {
	release := func() {}
	defer func() {
		if err != nil {
			release()
		}
	}()
	early := r.o.Lock != nil || isDir(r.o.Dir)
	if early {
		if release, err = r.lockOrNothing(); err != nil {
			return nil, nil, nil, err
		}
		if !r.o.Restart {
			if ckpt, err = r.checkDir(); err != nil {
				return nil, nil, nil, err
			}
		}
	}
	if build, err = r.loadChecked(); err != nil {
		return nil, nil, nil, err
	}
	if !early {
		if release, err = r.lockOrNothing(); err != nil {
			return nil, nil, nil, err
		}
	}
	if !early || r.o.Restart {
		if ckpt, err = r.checkDir(); err != nil {
			return nil, nil, nil, err
		}
	}
	if ckpt != nil {
		r.savedAt = checkpointPlace(ckpt.Loop)
	}
	if err = config.WriteFile(filepath.Join(r.o.Dir, runfiles.ConfigFile), r.cfg); err != nil {
		return nil, nil, nil, r.wrote(err)
	}
	return release, ckpt, build, nil
}

// lockOrNothing is lockDir with a release that does nothing when locking fails.
func (r *run) lockOrNothing() (func(), error) {
	unlock, err := r.lockDir()
	if err != nil {
		return func() {}, err
	}
	return unlock, nil
}

// isDir says whether path is a folder.
func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// loadChecked loads and preprocesses the data and checks the run against it: the model, the
// accuracy stop, the memory guard and the splits the metric scores. It writes nothing into
// the run directory.
func (r *run) loadChecked() (nn.BuildFunc, error) {
	c := r.cfg
	// With the cache, the guard reads the graphs' sizes first (building the cache files chunk by
	// chunk where they are missing) and refuses a run that does not fit before its graphs are
	// loaded; without it (or with a subset), it checks the loaded graphs. A run the guard does
	// not check (a GPU run, -no-memory-guard) skips that pass over the cache files.
	build, presized, err := r.dataAndModel(r.guarded())
	if err != nil {
		return nil, err
	}
	r.metric = metricFor(r.io)
	if c.Train.StopAccuracy > 0 && !runfiles.IsAccuracy(r.metric) {
		what := "a regression task"
		if r.metric != runfiles.MetricMAE {
			what = "scored by " + r.metric
		}
		return nil, fmt.Errorf("train.stop_accuracy %g: %s is %s, it has no training accuracy", c.Train.StopAccuracy, c.Dataset.Name, what)
	}
	if err := r.checkMemory(build); err != nil {
		return nil, err
	}
	if presized {
		if err := r.loadData(); err != nil {
			return nil, err
		}
		if build, err = r.model(); err != nil { // now on the training graphs' degrees
			return nil, err
		}
	}
	return build, r.checkSplits()
}

// dataAndModel loads the data, or with sized only reads the graphs' sizes where the cache
// allows (presized: the graphs are not loaded yet), and builds the model's constructor.
func (r *run) dataAndModel(sized bool) (build nn.BuildFunc, presized bool, err error) {
	if sized {
		if presized, err = r.presize(); err != nil {
			return nil, false, err
		}
	}
	if !presized {
		if err := r.loadData(); err != nil {
			return nil, false, err
		}
	}
	build, err = r.model()
	return build, presized, err
}

// prepare builds the trainer on the loaded data and restores the checkpoint ckpt when resuming.
func (r *run) prepare(ckpt *Checkpoint, build nn.BuildFunc) error {
	c := r.cfg
	prepSecs := time.Since(r.start).Seconds()
	if err := r.buildTrainer(build); err != nil {
		return err
	}
	r.pcg = rand.NewPCG(uint64(r.o.Seed), 0x5eed)
	r.rng = rand.New(r.pcg)
	if ckpt == nil {
		r.loop = Loop{Plateau: *NewPlateau(c.Train.LR, c.Train.LRFactor, c.Train.Patience), Preprocess: prepSecs}
	} else if err := r.restore(ckpt); err != nil {
		return err
	}
	r.tr.Opt.LR = r.loop.Plateau.LR
	if err := r.attachDevice(); err != nil {
		return err
	}
	if c.Device != "cpu" {
		fmt.Fprintln(r.log, r.choice.Note)
	}
	if r.precisionNote != "" {
		fmt.Fprintln(r.log, r.precisionNote)
	}
	if c.Model.Recompute && r.choice.Backend != nil {
		fmt.Fprintln(r.log, "model.recompute: the GPU executor does not recompute activations yet; it plans its own slots (docs/memory.md)")
	}
	r.base = r.loop.Elapsed
	fmt.Fprintf(r.log, "%s seed %d: %s, %d/%d/%d %s, preprocessing %.1fs, %s, %s\n",
		c.RunName(), r.o.Seed, plural.Count(r.params, "parameter"), len(r.train), len(r.val), len(r.test), plural.Noun(len(r.test), "graph"),
		prepSecs, plural.Count(runtime.GOMAXPROCS(0), "thread"), r.resumeNote(ckpt))
	return nil
}

func (r *run) resumeNote(ckpt *Checkpoint) string {
	if ckpt == nil {
		return "new run"
	}
	return fmt.Sprintf("resumed at epoch %d batch %d", r.loop.Epoch, r.loop.Next)
}

// buildTrainer makes the parameters, the buckets and the trainer, and builds the first
// training network so every parameter exists (with its seeded initial value).
func (r *run) buildTrainer(build nn.BuildFunc) error {
	c := r.cfg
	p, err := nn.NewParams(tensor.Float32, uint64(r.o.Seed))
	if err != nil {
		return err
	}
	buckets, evalBuckets, err := r.mem().Buckets(c.Train.BatchSize)
	if err != nil {
		return err
	}
	tr, err := nn.NewTrainer(p, build, buckets, c.Train.LR)
	if err != nil {
		return err
	}
	tr.EvalBuckets = evalBuckets
	tr.Recompute = c.Model.Recompute
	if r.est != nil { // the largest net's activations, so the arena never grows
		tr.Arena.Reserve(r.est.ArenaF32, r.est.ArenaF64)
	}
	if _, err := tr.Net(len(buckets) - 1); err != nil {
		tr.Close()
		return err
	}
	if got := p.Count(); got != r.params {
		tr.Close()
		return fmt.Errorf("model: %d parameters built, the formula says %d", got, r.params)
	}
	r.p, r.tr = p, tr
	return nil
}

// restore loads the checkpoint's state and the metrics of its finished epochs.
func (r *run) restore(ckpt *Checkpoint) error {
	if err := ckpt.Restore(r.p, r.tr.Opt); err != nil {
		return r.misfit(err)
	}
	r.loop = ckpt.Loop
	r.savedAt = checkpointPlace(ckpt.Loop)
	if err := r.loop.CheckLoop(len(r.train), r.batchesPerEpoch(), NewMeter(r.metric, r.io.Out)); err != nil {
		return r.misfit(err)
	}
	if err := r.pcg.UnmarshalBinary(r.loop.RNG); err != nil {
		return fmt.Errorf("resume %s: generator state: %w", r.o.Dir, err)
	}
	r.loop.Resumed++
	eps, err := runlog.ResumeMetrics(r.o.Dir, r.loop.Epoch, r.log)
	if err != nil {
		return err
	}
	r.epochs = eps
	r.prior = slices.Clone(eps)
	if ckpt.ConfigHash != "" {
		r.prior = append(r.prior, runfiles.Epoch{ConfigHash: ckpt.ConfigHash, Departures: ckpt.Departures})
	}
	return nil
}

// departures are the run's departures over all its sessions (runfiles.RunDepartures): the
// earlier sessions' as their epochs and the checkpoint recorded them, then this session's.
func (r *run) departures() []runfiles.Departure {
	return runfiles.RunDepartures(r.prior, r.cfg.Budget())
}

// elapsed is the run's wall time so far, earlier sessions included.
func (r *run) elapsed() float64 { return r.base + time.Since(r.start).Seconds() }

// loopEpochs trains until a stop rule fires and returns its name.
func (r *run) loopEpochs(ctx context.Context) (string, error) {
	c := r.cfg.Train
	nb := r.batchesPerEpoch()
	for {
		if epochsSpent(c, r.loop.Epoch) {
			return runfiles.StopMaxEpochs, nil
		}
		if r.loop.Perm == nil {
			r.loop.Perm = make([]int32, len(r.train))
			for i, j := range r.rng.Perm(len(r.train)) {
				r.loop.Perm[i] = int32(j)
			}
			r.loop.Next, r.loop.EpochSecs = 0, 0
			r.loop.Train = NewMeter(r.metric, r.io.Out)
		}
		t0 := time.Now()
		bar := newProgress(r.log, r.o.Progress, r.loop.Epoch, nb, r.loop.Next)
		for b := r.loop.Next; b < nb; b++ {
			due := r.checkpointDue()
			if due && b > 0 && !r.launchedAhead(b) {
				if err := r.checkpointInEpoch(b, t0); err != nil {
					return "", err
				}
				due = false
			}
			if ctx.Err() != nil && !r.launchedAhead(b) { // a launched step is counted first
				r.loop.EpochSecs += time.Since(t0).Seconds()
				r.loop.Next = b
				if err := r.dropAhead(); err != nil {
					return "", err
				}
				bar.clear()
				fmt.Fprintf(r.log, "interrupted in epoch %d at batch %d of %d: checkpoint written, continue with -resume %s\n", r.loop.Epoch, b, nb, r.o.Dir)
				return runfiles.StopSignal, r.checkpoint()
			}
			bt, loss, pred, err := r.trainStep(b, nb, ctx.Err() == nil && !due) // a due checkpoint waits for no step ahead
			if err != nil {
				return "", err
			}
			if math.IsNaN(loss) || math.IsInf(loss, 0) {
				bar.clear()
				fmt.Fprintf(r.log, "epoch %d batch %d: loss %v; stopping\n", r.loop.Epoch, b, loss)
				return runfiles.StopNaN, r.diverged(fmt.Errorf("epoch %d batch %d: %w (%v)", r.loop.Epoch, b, ErrNaN, loss))
			}
			r.loop.Train.Add(loss, pred, bt)
			bar.update(b+1, time.Since(t0).Seconds(), r.loop.Train.Loss())
			if r.o.AfterBatch != nil {
				r.o.AfterBatch(r.loop.Epoch, b, r.p)
			}
		}
		bar.clear()
		ep, err := r.endEpoch(r.loop.EpochSecs + time.Since(t0).Seconds())
		if errors.Is(err, ErrNaN) {
			fmt.Fprintf(r.log, "%v; stopping\n", err)
			return runfiles.StopNaN, r.diverged(err)
		}
		if err != nil {
			return "", err
		}
		acc := 0.0
		if runfiles.IsAccuracy(r.metric) {
			acc = ep.TrainMetric
		}
		stop := stopRule(c, r.loop.Plateau.LR, r.elapsed(), r.loop.Epoch, acc)
		fmt.Fprintln(r.log, r.logLine(ep))
		if err := r.checkpoint(); err != nil {
			return "", err
		}
		if stop != "" {
			return stop, nil
		}
	}
}

// trainBatch assembles training batch b of this epoch's order and draws its Laplacian signs.
func (r *run) trainBatch(b int) (*data.Batch, error) {
	bs := r.cfg.Train.BatchSize
	lo, hi := b*bs, min((b+1)*bs, len(r.train))
	gs := make([]*data.Graph, hi-lo)
	for i := range gs {
		gs[i] = r.train[r.loop.Perm[lo+i]]
	}
	bt, err := data.NewBatch(gs)
	if err != nil {
		return nil, fmt.Errorf("epoch %d batch %d: %w", r.loop.Epoch, b, err)
	}
	if flips := r.io.SignFlips(); flips > 0 {
		if r.tr.LapSign == nil {
			r.tr.LapSign = make([]float32, flips)
		}
		posenc.DrawSigns(r.tr.LapSign, r.rng)
	}
	return bt, nil
}

// batchesPerEpoch is the number of training batches of an epoch (the last one may be short).
func (r *run) batchesPerEpoch() int {
	return (len(r.train) + r.cfg.Train.BatchSize - 1) / r.cfg.Train.BatchSize
}

// endEpoch evaluates val and test, records the epoch, steps the schedule and advances the loop.
func (r *run) endEpoch(trainSecs float64) (runfiles.Epoch, error) {
	t0 := time.Now()
	ep := runfiles.Epoch{Epoch: r.loop.Epoch, LR: r.loop.Plateau.LR, TrainLoss: r.loop.Train.Loss(), TrainMetric: r.loop.Train.Value(), Seconds: trainSecs,
		ConfigHash: r.cfg.Hash(), Departures: r.departures()}
	ep.NoVal = r.val == nil // metrics.jsonl leaves the validation keys out
	if r.val != nil {
		m, err := r.evaluateSplit("val", r.val, r.valB)
		if err != nil {
			return ep, fmt.Errorf("epoch %d: validation: %w", r.loop.Epoch, err)
		}
		ep.ValLoss, ep.ValMetric = m.Loss(), m.Value()
	}
	if r.test != nil {
		m, err := r.evaluateSplit("test", r.test, r.testB)
		if err != nil {
			return ep, fmt.Errorf("epoch %d: test: %w", r.loop.Epoch, err)
		}
		loss := m.Loss()
		ep.TestMetric, ep.TestLoss = m.Value(), &loss
	}
	if err := ep.CheckFinite(); err != nil { // evaluation mode can diverge where training did not
		return ep, fmt.Errorf("epoch %d: %w: %v", r.loop.Epoch, ErrNaN, err)
	}
	ep.EvalSeconds = time.Since(t0).Seconds()
	ep.Elapsed = r.elapsed()
	ep.PeakBytes = r.peakBytes()
	monitored := ep.ValLoss
	if r.cfg.Train.Monitor == "train_loss" {
		monitored = ep.TrainLoss
	}
	r.loop.Plateau.Step(monitored)
	r.tr.Opt.LR = r.loop.Plateau.LR
	r.loop.TrainSecs += trainSecs
	r.loop.Epoch++
	r.loop.Perm, r.loop.Next = nil, 0
	r.loop.Last = &ep
	r.epochs = append(r.epochs, ep)
	if err := runfiles.WriteMetrics(filepath.Join(r.o.Dir, runfiles.MetricsFile), r.epochs); err != nil {
		return ep, r.wrote(err)
	}
	r.board.Epoch(ep)
	return ep, nil
}

// evaluate runs fixed batches in evaluation mode.
func (r *run) evaluate(bs []*data.Batch) (*Meter, error) {
	m := NewMeter(r.metric, r.io.Out)
	for _, bt := range bs {
		loss, pred, err := r.step.Eval(bt)
		if err != nil {
			return nil, err
		}
		m.Add(loss, pred, bt)
	}
	return m, nil
}

// checkpointDue says whether the time since the last checkpoint has reached
// Options.CheckpointEvery.
func (r *run) checkpointDue() bool {
	every := r.o.CheckpointEvery
	if every == 0 {
		every = DefaultCheckpointEvery
	}
	return every > 0 && time.Since(r.lastCheckpoint) >= every
}

// checkpointInEpoch writes a checkpoint before training batch b of this epoch (started at t0),
// as an interrupt would, and trains on: a run resumed from it continues as this one does.
func (r *run) checkpointInEpoch(b int, t0 time.Time) error {
	secs, next := r.loop.EpochSecs, r.loop.Next
	r.loop.EpochSecs += time.Since(t0).Seconds()
	r.loop.Next = b
	if err := r.dropAhead(); err != nil {
		return err
	}
	err := r.checkpoint()
	r.loop.EpochSecs, r.loop.Next = secs, next
	return err
}

// checkpoint writes the current state.
func (r *run) checkpoint() error {
	st, err := r.pcg.MarshalBinary()
	if err != nil {
		return fmt.Errorf("checkpoint: generator state: %w", err)
	}
	if err := r.step.Sync(); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	lp := r.loop
	lp.RNG = st
	lp.Elapsed = r.elapsed()
	ck := Capture(r.cfg.RunName(), r.o.Seed, r.p, r.tr.Opt, lp)
	if ck.Config, err = r.cfg.PortableYAML(); err != nil { // no path of this machine: parked checkpoints travel
		return fmt.Errorf("checkpoint: %w", err)
	}
	ck.ConfigHash, ck.Departures = r.cfg.Hash(), r.departures()
	if err := writeCheckpointFile(filepath.Join(r.o.Dir, runfiles.CheckpointFile), ck); err != nil {
		return r.wrote(err)
	}
	r.lastCheckpoint = time.Now()
	r.savedAt = checkpointPlace(lp)
	return nil
}

func (r *run) logLine(ep runfiles.Epoch) string {
	s := fmt.Sprintf("epoch %3d | lr %.2e | train loss %.4f %s %.4f", ep.Epoch, ep.LR, ep.TrainLoss, r.metric, ep.TrainMetric)
	if r.val != nil {
		s += fmt.Sprintf(" | val loss %.4f %s %.4f", ep.ValLoss, r.metric, ep.ValMetric)
	}
	if r.test != nil {
		s += fmt.Sprintf(" | test %s %.4f", r.metric, ep.TestMetric)
	}
	return s + fmt.Sprintf(" | %.1fs + %.1fs eval", ep.Seconds, ep.EvalSeconds)
}

// finish evaluates the final model on the training split (eval mode) and writes result.json.
func (r *run) finish(stop string) (*runfiles.Result, error) {
	c := r.cfg
	res := &runfiles.Result{Name: c.RunName(), Dataset: c.Dataset.Name, Model: c.Model.Name, Encoding: c.Dataset.Encoding,
		CLS: c.Dataset.CLS, R: c.Dataset.R, Seed: r.o.Seed, Metric: r.metric, Epochs: r.loop.Epoch,
		TrainGraphs: len(r.train), Params: r.params, Device: r.deviceName(),
		StoppedBy: stop, FinalLR: r.loop.Plateau.LR, Resumed: r.loop.Resumed, PreprocessSecs: r.loop.Preprocess,
		ConfigHash: c.Hash(), Departures: r.departures(), DataSource: r.dataSource, GPU: r.gpuRecord()}
	res.Reductions = runfiles.WithoutKeys(c.Reductions(), res.Departures)
	if r.val == nil {
		res.ValSplit = "none" // also for a run stopped by a signal or a non-finite loss
	}
	if r.loop.Epoch > 0 {
		res.SecondsPerEpoch = r.loop.TrainSecs / float64(r.loop.Epoch)
	}
	if last := r.loop.Last; last != nil {
		res.ValMetric, res.TestMetric = last.ValMetric, last.TestMetric
	}
	if stop == runfiles.StopSignal || stop == runfiles.StopNaN {
		// Leave quickly (a scheduler's grace period is short): the last epoch's figures.
		if last := r.loop.Last; last != nil {
			res.TrainMetric = last.TrainMetric
		}
		return res, r.writeResult(res, stop)
	}
	// The training split, unshuffled, in evaluation mode: its batches are built only here, so
	// the run does not hold a second copy of the training unions.
	trainB, err := batches(r.train, c.Train.BatchSize)
	if err != nil {
		return nil, err
	}
	m, err := r.evaluateSplit("", r.train, trainB)
	if err != nil {
		return nil, fmt.Errorf("final evaluation of the training split: %w", err)
	}
	res.TrainMetric = m.Value()
	if r.metric == runfiles.MetricWeightedAcc {
		b := m.Balanced()
		res.TrainBalanced = &b
		for _, s := range []struct {
			name string
			gs   []*data.Graph
			bs   []*data.Batch
			dst  **float64
		}{{"val", r.val, r.valB, &res.ValBalanced}, {"test", r.test, r.testB, &res.TestBalanced}} {
			if s.bs == nil {
				continue
			}
			m, err := r.evaluateSplit(s.name, s.gs, s.bs)
			if err != nil {
				return nil, err
			}
			b := m.Balanced()
			*s.dst = &b
		}
	}
	if r.test == nil {
		res.TestSplit = "train"
		res.TestMetric = res.TrainMetric
	}
	return res, r.writeResult(res, stop)
}

func (r *run) writeResult(res *runfiles.Result, stop string) error {
	res.TotalSeconds = r.elapsed()
	if err := runfiles.WriteResult(filepath.Join(r.o.Dir, runfiles.ResultFile), res); err != nil {
		return r.wrote(err)
	}
	r.board.End(r.cfg, r.o.Seed, res)
	fmt.Fprintf(r.log, "%s seed %d: stopped by %s after %s (%.1fs per epoch); %s\n",
		res.Name, res.Seed, stop, plural.Count(res.Epochs, "epoch"), res.SecondsPerEpoch, Scores(res))
	return nil
}

// Scores is a result's final figures for a summary line, only of the splits the run had:
// "test mae 0.1234, val 0.2345, train 0.0123"; without a validation split the val figure is
// left out, and a test figure measured on the training split says so ("test (on train)"). A
// diverged run (runfiles.Result.Diverged) has no figures, and Scores says so.
func Scores(res *runfiles.Result) string {
	if res.Diverged() {
		return "diverged (non-finite loss): no metrics"
	}
	test := "test"
	if res.TestSplit != "" {
		test += " (on " + res.TestSplit + ")"
	}
	s := fmt.Sprintf("%s %s %.4f", test, res.Metric, res.TestMetric)
	if res.ValSplit != "none" {
		s += fmt.Sprintf(", val %.4f", res.ValMetric)
	}
	return s + fmt.Sprintf(", train %.4f", res.TrainMetric)
}

// checkSplits refuses splits the run's metric cannot score: for average precision, a split in
// which no task has both a positive and a negative label (CheckAPSplit).
func (r *run) checkSplits() error {
	if r.metric != runfiles.MetricAP {
		return nil
	}
	for _, s := range []struct {
		name string
		gs   []*data.Graph
	}{{"train", r.train}, {"val", r.val}, {"test", r.test}} {
		if len(s.gs) == 0 {
			continue
		}
		if err := CheckAPSplit(s.name, s.gs, r.io.Out); err != nil {
			return fmt.Errorf("%s: %w", r.cfg.Dataset.Name, err)
		}
	}
	return nil
}
