package cpuexec

import (
	"github.com/rewiregnn/rewiregnn/kern"
	"github.com/rewiregnn/rewiregnn/prog"
)

// Arena is activation memory shared by runners that never run at the same time (the training
// and evaluation nets of every shape bucket of one trainer): each lays its slots out from the
// start of the arena's buffer of each element type, and their product gradients share one
// scratch. The memory of all of them is then the largest one's plan, not the sum. A runner's
// results (the loss, prediction, gradients) stay valid only until another runner of the arena
// runs.
type Arena struct {
	f32     []float32
	f64     []float64
	gen     int // counts reallocations: a runner cuts its slots again when it changed
	scratch kern.Scratch
}

// Reserve grows the arena to hold at least f32 float32 and f64 float64 values (a runner that
// needs more grows it when it runs; reserving the largest need first avoids holding the older,
// smaller buffers until every runner has run again).
func (a *Arena) Reserve(f32, f64 int64) {
	if int64(len(a.f32)) < f32 {
		a.f32 = make([]float32, f32)
		a.gen++
	}
	if int64(len(a.f64)) < f64 {
		a.f64 = make([]float64, f64)
		a.gen++
	}
}

// slotElems returns the float32 and float64 values of a layout's slots.
func slotElems(l prog.Layout) (f32, f64 int64) {
	for _, s := range l.Slots {
		if s.Class == 1 {
			f64 += s.Size
		} else {
			f32 += s.Size
		}
	}
	return f32, f64
}

// cutSlots cuts a layout's slots from the arena, consecutively from the start of the buffer of
// their element type, growing it first where it is too small.
func cutSlots(a *Arena, l prog.Layout) []any {
	a.Reserve(slotElems(l))
	out := make([]any, len(l.Slots))
	var o32, o64 int64
	for i, s := range l.Slots {
		if s.Class == 1 {
			out[i] = a.f64[o64 : o64+s.Size : o64+s.Size]
			o64 += s.Size
		} else {
			out[i] = a.f32[o32 : o32+s.Size : o32+s.Size]
			o32 += s.Size
		}
	}
	return out
}

// SetArena makes the runner take its slots and the products' scratch from a (call it before
// the first Run). Its results stay valid only until another user of the arena runs.
// A nil arena gives the runner its own slots and scratch again.
func (r *Runner) SetArena(a *Arena) {
	r.arena, r.slots, r.scratch = a, nil, &kern.Scratch{}
	if a != nil {
		r.scratch = &a.scratch
	}
}

// SlotElems returns the float32 and float64 values of the runner's slots: what it needs of an
// arena.
func (r *Runner) SlotElems() (f32, f64 int64) { return slotElems(r.layout) }
