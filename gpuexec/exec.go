package gpuexec

import (
	"errors"
	"fmt"
	"slices"

	"github.com/rewiregnn/rewiregnn/cuda"
	"github.com/rewiregnn/rewiregnn/prog"
)

// Exec runs programs on a backend. It holds what outlives one program: the parameters with
// Adam's moments and the batch norms' running statistics, resident on the device and found by
// name. Whoever owns the host values (the trainer) puts them there (AddParams, AddParam, AddBN)
// and reads them back; programs only refer to them.
type Exec struct {
	B      Backend
	Params map[string]*ParamBuf
	BN     map[string]*BNBuf
	arenas []cuda.DevPtr // the parameter arenas of AddParams
	// act is the activation arena every program's slots lie in (actElems float32 elements,
	// the largest program's need so far): programs run one after another on the device's
	// stream, so they share it, and a program's buffers keep their addresses from step to step.
	act      cuda.DevPtr
	actElems int
	// scal holds the step's scalars on the device (SetStep), mix their dropout mix on the host.
	scal cuda.DevPtr
	mix  uint64
	// Graphs makes Run capture a program's run as a graph the first time and replay it with
	// one launch after (see Run). GraphErr is why a capture failed, after which Run turned
	// Graphs off and queues every run launch by launch.
	Graphs   bool
	GraphErr error
}

// ParamBuf is a parameter on the device: its values and Adam's moments, N values each. M and V
// are 0 until the parameter is first trained, except for a parameter of an arena (AddParams),
// whose moments have their place from the start; Moments says whether they hold Adam's state.
type ParamBuf struct {
	X, M, V cuda.DevPtr
	N       int
	Moments bool
	inArena bool
}

// BNBuf is a batch norm's running mean and variance on the device, N values each.
type BNBuf struct {
	Mean, Var cuda.DevPtr
	N         int
}

// New returns an executor on backend b with nothing on the device yet.
func New(b Backend) *Exec {
	return &Exec{B: b, Params: map[string]*ParamBuf{}, BN: map[string]*BNBuf{}}
}

// AddParams puts the parameters names (sizes[i] values each) that are not on the device yet
// into one arena, in the order given: their values one after another in one buffer, their
// Adam moments likewise in two more. A training program's gradients lie in the same order in
// one buffer (Compile), so one Adam launch updates every parameter (Contiguous). It returns
// the names it added.
func (e *Exec) AddParams(names []string, sizes []int) ([]string, error) {
	if len(names) != len(sizes) {
		return nil, fmt.Errorf("gpu: %d parameter names for %d sizes", len(names), len(sizes))
	}
	var add []string
	total := 0
	for i, name := range names {
		if _, ok := e.Params[name]; !ok && !slices.Contains(add, name) {
			add = append(add, name)
			total += sizes[i]
		}
	}
	if len(add) == 0 {
		return nil, nil
	}
	var bufs [3]cuda.DevPtr
	for k := range bufs {
		p, err := e.B.Alloc(total)
		if err != nil {
			for _, q := range bufs[:k] {
				_ = e.B.Free(q)
			}
			return nil, fmt.Errorf("gpu: the arena of %d parameters (%d values): %w", len(add), total, err)
		}
		bufs[k] = p
	}
	e.arenas = append(e.arenas, bufs[:]...)
	off := 0
	for i, name := range names {
		if !slices.Contains(add, name) || e.Params[name] != nil {
			continue
		}
		n := sizes[i]
		e.Params[name] = &ParamBuf{X: e.B.Offset(bufs[0], off), M: e.B.Offset(bufs[1], off), V: e.B.Offset(bufs[2], off), N: n, inArena: true}
		off += n
	}
	return add, nil
}

// AddParam allocates parameter name of n values (without moments) if it is not there yet, and
// reports whether it did.
func (e *Exec) AddParam(name string, n int) (*ParamBuf, bool, error) {
	if pb, ok := e.Params[name]; ok {
		return pb, false, nil
	}
	x, err := e.B.Alloc(n)
	if err != nil {
		return nil, false, fmt.Errorf("gpu: parameter %q (%d values): %w", name, n, err)
	}
	pb := &ParamBuf{X: x, N: n}
	e.Params[name] = pb
	return pb, true, nil
}

// AddMoments gives a parameter Adam's moments if it has none (allocating them unless its arena
// has their place), and reports whether it did: the caller then fills them.
func (e *Exec) AddMoments(pb *ParamBuf, name string) (bool, error) {
	if pb.Moments {
		return false, nil
	}
	if pb.M == 0 {
		var err error
		if pb.M, err = e.B.Alloc(pb.N); err == nil {
			pb.V, err = e.B.Alloc(pb.N)
		}
		if err != nil {
			return false, fmt.Errorf("gpu: Adam moments of %q: %w", name, err)
		}
	}
	pb.Moments = true
	return true, nil
}

// Contiguous reports whether b's values, moments and gradient follow a's without a gap (a
// holds n values and has its gradient at ga, b at gb), so that one Adam launch covers both.
func (e *Exec) Contiguous(a *ParamBuf, ga cuda.DevPtr, n int, b *ParamBuf, gb cuda.DevPtr) bool {
	o := e.B.Offset
	return a.inArena && b.inArena && o(a.X, n) == b.X && o(a.M, n) == b.M && o(a.V, n) == b.V && o(ga, n) == gb
}

// SetStep queues the upload of the next step's scalars (Adam's learning rate and bias
// corrections, the dropout mix): the kernels of the steps queued after it read them from the
// device. Work queued before it has read the previous ones by the time the copy runs (one
// stream).
func (e *Exec) SetStep(s cuda.StepScalars) error {
	if e.scal == 0 {
		p, err := e.B.Alloc(cuda.StepScalarWords)
		if err != nil {
			return fmt.Errorf("gpu: the step's scalars: %w", err)
		}
		e.scal = p
	}
	w := s.Words()
	var words [cuda.StepScalarWords]int32
	for i, x := range w {
		words[i] = int32(x)
	}
	if err := e.B.UploadI32(e.scal, words[:]); err != nil {
		return fmt.Errorf("gpu: uploading the step's scalars: %w", err)
	}
	e.mix = s.Mix
	return nil
}

// Scalars is the device block of the step's scalars (0 before the first SetStep).
func (e *Exec) Scalars() cuda.DevPtr { return e.scal }

// AddBN allocates the running statistics of batch norm name (n features) if they are not
// there yet, and reports whether it did.
func (e *Exec) AddBN(name string, n int) (*BNBuf, bool, error) {
	if bb, ok := e.BN[name]; ok {
		return bb, false, nil
	}
	bb := &BNBuf{N: n}
	var err error
	if bb.Mean, err = e.B.Alloc(n); err == nil {
		bb.Var, err = e.B.Alloc(n)
	}
	if err != nil {
		return nil, false, fmt.Errorf("gpu: running statistics of batch norm %q: %w", name, err)
	}
	e.BN[name] = bb
	return bb, true, nil
}

// Close frees the parameters and statistics (the backend stays open).
func (e *Exec) Close() {
	for name, pb := range e.Params {
		if !pb.inArena {
			for _, p := range []cuda.DevPtr{pb.X, pb.M, pb.V} {
				if p != 0 {
					_ = e.B.Free(p)
				}
			}
		}
		delete(e.Params, name)
	}
	for _, p := range e.arenas {
		_ = e.B.Free(p)
	}
	e.arenas = nil
	_ = e.B.Free(e.act)
	e.act, e.actElems = 0, 0
	_ = e.B.Free(e.scal)
	e.scal = 0
	for name, bb := range e.BN {
		_ = e.B.Free(bb.Mean)
		_ = e.B.Free(bb.Var)
		delete(e.BN, name)
	}
}

// Program is a Plan with its device buffers: the index, mask and dense-input buffers it
// uploads per batch from its feed, its static values (uploaded once) and, during a run, its
// activation slots; Result holds the loss and then the prediction (the steps write them there,
// or CopyResults copies them).
type Program struct {
	Plan  *Plan
	Feed  prog.Feed
	Label string        // for errors: which program (a bucket)
	idx   []cuda.DevPtr // by index input: int32 entries (0: not read)
	idxW  []cuda.DevPtr // float32 weights (weighted indexes)
	mask  []cuda.DevPtr // by mask input: int32, 1 on kept rows (0: not read)
	bn    []*BNBuf      // by state: a batch norm's running statistics (nil otherwise)
	vals  map[int]cuda.DevPtr
	// sides are the two input buffers: every index, weight, mask and dense input of a batch,
	// each region slotAlign-aligned, uploaded by Stage in one copy from the side's host image.
	// Stage fills one side while a run reads the other (pipeline.go); cur is the side Stage
	// filled last, which Run reads.
	sides   [2]inputSide
	cur     int
	size    int // elements of an input buffer
	regions []region
	static  []cuda.DevPtr // the static values' buffers
	graphs  map[graphKey]Graph
	// states are the states the steps read, in step order (a graph's key records their
	// training switches); norms the batch-norm forward steps (a replay checks their rows).
	states []int
	norms  []*prog.Node
	slots  []cuda.DevPtr // during a run
	offs   []int         // each slot's offset in the activation arena (slotAlign elements apart)
	need   int           // the arena this program needs, in elements
	grads  cuda.DevPtr   // the gradient buffer (Plan.GradElems; 0 for none)
	// table holds the batched steps' operand addresses (Plan.TableLen; nil for none), filled
	// by Run for the arena's address before the steps are queued or captured.
	table  *cuda.PtrTable
	Result cuda.DevPtr
}

// region is a part of a program's input buffer: what it holds and where.
type region struct {
	kind   regionKind
	i      int // the index, mask or value
	off, n int // in 4-byte elements
}

type regionKind int

const (
	regIndex regionKind = iota
	regWeights
	regMask
	regInput
)

// NewProgram allocates a plan's buffers and uploads its static values. Every parameter and
// batch norm the plan reads must be on the device already (AddParam, AddBN).
func (e *Exec) NewProgram(pl *Plan, feed prog.Feed, label string) (*Program, error) {
	pg := pl.Prog
	pr := &Program{Plan: pl, Feed: feed, Label: label, idx: make([]cuda.DevPtr, len(pg.Indexes)),
		idxW: make([]cuda.DevPtr, len(pg.Indexes)), mask: make([]cuda.DevPtr, len(pg.Masks)),
		bn: make([]*BNBuf, len(pg.States)), vals: map[int]cuda.DevPtr{}}
	ok := false
	defer func() {
		if !ok {
			e.FreeProgram(pr)
		}
	}()
	alloc := func(n int, what string) (cuda.DevPtr, error) {
		p, err := e.B.Alloc(max(n, 1))
		if err != nil {
			return 0, fmt.Errorf("gpu: %s (%d elements): %w", what, n, err)
		}
		return p, nil
	}
	size := 0
	add := func(k regionKind, i, n int) {
		pr.regions = append(pr.regions, region{kind: k, i: i, off: size, n: n})
		size += (max(n, 1) + slotAlign - 1) / slotAlign * slotAlign
	}
	for i, ix := range pg.Indexes {
		if pl.IndexRows[i] < 0 {
			continue
		}
		add(regIndex, i, ix.Len)
		if ix.Weighted {
			add(regWeights, i, ix.Len)
		}
	}
	for i, m := range pg.Masks {
		if pl.Masks[i] {
			add(regMask, i, m.Len)
		}
	}
	for i, v := range pl.Vals {
		switch v.Src {
		case FromParam:
			if pb := e.Params[v.Param]; pb == nil || pb.N != v.Elems {
				return nil, fmt.Errorf("gpu: %s: parameter %q of %d values is not on the device", label, v.Param, v.Elems)
			}
		case FromInput:
			add(regInput, i, v.Elems)
		case FromStatic:
			p, err := alloc(v.Elems, v.Name)
			if err != nil {
				return nil, err
			}
			pr.vals[i] = p
			pr.static = append(pr.static, p)
			if err := e.B.UploadF32(p, v.Host); err != nil {
				return nil, fmt.Errorf("gpu: uploading %s: %w", v.Name, err)
			}
		}
	}
	pr.size = size
	if err := e.newSides(pr); err != nil {
		return nil, fmt.Errorf("gpu: %s: %w", label, err)
	}
	pr.bindSide(e.B, 0)
	var err error
	for i := range pl.Steps {
		st := &pl.Steps[i]
		s := st.Node.State
		if s >= 0 {
			pr.states = append(pr.states, s)
		}
		if st.Kind == prog.BatchNorm || st.Kind == prog.BatchNormRelu {
			pr.norms = append(pr.norms, &st.Node)
		}
		if s >= 0 && pg.States[s].Kind == prog.BNState {
			bb := e.BN[pg.States[s].Name]
			if bb == nil || bb.N != pg.States[s].Size {
				return nil, fmt.Errorf("gpu: %s: the running statistics of batch norm %q are not on the device", label, pg.States[s].Name)
			}
			pr.bn[s] = bb
		}
	}
	if pr.Result, err = alloc(1+pl.Vals[pl.Pred].Elems, "loss and prediction"); err != nil {
		return nil, err
	}
	if pl.GradElems > 0 {
		if pr.grads, err = alloc(pl.GradElems, "parameter gradients"); err != nil {
			return nil, err
		}
	}
	if pl.TableLen > 0 {
		if pr.table, err = e.B.NewPtrTable(pl.TableLen); err != nil {
			return nil, fmt.Errorf("gpu: %s: %w", label, err)
		}
	}
	pr.offs = make([]int, len(pl.Slots))
	for i, n := range pl.Slots {
		pr.offs[i] = pr.need
		pr.need += (max(n, 1) + slotAlign - 1) / slotAlign * slotAlign
	}
	ok = true
	return pr, nil
}

// slotAlign is the alignment of the slots in the activation arena, in elements: 256 bytes, as
// the driver aligns its allocations (cuBLAS and vectorised kernels rely on aligned buffers).
const slotAlign = 64

// FreeProgram frees a program's buffers and graphs.
func (e *Exec) FreeProgram(pr *Program) {
	for k, g := range pr.graphs {
		_ = g.Destroy()
		delete(pr.graphs, k)
	}
	e.freeSides(pr)
	for _, p := range append(pr.static, pr.Result, pr.grads) {
		_ = e.B.Free(p)
	}
	if pr.table != nil {
		_ = e.B.FreeTable(pr.table)
		pr.table = nil
	}
	clear(pr.idx)
	clear(pr.idxW)
	clear(pr.mask)
	pr.vals, pr.static, pr.Result, pr.grads = nil, nil, 0, 0
}

// Stage checks the program's freshly loaded feed, writes it into the host image of the input
// side the last run did not read, and queues its upload there (pipeline.go): every index,
// weight, mask and dense input in one copy.
func (e *Exec) Stage(pr *Program) error {
	k, err := e.nextSide(pr)
	if err != nil {
		return err
	}
	sd := &pr.sides[k]
	if err := pr.fillImage(sd.stage, sd.stageF); err != nil {
		return err
	}
	if err := e.B.UploadSide(sd.dev, sd.stage, sd.consumed, sd.uploaded); err != nil { // after the last run that read it
		return fmt.Errorf("gpu: uploading the batch's inputs (%s): %w", pr.Label, err)
	}
	pr.cur = k
	return nil
}

// Grow returns s resized to n values (reallocated only when its capacity is short).
func Grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// Run points the program's activation slots into the activation arena, growing it first if the
// program needs more, and queues every step (after Stage), then tail (the caller's work after
// the steps, such as the optimiser's update; nil for none). Release ends the run.
//
// With Graphs set, the first run of a program is captured as a graph (and launched), and later
// runs replay it with one launch, as long as what the capture baked in is unchanged (graphKey:
// the arena's and the step scalars' addresses, the training switches of its batch norms and
// dropout sites, whether it has a tail); otherwise the run is queued step by step. A replay
// checks what the steps would have checked on the host for this batch: the batch norms' rows.
func (e *Exec) Run(pr *Program, tail func() error) error {
	if err := e.beginRun(pr); err != nil {
		return fmt.Errorf("gpu: %s: waiting for the batch's upload: %w", pr.Label, err)
	}
	if err := e.run(pr, tail); err != nil {
		return err
	}
	if err := e.endRun(pr); err != nil {
		return fmt.Errorf("gpu: %s: %w", pr.Label, err)
	}
	return nil
}

func (e *Exec) run(pr *Program, tail func() error) error {
	pl := pr.Plan
	if err := e.reserve(pr.need, pl); err != nil {
		return err
	}
	pr.slots = pr.slots[:0]
	for _, off := range pr.offs {
		pr.slots = append(pr.slots, e.B.Offset(e.act, off))
	}
	if err := e.fillTable(pr); err != nil {
		return err
	}
	if !e.Graphs {
		return e.queue(pr, tail)
	}
	key := e.keyOf(pr, tail != nil)
	for k, g := range pr.graphs {
		if k.act != e.act { // captured on an arena that has since grown: stale
			_ = g.Destroy()
			delete(pr.graphs, k)
		}
	}
	if g := pr.graphs[key]; g != nil {
		if err := pr.checkBatchRows(); err != nil {
			return err
		}
		return g.Launch()
	}
	g, err := e.capture(pr, tail)
	if err != nil {
		var ce captureError
		if !errors.As(err, &ce) {
			return err
		}
		e.Graphs, e.GraphErr = false, err // the device cannot capture: run as before
		return e.queue(pr, tail)
	}
	if pr.graphs == nil {
		pr.graphs = map[graphKey]Graph{}
	}
	pr.graphs[key] = g
	return g.Launch()
}

// queue queues the program's steps and tail one by one.
func (e *Exec) queue(pr *Program, tail func() error) error {
	pl := pr.Plan
	for i := range pl.Steps {
		if err := e.step(pr, &pl.Steps[i]); err != nil {
			return fmt.Errorf("gpu: step %d of %d (%s), %s: %w", i, len(pl.Steps), pl.Vals[pl.Steps[i].Outs[0]].Name, pr.Label, err)
		}
	}
	if tail != nil {
		return tail()
	}
	return nil
}

// capture records the program's steps and tail as a graph. A failure of the capture itself
// (not of a step) is a captureError: nothing was run, and the run can be queued as it is.
func (e *Exec) capture(pr *Program, tail func() error) (Graph, error) {
	if err := e.B.BeginCapture(); err != nil {
		return nil, captureError{fmt.Errorf("gpu: capturing %s as a graph: %w", pr.Label, err)}
	}
	qerr := e.queue(pr, tail)
	g, err := e.B.EndCapture()
	if qerr != nil {
		if g != nil {
			_ = g.Destroy()
		}
		return nil, qerr
	}
	if err != nil {
		return nil, captureError{fmt.Errorf("gpu: capturing %s as a graph: %w", pr.Label, err)}
	}
	return g, nil
}

// captureError is a capture that failed where the run queued launch by launch would not.
type captureError struct{ error }

func (c captureError) Unwrap() error { return c.error }

// graphKey is what a captured run depends on beyond its buffers' contents.
type graphKey struct {
	act, scal cuda.DevPtr
	in        cuda.DevPtr // the input side the run reads
	modes     string      // the training switch of every state a step reads, in step order
	tail      bool
}

func (e *Exec) keyOf(pr *Program, tail bool) graphKey {
	modes := make([]byte, len(pr.states))
	for i, s := range pr.states {
		modes[i] = '0'
		if pr.Feed.Training(s) {
			modes[i] = '1'
		}
	}
	return graphKey{act: e.act, scal: e.scal, in: pr.sides[pr.cur].dev, modes: string(modes), tail: tail}
}

// checkBatchRows makes the host check of the batch norms in training mode (at least two real
// rows; dispatch makes it when it queues the step) for a replayed run.
func (pr *Program) checkBatchRows() error {
	pg := pr.Plan.Prog
	for _, nd := range pr.norms {
		if s := nd.State; pr.Feed.Training(s) {
			if err := prog.CheckBatchRows(pr.Feed.Mask(nd.Mask)); err != nil {
				return fmt.Errorf("gpu: %s: batch norm %q: %w", pr.Label, pg.States[s].Name, err)
			}
		}
	}
	return nil
}

// reserve grows the activation arena to n elements. The old arena goes back to the device
// (after the work queued on it), not to the allocator's cache, where no request of another
// size would take it.
func (e *Exec) reserve(n int, pl *Plan) error {
	if n <= e.actElems {
		return nil
	}
	if e.act != 0 {
		if err := e.B.Free(e.act); err != nil {
			return err
		}
		e.act, e.actElems = 0, 0
		if err := e.B.Trim(); err != nil {
			return fmt.Errorf("gpu: returning the activation arena: %w", err)
		}
	}
	p, err := e.B.Alloc(n)
	if err != nil {
		return fmt.Errorf("gpu: activation arena of %d MiB (%d buffers of the largest program): %w", int64(n)*4>>20, len(pl.Slots), err)
	}
	e.act, e.actElems = p, n
	return nil
}

// ArenaBytes is the activation arena the executor holds now: the largest need of the programs
// run so far (a program that needs no more runs in it without allocating).
func (e *Exec) ArenaBytes() int64 { return 4 * int64(e.actElems) }

// Release ends a run: the program's slots no longer address the arena (another program's run
// may use it).
func (e *Exec) Release(pr *Program) { pr.slots = pr.slots[:0] }

// Ptr is the device address of value v of the program (activation values during a run).
func (e *Exec) Ptr(pr *Program, v int) cuda.DevPtr {
	val := &pr.Plan.Vals[v]
	switch val.Src {
	case FromStep:
		return pr.slots[val.Slot] + cuda.DevPtr(val.SlotByte)
	case FromParam:
		return e.Params[val.Param].X
	case FromGrads:
		return e.B.Offset(pr.grads, val.Off)
	case FromResult:
		return e.B.Offset(pr.Result, val.Off)
	}
	return pr.vals[v]
}

// CopyResults makes the loss and the first n prediction values the first 1+n values of the
// program's Result buffer (read them with one Download): nothing to do where the plan put them
// there (Plan.resultBuffer), else two copies.
func (e *Exec) CopyResults(pr *Program, n int) error {
	pl := pr.Plan
	if pl.Vals[pl.Loss].Src == FromResult && pl.Vals[pl.Pred].Src == FromResult {
		return nil // the steps wrote them there (Plan.resultBuffer)
	}
	if err := e.B.Copy(pr.Result, e.Ptr(pr, pl.Loss), 1); err != nil {
		return err
	}
	return e.B.Copy(e.B.Offset(pr.Result, 1), e.Ptr(pr, pl.Pred), n)
}

// Shape returns the rows and columns of value v (a vector is one row; a scalar 1×1).
func (pl *Plan) Shape(v int) (int, int) { return pl.Vals[v].Rows, pl.Vals[v].Cols }

// step queues one step through the dispatch table (launch.go), or a step the plan fused from
// several (fused, batch.go).
func (e *Exec) step(pr *Program, st *Step) error {
	if st.Batch || st.Fills != nil || st.WithGrad {
		return e.fused(pr, st)
	}
	return table.Run(&call{e: e, b: e.B, pr: pr, st: st}, st.Kind, &st.Node)
}
