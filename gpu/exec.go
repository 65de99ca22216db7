package gpu

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/cuda"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/prog"
	"gorgonia.org/tensor"
)

// program is a Plan with its device buffers: the index, mask and dense-input buffers it
// uploads per batch from its feed, its static values (uploaded once), the batch-norm
// statistics of its states and, during a run, its activation slots.
type program struct {
	plan   *Plan
	feed   prog.Feed
	in     *nn.Inputs    // the holders the feed reads (the trainer loads batches into them)
	idx    []cuda.DevPtr // by index input: int32 entries (0: not read)
	idxW   []cuda.DevPtr // float32 weights (weighted indexes)
	mask   []cuda.DevPtr // by mask input: int32, 1 on kept rows (0: not read)
	bn     []*bnBuf      // by state: a batch norm's running statistics (nil otherwise)
	vals   map[int]cuda.DevPtr
	slots  []cuda.DevPtr // during a run
	result cuda.DevPtr   // loss, then the prediction
	wbuf   []float32
	kbuf   []int32
}

// stage checks the program's freshly loaded host inputs and queues their upload.
func (t *Trainer) stage(pr *program) error {
	pl := pr.plan
	for i, ix := range pl.Prog.Indexes {
		if pl.IndexRows[i] < 0 {
			continue
		}
		idx, w := pr.feed.Index(i)
		if err := ix.Check(idx, w, pl.IndexRows[i]); err != nil {
			return fmt.Errorf("gpu: %w", err)
		}
		if err := t.b.UploadI32(pr.idx[i], idx); err != nil {
			return fmt.Errorf("gpu: uploading index %q: %w", ix.Name, err)
		}
		if ix.Weighted {
			pr.wbuf = growF(pr.wbuf, len(w))
			for j, x := range w {
				pr.wbuf[j] = float32(x)
			}
			if err := t.b.UploadF32(pr.idxW[i], pr.wbuf); err != nil {
				return fmt.Errorf("gpu: uploading the weights of index %q: %w", ix.Name, err)
			}
		}
	}
	for i, m := range pl.Prog.Masks {
		if !pl.Masks[i] {
			continue
		}
		keep := pr.feed.Mask(i)
		if cap(pr.kbuf) < len(keep) {
			pr.kbuf = make([]int32, len(keep))
		}
		kb := pr.kbuf[:len(keep)]
		for j, k := range keep {
			kb[j] = 0
			if k {
				kb[j] = 1
			}
		}
		if err := t.b.UploadI32(pr.mask[i], kb); err != nil {
			return fmt.Errorf("gpu: uploading mask %q: %w", m.Name, err)
		}
	}
	for i, v := range pl.Vals {
		if v.Src == FromInput {
			xs, ok := pr.feed.Input(i).([]float32)
			if !ok || len(xs) != v.Elems {
				return fmt.Errorf("gpu: input %s: want %d float32 values", v.Name, v.Elems)
			}
			if err := t.b.UploadF32(pr.vals[i], xs); err != nil {
				return fmt.Errorf("gpu: uploading input %s: %w", v.Name, err)
			}
		}
	}
	return nil
}

func growF(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// run queues every step of the program (after stage); the caller frees the slots with
// release once the results are read.
func (t *Trainer) run(pr *program) error {
	pl := pr.plan
	if cap(pr.slots) < len(pl.Slots) {
		pr.slots = make([]cuda.DevPtr, len(pl.Slots))
	}
	pr.slots = pr.slots[:len(pl.Slots)]
	clear(pr.slots)
	for i, n := range pl.Slots {
		p, err := t.b.Alloc(n)
		if err != nil {
			t.release(pr)
			return fmt.Errorf("gpu: activation buffer %d of %d (%d elements; %d MiB for the bucket's %d buffers): %w",
				i, len(pl.Slots), n, pl.Bytes()>>20, len(pl.Slots), err)
		}
		pr.slots[i] = p
	}
	for i := range pl.Steps {
		if err := t.step(pr, &pl.Steps[i]); err != nil {
			return fmt.Errorf("gpu: step %d of %d (%s), bucket %v: %w", i, len(pl.Steps), pl.Vals[pl.Steps[i].Outs[0]].Name, pr.in.B, err)
		}
	}
	return nil
}

func (t *Trainer) release(pr *program) {
	for i, p := range pr.slots {
		if p != 0 {
			_ = t.b.Free(p)
		}
		pr.slots[i] = 0
	}
	pr.slots = pr.slots[:0]
}

// ptr is the device address of value v.
func (t *Trainer) ptr(pr *program, v int) cuda.DevPtr {
	val := &pr.plan.Vals[v]
	switch val.Src {
	case FromStep:
		return pr.slots[val.Slot]
	case FromParam:
		return t.params[val.Param].x
	}
	return pr.vals[v]
}

// shape returns the rows and columns of value v (a vector is one row; a scalar 1×1).
func shape(pl *Plan, v int) (int, int) { return pl.Vals[v].Rows, pl.Vals[v].Cols }

// step queues one step through the launch table.
func (t *Trainer) step(pr *program, st *Step) error {
	f := launches[st.Kind]
	if f == nil {
		return fmt.Errorf("no device kernel for %s", st.Kind)
	}
	return f(&call{t: t, b: t.b, pr: pr, st: st, in: primary(st)})
}

// hostFloat32 returns a float32 tensor's values or an error naming it.
func hostFloat32(name string, t *tensor.Dense) ([]float32, error) {
	if t.Dtype() != tensor.Float32 {
		return nil, fmt.Errorf("gpu: %s is %v, want float32", name, t.Dtype())
	}
	return t.Float32s(), nil
}
