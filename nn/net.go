package nn

import (
	"fmt"
	"github.com/rewiregnn/rewiregnn/lower"
	"github.com/rewiregnn/rewiregnn/prog"
	"slices"

	"github.com/rewiregnn/rewiregnn/cpuexec"
	"github.com/rewiregnn/rewiregnn/data"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Net is a model compiled for one shape bucket: its graph, input holders, outputs and, for
// training, the gradient of the loss with respect to every parameter.
type Net struct {
	B     *Builder
	In    *Inputs
	Pred  *gorgonia.Node
	Loss  *gorgonia.Node
	Grads gorgonia.Nodes // gradients of the parameters the loss depends on; nil for evaluation
	// r runs the net's program (pr, fed by bind) on the CPU.
	r       *cpuexec.Runner
	pr      *prog.Program
	bind    *lower.Binding
	names   []string
	vals    []gorgonia.Value
	sums    lower.Sums
	forward map[int64]bool // the forward pass's nodes
	outs    []output       // the nodes the runner's outputs are bound to (bindOutputs)
}

// Finish checks the builder, adds the gradients when train is set and compiles the graph.
func Finish(b *Builder, in *Inputs, pred, loss *gorgonia.Node, train bool) (*Net, error) {
	if err := b.Err(); err != nil {
		return nil, err
	}
	n := &Net{B: b, In: in, Pred: pred, Loss: loss, forward: map[int64]bool{}}
	forward := n.forward
	for _, v := range b.G.AllNodes() {
		forward[v.ID()] = true
	}
	if train {
		// Parameters the loss does not depend on (e.g. the last layer's edge batch norm) get no
		// gradient and no update, as in PyTorch.
		used := lower.Reaches(b.G, loss)
		var wrt gorgonia.Nodes
		for _, p := range b.Learn {
			if used[p.ID()] {
				wrt = append(wrt, p)
				n.names = append(n.names, p.Name())
			}
		}
		grads, s, err := lower.Grad(loss, wrt...)
		if err != nil {
			return nil, fmt.Errorf("gradient: %w", err)
		}
		n.Grads, n.sums = grads, s
		n.vals = make([]gorgonia.Value, len(grads))
	}
	pr, bind, err := n.Program(b.P)
	if err != nil {
		return nil, fmt.Errorf("lowering: %w", err)
	}
	n.pr, n.bind = pr, bind
	if err := n.compile(false); err != nil {
		return nil, err
	}
	return n, nil
}

// compile compiles the net's program for the CPU runner.
func (n *Net) compile(recompute bool) error {
	r, err := cpuexec.CompileProgram(n.pr, n.bind, recompute)
	if err != nil {
		return fmt.Errorf("compile: %w", err)
	}
	n.r = r
	return nil
}

// SetRecompute compiles a training net again with activation recomputation (on) or without:
// with it, the forward pass keeps only the layers' outputs (Builder.Checkpoint) and the
// backward pass recomputes each layer's activations, for the same results bit for bit and
// about one layer's activations held instead of every layer's. An evaluation net is left as
// it is. Call it before the first Run.
func (n *Net) SetRecompute(on bool) error {
	if n.Grads == nil {
		return nil
	}
	return n.compile(on)
}

// Program lowers the net (lower.Lower) into the program the backends run, with the binding that
// feeds it from the net's holders. p is the parameter set the net was built on.
func (n *Net) Program(p *Params) (*prog.Program, *lower.Binding, error) {
	params := map[int64]string{}
	for _, v := range n.B.Learn {
		if t, ok := p.T[v.Name()]; !ok || v.Value() != gorgonia.Value(t) {
			return nil, nil, fmt.Errorf("%s: parameter %q is not the tensor of the parameter set", lower.Describe(v), v.Name())
		}
		params[v.ID()] = v.Name()
	}
	return lower.Lower(lower.Graph{G: n.B.G, Loss: n.Loss, Pred: n.Pred, Grads: n.Grads, GradNames: n.names,
		Params: params, Inputs: n.In.dense(), Sums: n.sums, Checkpoints: n.B.checkpoints, Named: n.B.inputNodes(),
		Forward: func(v *gorgonia.Node) bool { return n.forward[v.ID()] }})
}

// Run loads bt and evaluates the graph (and the gradients, for a training net); it returns the
// loss.
func (n *Net) Run(bt *data.Batch) (float64, error) {
	if n.In != nil { // (a net built by hand may have no batch holders: its inputs are its own)
		if err := n.In.Load(bt); err != nil {
			return 0, err
		}
	}
	if err := n.r.Run(); err != nil {
		return 0, fmt.Errorf("run (bucket %v): %w", n.In.B, err)
	}
	if err := n.bindOutputs(); err != nil {
		return 0, fmt.Errorf("run (bucket %v): %w", n.In.B, err)
	}
	switch v := n.Loss.Value().Data().(type) {
	case float64:
		return v, nil
	case float32:
		return float64(v), nil
	default:
		return 0, fmt.Errorf("loss is %T", v)
	}
}

// bindOutputs makes the runner's loss, prediction and gradients the values of the graph's
// nodes (Loss.Value(), Pred.Value(), Gradients), without copying them. A tensor's wrapper is
// made again only when the runner's buffer for it moved (a new arena cut).
func (n *Net) bindOutputs() error {
	if n.outs == nil {
		n.outs = []output{{node: n.Loss, v: n.pr.Loss}, {node: n.Pred, v: n.pr.Pred}}
		for i, g := range n.Grads {
			n.outs = append(n.outs, output{node: g, v: n.pr.Grads[i]})
		}
	}
	for i := range n.outs {
		if err := n.outs[i].bind(n.r.Value(n.outs[i].v)); err != nil {
			return err
		}
	}
	return nil
}

// output is a graph node the runner's value v is bound to, and the value bound last.
type output struct {
	node *gorgonia.Node
	v    int
	val  gorgonia.Value
}

// bind makes data (the runner's value) the node's value.
func (o *output) bind(data any) error {
	if t, ok := o.val.(*tensor.Dense); ok && sameBacking(t.Data(), data) {
		return nil // already bound to this buffer
	}
	switch d := data.(type) {
	case []float32:
		if o.node.IsScalar() {
			o.val = gorgonia.NewF32(d[0])
		} else {
			o.val = tensor.New(tensor.WithShape(o.node.Shape().Clone()...), tensor.WithBacking(d))
		}
	case []float64:
		if o.node.IsScalar() {
			o.val = gorgonia.NewF64(d[0])
		} else {
			o.val = tensor.New(tensor.WithShape(o.node.Shape().Clone()...), tensor.WithBacking(d))
		}
	default:
		return fmt.Errorf("%s: the runner holds %T", lower.Describe(o.node), d)
	}
	return gorgonia.UnsafeLet(o.node, o.val)
}

// sameBacking reports whether a and b are the same []float32 or []float64 buffer.
func sameBacking(a, b any) bool {
	switch x := a.(type) {
	case []float32:
		y, ok := b.([]float32)
		return ok && len(x) == len(y) && len(x) > 0 && &x[0] == &y[0]
	case []float64:
		y, ok := b.([]float64)
		return ok && len(x) == len(y) && len(x) > 0 && &x[0] == &y[0]
	}
	return false
}

// Runner returns the executor the net runs on.
func (n *Net) Runner() *cpuexec.Runner { return n.r }

// Gradients returns the names and gradient values of the parameters the loss depends on, from
// the last Run.
func (n *Net) Gradients() ([]string, []gorgonia.Value) {
	for i, g := range n.Grads {
		n.vals[i] = g.Value()
	}
	return n.names, n.vals
}

// Bytes returns the memory the net holds once it has run: its executor's buffers and kept
// state (cpuexec.Runner.Bytes) and its input holders (Inputs.Bytes). Known before running.
func (n *Net) Bytes() int64 { return n.r.Bytes() + n.In.Bytes() }

// NetMem is a net's memory, known before running it, split into what it holds alone and what
// nets sharing an arena (cpuexec.Arena) share: the activation slots and the products' scratch.
type NetMem struct {
	Own      int64 // kept op state, results outside the plan, input holders
	Shared   int64 // activation slots and scratch: with an arena, the largest net's counts
	F32, F64 int64 // the slots' values by element type (what Arena.Reserve needs)
}

// Total is the net's memory without an arena.
func (m NetMem) Total() int64 { return m.Own + m.Shared }

// stepBytes is what the net's structure holds per compiled step besides the buffers the
// runner counts (the graph's nodes, the ops and their closures, the step records): 3–6 KiB a
// step in heap profiles of each model's ZINC net (TestNetBytesMatchesHeap), counted at the
// low end.
const stepBytes = 3 << 10

// Mem returns the net's memory by part.
func (n *Net) Mem() NetMem {
	slots, _ := n.r.PlanBytes()
	shared := slots + n.r.ScratchBytes()
	f32, f64 := n.r.SlotElems()
	own := n.Bytes() - shared + stepBytes*int64(len(n.r.Steps()))
	return NetMem{Own: own, Shared: shared, F32: f32, F64: f64}
}

// NetBytes builds the net of bucket b (for training or evaluation) on p without running it and
// returns its memory (Net.Mem), with activation recomputation if recompute: what a training (or
// evaluation) step in that bucket holds on the CPU. The net is dropped again. It is what a memory check sums over the buckets a run uses.
func NetBytes(build BuildFunc, p *Params, b Bucket, train, recompute bool) (NetMem, error) {
	n, err := build(p, b, train)
	if err != nil {
		return NetMem{}, fmt.Errorf("memory estimate, bucket %v: %w", b, err)
	}
	defer n.Close()
	if err := n.SetRecompute(recompute); err != nil {
		return NetMem{}, fmt.Errorf("memory estimate, bucket %v: %w", b, err)
	}
	return n.Mem(), nil
}

// Close releases the net's resources (none at present: buffers are garbage collected).
func (n *Net) Close() {}

// BuildFunc builds a model for one bucket on parameters p.
type BuildFunc func(p *Params, b Bucket, train bool) (*Net, error)

// Trainer owns a model's parameters, one compiled training net per bucket (built on first use,
// then reused), and Adam.
type Trainer struct {
	P       *Params
	Opt     *Adam
	Buckets []Bucket
	// EvalBuckets are the buckets fitted to the run's evaluation batches (FitEvalBuckets):
	// Eval picks among them and Buckets (EvalBucket), training among Buckets alone.
	EvalBuckets []Bucket
	// LapSign, when set, holds the signs applied to the Laplacian encoding's columns in the
	// next training step (the per-batch random flip); evaluation never flips.
	LapSign []float32
	// Arena holds the activations of every net the trainer builds (only one runs at a time):
	// their memory is the largest net's, not the sum. Reserve it for the largest net the run
	// will use (Arena.Reserve) before the first step to avoid growing it.
	Arena *cpuexec.Arena
	// Recompute compiles the training nets with activation recomputation (Net.SetRecompute);
	// set it before the first step.
	Recompute bool
	build     BuildFunc
	nets      []*Net
	evals     []*Net
	large     map[Bucket]*Net // evaluation nets of buckets outside Buckets (EvalNetFor)
	pred      []float64
}

// NewTrainer returns a trainer for the model build makes, on the given buckets.
func NewTrainer(p *Params, build BuildFunc, buckets []Bucket, lr float64) (*Trainer, error) {
	if len(buckets) == 0 {
		return nil, fmt.Errorf("trainer: no buckets")
	}
	return &Trainer{P: p, Opt: NewAdam(lr), Buckets: buckets, Arena: &cpuexec.Arena{}, build: build, nets: make([]*Net, len(buckets)), evals: make([]*Net, len(buckets))}, nil
}

// Net returns the training net of bucket i, building it the first time.
func (t *Trainer) Net(i int) (*Net, error) {
	if t.nets[i] == nil {
		n, err := t.make(i, true)
		if err != nil {
			return nil, fmt.Errorf("trainer: bucket %v: %w", t.Buckets[i], err)
		}
		t.nets[i] = n
	}
	return t.nets[i], nil
}

// Trained returns the names of the parameters that the training nets built so far give a
// gradient (every bucket's net has the same ones), in the order of their gradients; nil while
// no training net is built.
func (t *Trainer) Trained() []string {
	for _, n := range t.nets {
		if n != nil {
			return slices.Clone(n.names)
		}
	}
	return nil
}

// Step runs forward and backward on bt in the smallest bucket it fits and applies one Adam
// update. It returns the loss before the update.
func (t *Trainer) Step(bt *data.Batch) (float64, error) {
	loss, _, err := t.StepPred(bt)
	return loss, err
}

// StepPred is Step that also returns the predictions of the batch's real rows (graphs, or
// nodes for node-level tasks; Out values per row), computed in training mode before the
// update, valid until the next call.
func (t *Trainer) StepPred(bt *data.Batch) (float64, []float64, error) {
	i, err := PickBucket(t.Buckets, bt)
	if err != nil {
		return 0, nil, fmt.Errorf("trainer: %w", err)
	}
	n, err := t.Net(i)
	if err != nil {
		return 0, nil, err
	}
	if t.LapSign != nil && n.In.LapSign != nil {
		copy(n.In.LapSign, t.LapSign)
	}
	t.P.SetTraining(true)
	t.P.Step++
	loss, err := n.Run(bt)
	if err != nil {
		return 0, nil, err
	}
	pred := t.predictions(n, bt)
	names, grads := n.Gradients()
	if err := t.Opt.Step(t.P, names, grads); err != nil {
		return 0, nil, err
	}
	return loss, pred, nil
}

// Eval runs bt through the evaluation net (no gradients, batch norm on running statistics,
// no dropout) of its bucket (EvalBucket), and returns the loss and the predictions of its
// real rows (as StepPred), valid until the next call.
func (t *Trainer) Eval(bt *data.Batch) (float64, []float64, error) {
	b, err := t.EvalBucket(bt)
	if err != nil {
		return 0, nil, err
	}
	n, err := t.EvalNetFor(b)
	if err != nil {
		return 0, nil, err
	}
	t.P.SetTraining(false)
	defer t.P.SetTraining(true)
	loss, err := n.Run(bt)
	if err != nil {
		return 0, nil, err
	}
	return loss, t.predictions(n, bt), nil
}

// predictions copies the real rows of n's prediction into the trainer's buffer.
func (t *Trainer) predictions(n *Net, bt *data.Batch) []float64 {
	rows := bt.NumGraphs
	if n.In.NodeLevel {
		rows = bt.Union.N
	}
	cols := n.Pred.Shape()[1]
	if cap(t.pred) < rows*cols {
		t.pred = make([]float64, rows*cols)
	}
	t.pred = t.pred[:rows*cols]
	switch v := n.Pred.Value().Data().(type) {
	case []float32:
		for i := range t.pred {
			t.pred[i] = float64(v[i])
		}
	case []float64:
		copy(t.pred, v)
	}
	return t.pred
}

// EvalNet returns the evaluation net of bucket i (no gradients), building it the first time;
// Eval uses the same nets.
func (t *Trainer) EvalNet(i int) (*Net, error) {
	if i < 0 || i >= len(t.Buckets) {
		return nil, fmt.Errorf("trainer: bucket %d of %d", i, len(t.Buckets))
	}
	if t.evals[i] == nil {
		n, err := t.make(i, false)
		if err != nil {
			return nil, fmt.Errorf("trainer: evaluation net, bucket %v: %w", t.Buckets[i], err)
		}
		t.evals[i] = n
	}
	return t.evals[i], nil
}

// EvalNetFor returns the evaluation net of bucket b, which need not be one of Buckets (a large
// evaluation batch's shape), building it the first time; the net of one of Buckets is EvalNet's.
func (t *Trainer) EvalNetFor(b Bucket) (*Net, error) {
	if i := slices.Index(t.Buckets, b); i >= 0 {
		return t.EvalNet(i)
	}
	if n := t.large[b]; n != nil {
		return n, nil
	}
	n, err := t.makeFor(b, false)
	if err != nil {
		return nil, fmt.Errorf("trainer: evaluation net, bucket %v: %w", b, err)
	}
	if t.large == nil {
		t.large = map[Bucket]*Net{}
	}
	t.large[b] = n
	return n, nil
}

// DropEvalNet forgets the evaluation net of bucket b that EvalNetFor built outside Buckets
// (one found too large for the device, say); nothing for a bucket of Buckets.
func (t *Trainer) DropEvalNet(b Bucket) {
	if n := t.large[b]; n != nil {
		n.Close()
		delete(t.large, b)
	}
}

// EvalRows runs bt through the evaluation net of bucket b (EvalNetFor) and returns the
// predictions of its real rows (as Eval, valid until the next call) with the net's holders,
// whose BatchLoss forms the loss of any batch from its rows. With b large, bt can be the union
// of several batches: in evaluation mode a row's prediction does not depend on the batch it is
// computed in (gpu/evalbatch_test.go).
func (t *Trainer) EvalRows(bt *data.Batch, b Bucket) ([]float64, *Inputs, error) {
	n, err := t.EvalNetFor(b)
	if err != nil {
		return nil, nil, err
	}
	if !b.Fits(bt) {
		return nil, nil, fmt.Errorf("trainer: a batch of %d graphs, %d nodes, %d edges does not fit bucket %v", bt.NumGraphs, bt.Union.N, bt.Union.NumEdges(), b)
	}
	t.P.SetTraining(false)
	defer t.P.SetTraining(true)
	if _, err := n.Run(bt); err != nil {
		return nil, nil, err
	}
	return t.predictions(n, bt), n.In, nil
}

// make builds the net of bucket i on the trainer's arena.
func (t *Trainer) make(i int, train bool) (*Net, error) {
	return t.makeFor(t.Buckets[i], train)
}

// makeFor builds the net of bucket b on the trainer's arena.
func (t *Trainer) makeFor(b Bucket, train bool) (*Net, error) {
	n, err := t.build(t.P, b, train)
	if err != nil {
		return nil, err
	}
	if train && t.Recompute {
		if err := n.SetRecompute(true); err != nil {
			return nil, err
		}
	}
	n.r.SetArena(t.Arena)
	return n, nil
}

// Close releases every compiled net.
func (t *Trainer) Close() {
	for _, n := range append(t.nets, t.evals...) {
		if n != nil {
			n.Close()
		}
	}
	for b, n := range t.large {
		n.Close()
		delete(t.large, b)
	}
}
