package gpu

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/rewiregnn/rewiregnn/cuda"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/gpuexec"
	"github.com/rewiregnn/rewiregnn/gpuopt"
	"github.com/rewiregnn/rewiregnn/kern"
	"github.com/rewiregnn/rewiregnn/lower"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/tensor"
)

// Trainer trains an nn.Trainer's model on a device: the programs lowered from its nets (one
// per shape bucket, training and evaluation), run step by step through the cuda launchers,
// with the parameters, Adam's moments and the batch-norm statistics resident on the device.
// Per step only the batch goes up (queued without waiting) and the loss and the batch's
// predictions come back.
//
// The nn.Trainer remains the host mirror: its Params hold the step counter and the dropout and
// batch-norm switches, its Adam the learning rate (read every step) and step count, its
// LapSign the next training batch's Laplacian signs. Its parameter values, Adam moments and
// running statistics are stale while the Trainer runs: Sync copies them back (before a
// checkpoint, at the end), Upload sends host values to the device (after restoring a
// checkpoint into the host mirror).
type Trainer struct {
	T       *nn.Trainer
	x       *gpuexec.Exec
	bn      map[string]*ops.BNState // the host mirror of the statistics on the device
	train   []*program
	eval    []*program
	large   map[nn.Bucket]*program // evaluation programs of large batches (EvalRows)
	pred    []float64
	res     []float32
	buf     []float32
	staged  *staged     // a batch loaded and queued ahead of its Launch
	pending []*inflight // launched steps not yet waited for, oldest first (at most maxInFlight)
	slots   [maxInFlight]resultSlot
	// sync and syncDone are Sync's host buffer and the event after its copies.
	sync     *cuda.HostBuf
	syncDone *cuda.Event
	// Log, when set, hears once that the device could not capture a step as a graph (the
	// trainer then queues every step launch by launch).
	Log       io.Writer
	graphNote bool
	// Options are the run's GPU options every program the trainer compiles is laid out with
	// (gpuexec.CompileWith: the edge folds, bf16 storage under train.precision bf16); set them
	// before the first step (NewTrainerWith).
	Options gpuopt.Options
}

// program is a bucket's executor program and the net whose holders feed it.
type program struct {
	*gpuexec.Program
	in *nn.Inputs
}

// NewTrainer is NewTrainerWith the default options (gpuopt.Default).
func NewTrainer(t *nn.Trainer, b gpuexec.Backend) (*Trainer, error) {
	return NewTrainerWith(t, b, gpuopt.Default())
}

// NewTrainerWith puts t's model on backend b (opened with the same options: Choose), uploading
// every parameter that exists; its programs are laid out with o, and o.Graphs says whether it
// replays captured graphs.
func NewTrainerWith(t *nn.Trainer, b gpuexec.Backend, o gpuopt.Options) (*Trainer, error) {
	if t == nil || b == nil {
		return nil, fmt.Errorf("gpu: NewTrainer needs a trainer and a backend")
	}
	g := &Trainer{T: t, x: gpuexec.New(b), bn: map[string]*ops.BNState{}, Options: o,
		train: make([]*program, len(t.Buckets)), eval: make([]*program, len(t.Buckets))}
	g.x.Graphs = o.Graphs
	if err := g.Upload(); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// noteGraphs tells Log, once, why the steps are no longer replayed as graphs.
func (t *Trainer) noteGraphs() {
	if t.x.GraphErr != nil && !t.graphNote && t.Log != nil {
		t.graphNote = true
		fmt.Fprintf(t.Log, "gpu: %v; every step is queued launch by launch (as with gpu.cuda_graphs false)\n", t.x.GraphErr)
	}
}

// Graphs reports whether the trainer replays captured graphs and, where a capture failed, why
// it stopped.
func (t *Trainer) Graphs() (bool, string) {
	if t.x.GraphErr != nil {
		return false, t.x.GraphErr.Error()
	}
	return t.x.Graphs, ""
}

// SetGraphs turns the replay of captured graphs on or off (NewTrainerWith sets
// gpuopt.Options.Graphs: gpu.cuda_graphs; a way round a driver whose graphs misbehave).
func (t *Trainer) SetGraphs(on bool) { t.x.Graphs = on }

// Backend is the device the trainer runs on.
func (t *Trainer) Backend() gpuexec.Backend { return t.x.B }

// placeParams puts the parameters names that are not on the device yet into one arena
// (gpuexec.Exec.AddParams), in the order given, and uploads their values.
func (t *Trainer) placeParams(names []string) error {
	sizes := make([]int, len(names))
	for i, name := range names {
		ht, ok := t.T.P.T[name]
		if !ok {
			return fmt.Errorf("gpu: no parameter %q", name)
		}
		sizes[i] = ht.Shape().TotalSize()
	}
	added, err := t.x.AddParams(names, sizes)
	if err != nil {
		return err
	}
	for _, name := range added {
		xs, err := hostFloat32("parameter "+name, t.T.P.T[name])
		if err != nil {
			return err
		}
		if err := t.x.B.UploadF32(t.x.Params[name].X, xs); err != nil {
			return fmt.Errorf("gpu: uploading parameter %q: %w", name, err)
		}
	}
	return nil
}

// ensureParam allocates and uploads parameter name if it is not on the device yet.
func (t *Trainer) ensureParam(name string) (*gpuexec.ParamBuf, error) {
	ht, ok := t.T.P.T[name]
	if !ok {
		return nil, fmt.Errorf("gpu: no parameter %q", name)
	}
	xs, err := hostFloat32("parameter "+name, ht)
	if err != nil {
		return nil, err
	}
	pb, fresh, err := t.x.AddParam(name, len(xs))
	if err != nil || !fresh {
		return pb, err
	}
	if err := t.x.B.UploadF32(pb.X, xs); err != nil {
		return nil, fmt.Errorf("gpu: uploading parameter %q: %w", name, err)
	}
	return pb, nil
}

// ensureMoments allocates Adam's moments of a parameter: the host's (a restored checkpoint) or
// zeros.
func (t *Trainer) ensureMoments(name string) (*gpuexec.ParamBuf, error) {
	pb, err := t.ensureParam(name)
	if err != nil {
		return nil, err
	}
	fresh, err := t.x.AddMoments(pb, name)
	if err != nil || !fresh {
		return pb, err
	}
	return pb, t.uploadMoments(name, pb)
}

// uploadMoments sends the host's Adam moments of a parameter (zeros where it has none).
func (t *Trainer) uploadMoments(name string, pb *gpuexec.ParamBuf) error {
	st := t.T.Opt.State()
	for _, mv := range []struct {
		p    cuda.DevPtr
		host []float64
	}{{pb.M, st.M[name]}, {pb.V, st.V[name]}} {
		var err error
		switch {
		case mv.host == nil:
			err = t.x.B.Fill(mv.p, pb.N, 0)
		case len(mv.host) != pb.N:
			err = fmt.Errorf("%d values, the parameter has %d", len(mv.host), pb.N)
		default:
			err = t.x.B.UploadF32(mv.p, t.f32(mv.host))
		}
		if err != nil {
			return fmt.Errorf("gpu: Adam moments of %q: %w", name, err)
		}
	}
	return nil
}

// ensureBN puts a batch norm's running statistics on the device.
func (t *Trainer) ensureBN(s *ops.BNState) error {
	if h, ok := t.bn[s.Name]; ok {
		if h != s {
			return fmt.Errorf("gpu: two batch norms named %q", s.Name)
		}
		return nil
	}
	bb, _, err := t.x.AddBN(s.Name, len(s.RunMean))
	if err != nil {
		return err
	}
	t.bn[s.Name] = s
	if err := t.x.B.UploadF32(bb.Mean, t.f32(s.RunMean)); err != nil {
		return err
	}
	return t.x.B.UploadF32(bb.Var, t.f32(s.RunVar))
}

// f32 converts into the trainer's scratch (valid until the next call; uploads copy at once).
func (t *Trainer) f32(xs []float64) []float32 {
	t.buf = gpuexec.Grow(t.buf, len(xs))
	for i, x := range xs {
		t.buf[i] = float32(x)
	}
	return t.buf
}

// Upload sends the host mirror's parameters, Adam moments and batch-norm statistics to the
// device (all that are already there, and every parameter of the host set).
func (t *Trainer) Upload() error {
	// The parameters with gradients first, in their gradients' order: then every training
	// program's gradients match the arena and Adam is one launch.
	order := t.T.Trained()
	for _, name := range t.T.P.Names {
		if !slices.Contains(order, name) {
			order = append(order, name)
		}
	}
	if err := t.placeParams(order); err != nil {
		return err
	}
	for _, name := range t.T.P.Names {
		pb, err := t.ensureParam(name)
		if err != nil {
			return err
		}
		xs, err := hostFloat32("parameter "+name, t.T.P.T[name])
		if err != nil {
			return err
		}
		if err := t.x.B.UploadF32(pb.X, xs); err != nil {
			return fmt.Errorf("gpu: uploading parameter %q: %w", name, err)
		}
		if pb.Moments {
			if err := t.uploadMoments(name, pb); err != nil {
				return err
			}
		}
	}
	for name, bb := range t.x.BN {
		s := t.bn[name]
		if err := t.x.B.UploadF32(bb.Mean, t.f32(s.RunMean)); err != nil {
			return err
		}
		if err := t.x.B.UploadF32(bb.Var, t.f32(s.RunVar)); err != nil {
			return err
		}
	}
	return nil
}

// Sync copies the device's parameters, Adam moments and batch-norm running statistics into
// the host mirror (for checkpoints and results): every copy is queued into one host buffer
// (page-locked where the device has it) and waited for once.
func (t *Trainer) Sync() error {
	st := t.T.Opt.State()
	if st.M == nil || st.V == nil {
		st.M, st.V = map[string][]float64{}, map[string][]float64{}
	}
	// copies lists what goes where: n values from the device at p, then put puts them (the
	// buffer's slice) into the host mirror.
	type copyTo struct {
		p   cuda.DevPtr
		n   int
		put func(xs []float32)
	}
	var copies []copyTo
	f64 := func(dst map[string][]float64, name string) func([]float32) {
		return func(xs []float32) {
			h := dst[name]
			if len(h) != len(xs) {
				h = make([]float64, len(xs))
				dst[name] = h
			}
			for i, x := range xs {
				h[i] = float64(x)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(t.x.Params)) {
		pb := t.x.Params[name]
		ht := t.T.P.T[name]
		copies = append(copies, copyTo{pb.X, pb.N, func(xs []float32) { copy(ht.Float32s(), xs) }})
		if pb.Moments {
			copies = append(copies, copyTo{pb.M, pb.N, f64(st.M, name)}, copyTo{pb.V, pb.N, f64(st.V, name)})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(t.x.BN)) {
		bb, s := t.x.BN[name], t.bn[name]
		into := func(dst []float64) func([]float32) {
			return func(xs []float32) {
				for i, x := range xs {
					dst[i] = float64(x)
				}
			}
		}
		copies = append(copies, copyTo{bb.Mean, len(s.RunMean), into(s.RunMean)}, copyTo{bb.Var, len(s.RunVar), into(s.RunVar)})
	}
	total := 0
	for _, c := range copies {
		total += c.n
	}
	if t.sync == nil || len(t.sync.Float32s()) < total {
		_ = t.sync.Free()
		t.sync = nil
		buf, err := t.x.B.HostAlloc(4 * total)
		if err != nil {
			return fmt.Errorf("gpu: host memory for the parameters: %w", err)
		}
		t.sync = buf
	}
	if t.syncDone == nil {
		t.syncDone, _ = t.x.B.NewEvent() // nil without events: the pageable copies wait
	}
	host := t.sync.Float32s()
	off := 0
	for _, c := range copies {
		if err := t.x.B.DownloadAsync(host[off:off+c.n], c.p); err != nil {
			return fmt.Errorf("gpu: downloading the parameters: %w", err)
		}
		off += c.n
	}
	if err := t.x.B.RecordEvent(t.syncDone); err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	if err := t.syncDone.Sync(); err != nil {
		return fmt.Errorf("gpu: downloading the parameters: %w", err)
	}
	off = 0
	for _, c := range copies {
		c.put(host[off : off+c.n])
		off += c.n
	}
	t.T.Opt.SetState(st)
	return nil
}

// program returns the compiled program of bucket i (training or evaluation).
func (t *Trainer) program(i int, train bool) (*program, error) {
	progs, get := t.eval, t.T.EvalNet
	if train {
		progs, get = t.train, t.T.Net
	}
	if progs[i] != nil {
		return progs[i], nil
	}
	net, err := get(i)
	if err != nil {
		return nil, err
	}
	pr, err := t.newProgram(net)
	if err != nil {
		return nil, fmt.Errorf("bucket %v: %w", t.T.Buckets[i], err)
	}
	progs[i] = pr
	return pr, nil
}

// Compile lowers a net built on parameters p (nn.Net.Program) and lays it out for the device
// (gpuexec.Compile) with the default options: float32, every edge fold.
func Compile(net *nn.Net, p *nn.Params) (*gpuexec.Plan, error) {
	return CompileWith(net, p, gpuopt.Default())
}

// CompileWith is Compile with the run's GPU options o (gpuexec.CompileWith).
func CompileWith(net *nn.Net, p *nn.Params, o gpuopt.Options) (*gpuexec.Plan, error) {
	pl, _, err := compileNet(net, p, o)
	return pl, err
}

func compileNet(net *nn.Net, p *nn.Params, o gpuopt.Options) (*gpuexec.Plan, *lower.Binding, error) {
	if p.Dtype != tensor.Float32 {
		return nil, nil, fmt.Errorf("gpu: parameters are %v; the device executor runs float32 only", p.Dtype)
	}
	pg, bind, err := net.Program(p)
	if err != nil {
		return nil, nil, fmt.Errorf("gpu: %w", err)
	}
	pl, err := gpuexec.CompileWith(pg, o)
	if err != nil {
		return nil, nil, err
	}
	return pl, bind, nil
}

// newProgram compiles a net, puts the parameters and batch-norm statistics it reads on the
// device and allocates its buffers.
func (t *Trainer) newProgram(net *nn.Net) (*program, error) {
	pl, bind, err := compileNet(net, t.T.P, t.Options)
	if err != nil {
		return nil, err
	}
	if err := t.placeParams(pl.GradNames); err != nil { // the training program's order: one Adam launch
		return nil, err
	}
	for _, v := range pl.Vals {
		if v.Src == gpuexec.FromParam {
			if _, err := t.ensureParam(v.Param); err != nil {
				return nil, err
			}
		}
	}
	for _, s := range bind.Norms {
		if s != nil {
			if err := t.ensureBN(s); err != nil {
				return nil, err
			}
		}
	}
	pr, err := t.x.NewProgram(pl, bind, fmt.Sprintf("bucket %v", net.In.B))
	if err != nil {
		return nil, err
	}
	return &program{Program: pr, in: net.In}, nil
}

// Plan returns the plan of bucket i's training (or evaluation) net, compiling it if needed.
func (t *Trainer) Plan(i int, train bool) (*gpuexec.Plan, error) {
	pr, err := t.program(i, train)
	if err != nil {
		return nil, err
	}
	return pr.Plan, nil
}

// Step is StepPred without the predictions.
func (t *Trainer) Step(bt *data.Batch) (float64, error) {
	loss, _, err := t.StepPred(bt)
	return loss, err
}

// StepPred runs forward and backward on bt in the smallest bucket it fits, applies one Adam
// update on the device and returns the loss before the update and the predictions of the
// batch's real rows (valid until the next call), as nn.Trainer.StepPred does. It is Launch
// then Wait.
func (t *Trainer) StepPred(bt *data.Batch) (float64, []float64, error) {
	if err := t.Launch(bt); err != nil {
		return 0, nil, err
	}
	return t.Wait()
}

// StepAhead returns the loss and predictions of bt's training step (as StepPred), launching
// it unless the StepAhead before launched it (it is then the oldest step in flight). While the
// device runs it, StepAhead calls next (when not nil): the batch next returns (nil: none) is
// staged and its step launched behind bt's before bt's results are waited for, so that the
// host's work on it and its upload overlap bt's step and the device goes from step to step
// without waiting for the host. ahead reports that it was launched (the caller then trains it
// next). A batch that cannot be staged is not launched, and its error not returned (it comes
// again when the batch is trained in turn); a failed launch is returned.
func (t *Trainer) StepAhead(bt *data.Batch, next func() *data.Batch) (loss float64, pred []float64, ahead bool, err error) {
	if len(t.pending) == 0 || t.pending[0].bt != bt {
		if err := t.Launch(bt); err != nil {
			return 0, nil, false, err
		}
	}
	if next != nil {
		if nb := next(); nb != nil && t.Stage(nb) == nil {
			if err := t.Launch(nb); err != nil {
				return 0, nil, false, err
			}
			ahead = true
		}
	}
	loss, pred, err = t.Wait()
	return loss, pred, ahead, err
}

// staged is a batch whose inputs are loaded and queued for upload.
type staged struct {
	bt *data.Batch
	pr *program
}

// inflight is a launched step whose results Wait reads.
type inflight struct {
	bt   *data.Batch
	pr   *program
	n    int // prediction values to read back
	slot *resultSlot
}

// maxInFlight is the most training steps launched and not yet waited for: the one the device
// runs and the one queued behind it (StepAhead), so that it goes from step to step without
// waiting for the host.
const maxInFlight = 2

// resultSlot is host memory a launched step's loss and predictions are copied into (page-
// locked where the device has it, so the copy does not hold up the host), and the event
// after the copy.
type resultSlot struct {
	buf  *cuda.HostBuf
	done *cuda.Event
}

// slot returns a free result slot holding at least n values.
func (t *Trainer) slot(n int) (*resultSlot, error) {
	for i := range t.slots {
		sl := &t.slots[i]
		if slices.ContainsFunc(t.pending, func(f *inflight) bool { return f.slot == sl }) {
			continue // a launched step's
		}
		if sl.buf == nil || len(sl.buf.Float32s()) < n {
			_ = sl.buf.Free()
			sl.buf = nil
			buf, err := t.x.B.HostAlloc(4 * max(n, 64))
			if err != nil {
				return nil, fmt.Errorf("gpu: host memory for the results: %w", err)
			}
			sl.buf = buf
		}
		if sl.done == nil {
			// A driver without events leaves it nil: its pageable copy returns when done.
			sl.done, _ = t.x.B.NewEvent()
		}
		return sl, nil
	}
	return nil, fmt.Errorf("gpu trainer: %d steps are launched and not waited for", len(t.pending))
}

// trainProgram returns the training program of bt's bucket.
func (t *Trainer) trainProgram(bt *data.Batch) (*program, error) {
	i, err := nn.PickBucket(t.T.Buckets, bt)
	if err != nil {
		return nil, fmt.Errorf("gpu trainer: %w", err)
	}
	pr, err := t.program(i, true)
	if err != nil {
		return nil, fmt.Errorf("gpu trainer: %w", err)
	}
	return pr, nil
}

// Stage loads bt (with the host mirror's current Laplacian signs) into its bucket's inputs
// and queues their upload, so that Launch(bt) starts at once. Called between Launch and Wait
// of the previous step (StepAhead), it assembles the next batch while the device runs: the
// program's other input side takes it, uploaded on the side stream (gpuexec/pipeline.go).
func (t *Trainer) Stage(bt *data.Batch) error {
	t.staged = nil
	pr, err := t.trainProgram(bt)
	if err != nil {
		return err
	}
	in := pr.in
	if t.T.LapSign != nil && in.LapSign != nil {
		copy(in.LapSign, t.T.LapSign)
	}
	if err := in.Load(bt); err != nil {
		return err
	}
	if err := t.x.Stage(pr.Program); err != nil {
		return err
	}
	t.staged = &staged{bt: bt, pr: pr}
	return nil
}

// Launch queues a training step on bt (staging it first unless Stage(bt) did) and the Adam
// update, and returns without waiting for the device; Wait returns its results.
func (t *Trainer) Launch(bt *data.Batch) error {
	if len(t.pending) >= maxInFlight {
		return fmt.Errorf("gpu trainer: a step is launched while %d are not waited for", len(t.pending))
	}
	if t.staged == nil || t.staged.bt != bt {
		if err := t.Stage(bt); err != nil {
			return err
		}
	}
	pr := t.staged.pr
	t.staged = nil
	t.T.P.SetTraining(true)
	t.T.P.Step++
	st := t.T.Opt.State()
	st.Step++
	t.T.Opt.SetState(st)
	if err := t.setStep(st.Step); err != nil {
		return err
	}
	if err := t.prepareAdam(pr); err != nil {
		return err
	}
	if err := t.x.Run(pr.Program, func() error { return t.adam(pr) }); err != nil {
		t.x.Release(pr.Program)
		return err
	}
	t.noteGraphs()
	f, err := t.queueRead(pr, bt)
	if err != nil {
		t.x.Release(pr.Program)
		return err
	}
	t.pending = append(t.pending, f)
	return nil
}

// queueRead queues the copy of a launched step's loss and predictions into a result slot and
// the event after it.
func (t *Trainer) queueRead(pr *program, bt *data.Batch) (*inflight, error) {
	n, err := t.queueResults(pr, bt)
	if err != nil {
		return nil, err
	}
	sl, err := t.slot(1 + n)
	if err != nil {
		return nil, err
	}
	if err := t.x.B.DownloadAsync(sl.buf.Float32s()[:1+n], pr.Result); err != nil {
		return nil, fmt.Errorf("gpu: reading back the loss and predictions (bucket %v): %w", pr.in.B, err)
	}
	if err := t.x.B.RecordEvent(sl.done); err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	return &inflight{bt: bt, pr: pr, n: n, slot: sl}, nil
}

// Wait waits for the oldest launched step and returns its loss and the predictions of its
// batch's real rows (valid until the next call).
func (t *Trainer) Wait() (float64, []float64, error) {
	if len(t.pending) == 0 {
		return 0, nil, fmt.Errorf("gpu trainer: Wait without a launched step")
	}
	f := t.pending[0]
	t.pending = t.pending[1:]
	defer t.x.Release(f.pr.Program)
	if err := f.slot.done.Sync(); err != nil {
		return 0, nil, fmt.Errorf("gpu: reading back the loss and predictions (bucket %v): %w", f.pr.in.B, err)
	}
	return t.hostResults(f.slot.buf.Float32s()[:1+f.n]), t.pred, nil
}

// Gradients runs the forward and backward pass of a training step on bt without updating
// anything, and returns the loss and the gradient of every parameter the loss depends on (for
// checks against the CPU). The step counter is not advanced: dropout masks are those of the
// current Params.Step.
func (t *Trainer) Gradients(bt *data.Batch) (float64, map[string][]float32, error) {
	if len(t.pending) > 0 {
		return 0, nil, fmt.Errorf("gpu trainer: Gradients while a training step is launched and not waited for")
	}
	t.staged = nil // the inputs are loaded here
	i, err := nn.PickBucket(t.T.Buckets, bt)
	if err != nil {
		return 0, nil, fmt.Errorf("gpu trainer: %w", err)
	}
	pr, err := t.program(i, true)
	if err != nil {
		return 0, nil, fmt.Errorf("gpu trainer: %w", err)
	}
	t.T.P.SetTraining(true)
	if err := pr.in.Load(bt); err != nil {
		return 0, nil, err
	}
	if err := t.x.Stage(pr.Program); err != nil {
		return 0, nil, err
	}
	if err := t.setStep(t.T.Opt.State().Step + 1); err != nil {
		return 0, nil, err
	}
	defer t.x.Release(pr.Program)
	if err := t.x.Run(pr.Program, nil); err != nil {
		return 0, nil, err
	}
	grads := map[string][]float32{}
	for j, name := range pr.Plan.GradNames {
		g := make([]float32, pr.Plan.Vals[pr.Plan.Grads[j]].Elems)
		if err := t.x.B.Download(g, t.x.Ptr(pr.Program, pr.Plan.Grads[j])); err != nil {
			return 0, nil, fmt.Errorf("gpu: downloading the gradient of %q: %w", name, err)
		}
		grads[name] = g
	}
	loss, _, err := t.results(pr, bt)
	return loss, grads, err
}

// setStep queues the upload of the coming step's scalars (cuda.StepScalars): Adam's learning
// rate and bias corrections of update number adamStep, and the dropout mix of the host
// mirror's step counter (ops.DropState.StepSeed).
func (t *Trainer) setStep(adamStep int) error {
	o := t.T.Opt
	s := cuda.StepScalars{Mix: kern.Mix64(t.T.P.Step)}
	if err := s.AdamScalars(adamOf(o), adamStep); err != nil {
		return err
	}
	return t.x.SetStep(s)
}

// adamOf is the optimiser's hyper-parameters.
func adamOf(o *nn.Adam) cuda.Adam {
	return cuda.Adam{LR: o.LR, Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps}
}

// prepareAdam gives every parameter the program trains Adam's moments on the device (zeros or
// the host's), before the run: what adam queues is captured with the run and replayed.
func (t *Trainer) prepareAdam(pr *program) error {
	pl := pr.Plan
	for i, name := range pl.GradNames {
		pb, err := t.ensureMoments(name)
		if err != nil {
			return err
		}
		if n := pl.Vals[pl.Grads[i]].Elems; n != pb.N {
			return fmt.Errorf("gpu: gradient of %q has %d values, the parameter %d", name, n, pb.N)
		}
	}
	return nil
}

// adam queues one Adam update of every parameter with a gradient (reading its learning rate
// and bias corrections from the step scalars setStep queued; Launch counts the step on the
// host): one launch for each run of parameters whose values, moments and gradients lie one
// after another (all of them when the parameters were placed in the training program's order,
// as placeParams does). It runs as the tail of the training program's run, so a captured
// step replays it too.
func (t *Trainer) adam(pr *program) error {
	pl := pr.Plan
	hyper := adamOf(t.T.Opt)
	var run *gpuexec.ParamBuf // the first parameter of the run
	var runG cuda.DevPtr      // its gradient
	var last *gpuexec.ParamBuf
	var lastG cuda.DevPtr
	n := 0 // values in the run
	flush := func() error {
		if n == 0 {
			return nil
		}
		if err := t.x.B.AdamStep(hyper, t.x.Scalars(), run.X, run.M, run.V, runG, n); err != nil {
			return fmt.Errorf("gpu: Adam update of %d values: %w", n, err)
		}
		return nil
	}
	for i, name := range pl.GradNames {
		pb := t.x.Params[name]
		gp := t.x.Ptr(pr.Program, pl.Grads[i])
		if n > 0 && t.x.Contiguous(last, lastG, last.N, pb, gp) {
			n += pb.N
		} else {
			if err := flush(); err != nil {
				return err
			}
			run, runG, n = pb, gp, pb.N
		}
		last, lastG = pb, gp
	}
	return flush()
}

// results copies the loss and the real rows of the prediction back in one transfer.
func (t *Trainer) results(pr *program, bt *data.Batch) (float64, []float64, error) {
	n, err := t.queueResults(pr, bt)
	if err != nil {
		return 0, nil, err
	}
	return t.readResults(pr, n)
}

// queueResults queues copying the loss and the prediction of bt's real rows into the
// program's result buffer; it returns the number of prediction values.
func (t *Trainer) queueResults(pr *program, bt *data.Batch) (int, error) {
	pl := pr.Plan
	rows := bt.NumGraphs
	if pr.in.NodeLevel {
		rows = bt.Union.N
	}
	_, cols := pl.Shape(pl.Pred)
	n := rows * cols
	return n, t.x.CopyResults(pr.Program, n)
}

// readResults waits for the result buffer and returns the loss and n prediction values.
func (t *Trainer) readResults(pr *program, n int) (float64, []float64, error) {
	t.res = gpuexec.Grow(t.res, 1+n)
	if err := t.x.B.Download(t.res, pr.Result); err != nil {
		return 0, nil, fmt.Errorf("gpu: reading back the loss and predictions (bucket %v): %w", pr.in.B, err)
	}
	return t.hostResults(t.res), t.pred, nil
}

// hostResults returns the loss res[0] and sets t.pred to the predictions res[1:].
func (t *Trainer) hostResults(res []float32) float64 {
	n := len(res) - 1
	if cap(t.pred) < n {
		t.pred = make([]float64, n)
	}
	t.pred = t.pred[:n]
	for i := range t.pred {
		t.pred[i] = float64(res[1+i])
	}
	return float64(res[0])
}

// Eval runs bt through the evaluation net of its bucket (nn.Trainer.EvalBucket), with batch
// norm on its running statistics, no dropout and no gradients, and returns the loss and the
// predictions of its real rows, as nn.Trainer.Eval does.
func (t *Trainer) Eval(bt *data.Batch) (float64, []float64, error) {
	if len(t.pending) > 0 {
		return 0, nil, fmt.Errorf("gpu trainer: Eval while a training step is launched and not waited for")
	}
	b, err := t.T.EvalBucket(bt)
	if err != nil {
		return 0, nil, fmt.Errorf("gpu: %w", err)
	}
	pr, err := t.largeProgram(b)
	if err != nil {
		return 0, nil, fmt.Errorf("gpu trainer: %w", err)
	}
	t.T.P.SetTraining(false)
	defer t.T.P.SetTraining(true)
	if err := pr.in.Load(bt); err != nil {
		return 0, nil, err
	}
	if err := t.x.Stage(pr.Program); err != nil {
		return 0, nil, err
	}
	defer t.x.Release(pr.Program)
	if err := t.x.Run(pr.Program, nil); err != nil {
		return 0, nil, err
	}
	return t.results(pr, bt)
}

// largeProgram returns the evaluation program of bucket b (one of the trainer's buckets, or a
// shape outside them: a large evaluation batch's, or one fitted to the evaluation batches),
// compiling it the first time.
func (t *Trainer) largeProgram(b nn.Bucket) (*program, error) {
	if i := slices.Index(t.T.Buckets, b); i >= 0 {
		return t.program(i, false)
	}
	if pr := t.large[b]; pr != nil {
		return pr, nil
	}
	net, err := t.T.EvalNetFor(b)
	if err != nil {
		return nil, err
	}
	pr, err := t.newProgram(net)
	if err != nil {
		return nil, fmt.Errorf("bucket %v: %w", b, err)
	}
	if t.large == nil {
		t.large = map[nn.Bucket]*program{}
	}
	t.large[b] = pr
	return pr, nil
}

// EvalRoom says whether the evaluation program of bucket b fits on the device beside what the
// trainer holds: need is what running it adds, its activations beyond the arena the executor
// holds already (gpuexec.Exec.ArenaBytes) and its inputs' buffers; room the device's free
// memory less a tenth of its total (left to the allocator's cache, fragmentation and the
// libraries' workspaces). known is false where the device cannot tell its free memory; then
// fits is true. It compiles the program's plan on the host only: nothing is allocated on the
// device, and a net that does not fit is dropped again.
func (t *Trainer) EvalRoom(b nn.Bucket) (fits bool, need, room int64, known bool, err error) {
	if pr := t.large[b]; pr != nil { // on the device already
		return true, 0, 0, false, nil
	}
	net, err := t.T.EvalNetFor(b)
	if err != nil {
		return false, 0, 0, false, fmt.Errorf("gpu trainer: %w", err)
	}
	pl, err := Compile(net, t.T.P)
	if err != nil {
		t.T.DropEvalNet(b)
		return false, 0, 0, false, fmt.Errorf("gpu trainer: evaluation plan, bucket %v: %w", b, err)
	}
	need = max(pl.Bytes()-t.x.ArenaBytes(), 0) + net.In.Bytes()
	_, used, total, ok := t.x.B.Memory()
	if !ok || total <= 0 {
		return true, need, 0, false, nil
	}
	room = total - used - total/10
	if need > room {
		t.T.DropEvalNet(b)
		return false, need, room, true, nil
	}
	return true, need, room, true, nil
}

// EvalRows runs bt through the evaluation program of bucket b, which need not be one of the
// trainer's buckets (a large evaluation batch, the union of several protocol batches: in
// evaluation mode a row's prediction does not depend on its batch, gpu/evalbatch_test.go),
// and returns the predictions of its real rows (valid until the next call) with the net's
// holders, whose BatchLoss forms the loss of any batch from its rows on the host, as
// nn.Trainer.EvalRows does. The device's loss of the large batch is read back and dropped.
func (t *Trainer) EvalRows(bt *data.Batch, b nn.Bucket) ([]float64, *nn.Inputs, error) {
	if len(t.pending) > 0 {
		return nil, nil, fmt.Errorf("gpu trainer: evaluation while a training step is launched and not waited for")
	}
	if !b.Fits(bt) {
		return nil, nil, fmt.Errorf("gpu trainer: a batch of %d graphs, %d nodes, %d edges does not fit bucket %v", bt.NumGraphs, bt.Union.N, bt.Union.NumEdges(), b)
	}
	pr, err := t.largeProgram(b)
	if err != nil {
		return nil, nil, fmt.Errorf("gpu trainer: %w", err)
	}
	t.T.P.SetTraining(false)
	defer t.T.P.SetTraining(true)
	if err := pr.in.Load(bt); err != nil {
		return nil, nil, err
	}
	if err := t.x.Stage(pr.Program); err != nil {
		return nil, nil, err
	}
	defer t.x.Release(pr.Program)
	if err := t.x.Run(pr.Program, nil); err != nil {
		return nil, nil, err
	}
	_, pred, err := t.results(pr, bt)
	if err != nil {
		return nil, nil, err
	}
	return pred, pr.in, nil
}

// Close waits for the steps still launched and frees the trainer's device memory (the backend
// stays open).
func (t *Trainer) Close() {
	for len(t.pending) > 0 {
		_, _, _ = t.Wait()
	}
	t.pending, t.staged = nil, nil
	for i := range t.slots {
		_ = t.slots[i].buf.Free()
		if t.slots[i].done != nil {
			_ = t.slots[i].done.Destroy()
		}
		t.slots[i] = resultSlot{}
	}
	_ = t.sync.Free()
	if t.syncDone != nil {
		_ = t.syncDone.Destroy()
	}
	t.sync, t.syncDone = nil, nil
	for b, pr := range t.large {
		t.x.Release(pr.Program)
		t.x.FreeProgram(pr.Program)
		delete(t.large, b)
	}
	for _, progs := range [][]*program{t.train, t.eval} {
		for i, pr := range progs {
			if pr != nil {
				t.x.Release(pr.Program)
				t.x.FreeProgram(pr.Program)
				progs[i] = nil
			}
		}
	}
	t.x.Close()
	clear(t.bn)
}

// hostFloat32 returns a float32 tensor's values or an error naming it.
func hostFloat32(name string, t *tensor.Dense) ([]float32, error) {
	if t.Dtype() != tensor.Float32 {
		return nil, fmt.Errorf("gpu: %s is %v, want float32", name, t.Dtype())
	}
	return t.Float32s(), nil
}
