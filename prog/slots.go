package prog

import "fmt"

// Liveness planning, shared by the CPU executor (cpuexec.Runner) and the GPU plan (gpuexec): both
// describe the values a run computes by the step that writes them and the last step that reads
// them, and AssignSlots lays them out in buffers (slots) that values with disjoint lifetimes
// share. One planner, so both backends hold the same activations at their peak.

// Life is one computed value's lifetime over a sequence of steps: written by step Def, read last
// by step Last (Last ≥ Def; the number of steps for a value read after the run: an output, the
// loss, a gradient). Values share a slot only when Size and Class are equal: Size is the unit
// the caller allocates in (bytes, or elements of one type), Class what else must match (the
// element type).
type Life struct {
	Size      int64
	Class     int
	Def, Last int
	// Reuse lists values the step writing this one reads and allows it to overwrite (an
	// element-wise op computing in place): if one of them is read for the last time by that step
	// and has the same size and class, this value takes its slot.
	Reuse []int
}

// Slot is one buffer of the layout.
type Slot struct {
	Size  int64
	Class int
}

// Layout is the result of AssignSlots: Of[i] is value i's slot; Took[i] is the value whose slot
// value i took over in place (-1: none).
type Layout struct {
	Of    []int
	Took  []int
	Slots []Slot
}

// Total is the sum of the slots' sizes: the layout's memory in the caller's unit.
func (l Layout) Total() int64 {
	var n int64
	for _, s := range l.Slots {
		n += s.Size
	}
	return n
}

// AssignSlots lays out the values of a run of steps steps. Going through the steps in order,
// the values a step writes take the slot of a value they may overwrite in place (Life.Reuse)
// whose last reader is this step, or else free slots of their size and class (the most recently
// freed first, so the layout is deterministic), then the values whose last reader the step is
// give theirs back: a step writes a buffer it reads only where its op allows it, and a value's
// slot is not reused while it may still be read.
func AssignSlots(lives []Life, steps int) (Layout, error) {
	starts := make([][]int, steps+1)
	ends := make([][]int, steps+1)
	for i, v := range lives {
		if v.Def < 0 || v.Def >= steps || v.Last < v.Def || v.Last > steps {
			return Layout{}, fmt.Errorf("slots: value %d lives from step %d to %d of %d", i, v.Def, v.Last, steps)
		}
		starts[v.Def] = append(starts[v.Def], i)
		ends[v.Last] = append(ends[v.Last], i)
	}
	l := Layout{Of: make([]int, len(lives)), Took: make([]int, len(lives))}
	for i := range l.Took {
		l.Took[i] = -1
	}
	handed := map[int]bool{} // values whose slot another took over in place
	free := map[Slot][]int{}
	for s := 0; s <= steps; s++ {
		for _, i := range starts[s] {
			k := Slot{Size: lives[i].Size, Class: lives[i].Class}
			if c := reusable(lives, i, s, handed); c >= 0 {
				l.Of[i], l.Took[i] = l.Of[c], c
				handed[c] = true
				continue
			}
			if f := free[k]; len(f) > 0 {
				l.Of[i] = f[len(f)-1]
				free[k] = f[:len(f)-1]
				continue
			}
			l.Of[i] = len(l.Slots)
			l.Slots = append(l.Slots, k)
		}
		for _, i := range ends[s] {
			if handed[i] {
				continue // its slot lives on as the value that took it
			}
			k := Slot{Size: lives[i].Size, Class: lives[i].Class}
			free[k] = append(free[k], l.Of[i])
		}
	}
	return l, nil
}

// reusable returns the first of value i's Reuse candidates it can overwrite at step s: read
// last by step s (so written before it), of i's size and class, not yet taken over; -1 if none.
func reusable(lives []Life, i, s int, handed map[int]bool) int {
	for _, c := range lives[i].Reuse {
		if c >= 0 && c < len(lives) && c != i && !handed[c] && lives[c].Last == s && lives[c].Def < s &&
			lives[c].Size == lives[i].Size && lives[c].Class == lives[i].Class {
			return c
		}
	}
	return -1
}

// Peak returns the largest total size of the values live at once (at a step, those it writes
// and those still to be read): a lower bound of Layout.Total for any layout of these values.
func Peak(lives []Life, steps int) int64 {
	delta := make([]int64, steps+2)
	for _, v := range lives {
		delta[v.Def] += v.Size
		delta[v.Last+1] -= v.Size
	}
	var cur, peak int64
	for _, d := range delta {
		cur += d
		peak = max(peak, cur)
	}
	return peak
}
