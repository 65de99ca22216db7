package gpuexec

import (
	"fmt"
	"slices"

	"github.com/rewiregnn/rewiregnn/prog"
)

// Batched steps (Step.Batch): steps of one kind and shape that one batched launch computes
// together, its operands' addresses in the program's pointer table (Plan.TableLen). GatedGCN
// multiplies each layer's node states by four weights (A, B, D, E), then, backward, computes
// the four weights' gradients and the four biases' gradients: three groups of four launches,
// each one launch batched.
//
//   - Products x·W_k of one input by parameters of one shape, written to activation slots:
//     one step at the place of the first (its inputs exist there already).
//   - Weight gradients xᵀ·g_k of one input, of one shape, into the gradient buffer: one step
//     at the place of the last (every g_k exists there).
//   - The column sums of those g_k into the gradient buffer (their biases' gradients): one
//     step at the place of the last of them.
//
// A member moves only if no step between its place and the group's writes what it reads
// (values written twice: the gradient sums that products add into), and its output is read
// by no step before the group's place. Members keep their order.

// tableLists is the number of operand lists a batched step of kind o reads from the pointer
// table: x, w, out for a product; x, g, dw for a weight gradient; x, out for column sums.
func tableLists(o prog.Op) int {
	if o == prog.ColSum {
		return 2
	}
	return 3
}

// batchSteps groups the steps it can into batched steps and lays out the pointer table.
func (pl *Plan) batchSteps() {
	pl.batchAll(pl.productKey, true, nil)
	var gs [][]int // the g_k of each weight-gradient group: their column sums group by them
	pl.batchAll(pl.gradWKey, false, func(g []int) {
		var xs []int
		for _, si := range g {
			xs = append(xs, pl.Steps[si].Ins[0][1])
		}
		gs = append(gs, xs)
	})
	pl.batchAll(func(readers map[int][]int) func(int) (batchKey, bool) { return pl.colSumKey(readers, gs) }, false, nil)
}

// layoutTable gives each batched step and each fill step its entries in the pointer table.
func (pl *Plan) layoutTable() {
	pl.TableLen = 0
	for si := range pl.Steps {
		st := &pl.Steps[si]
		switch {
		case st.Fills != nil:
			st.Table = pl.TableLen
			pl.TableLen += 3 * len(st.Fills)
		case st.Batch:
			st.Table = pl.TableLen
			pl.TableLen += tableLists(st.Kind) * len(st.Ins)
		}
	}
}

// batchAll merges the first group that key finds into one batched step, at the place of its
// first member (first) or its last, and again until it finds none; seen, if not nil, sees
// each group before it merges.
func (pl *Plan) batchAll(key func(readers map[int][]int) func(si int) (batchKey, bool), first bool, seen func(g []int)) {
	for {
		g, to, ok := pl.firstGroup(key(pl.readers()), first)
		if !ok {
			return
		}
		if seen != nil {
			seen(g)
		}
		pl.merge(g, to)
		pl.redefine()
	}
}

// batchKey is what a step's group is keyed by; ok false where the step joins no group.
type batchKey struct {
	kind       prog.Op
	x          int // the shared input (a product's x) or the group (column sums)
	rows, a, b int
}

// productKey keys a forward product x·W (W a parameter, no fused bias) whose output is an
// activation.
func (pl *Plan) productKey(readers map[int][]int) func(si int) (batchKey, bool) {
	return func(si int) (batchKey, bool) {
		st := &pl.Steps[si]
		if st.Kind != prog.MatMul || !pl.plain(st) || len(st.Ins[0]) != 2 || pl.Vals[st.Ins[0][1]].Src != FromParam || pl.Vals[st.Outs[0]].Src != FromStep {
			return batchKey{}, false
		}
		x, w := st.Ins[0][0], st.Ins[0][1]
		return batchKey{prog.MatMul, x, pl.Vals[x].Rows, pl.Vals[w].Rows, pl.Vals[w].Cols}, true
	}
}

// gradWKey keys a weight gradient xᵀ·g written to the gradient buffer and read by no step.
func (pl *Plan) gradWKey(readers map[int][]int) func(si int) (batchKey, bool) {
	return func(si int) (batchKey, bool) {
		st := &pl.Steps[si]
		if st.Kind != prog.MatMulGradW || !pl.plain(st) || len(st.Ins[0]) != 2 || !pl.gradOut(st, readers) {
			return batchKey{}, false
		}
		x, g := st.Ins[0][0], st.Ins[0][1]
		return batchKey{prog.MatMulGradW, x, pl.Vals[x].Rows, pl.Vals[x].Cols, pl.Vals[g].Cols}, true
	}
}

// colSumKey keys a column sum written to the gradient buffer, read by no step, whose input is
// a g of weight-gradient group k (dwGroups[k]).
func (pl *Plan) colSumKey(readers map[int][]int, dwGroups [][]int) func(si int) (batchKey, bool) {
	return func(si int) (batchKey, bool) {
		st := &pl.Steps[si]
		if st.Kind != prog.ColSum || !pl.plain(st) || len(st.Ins[0]) != 1 || !pl.gradOut(st, readers) {
			return batchKey{}, false
		}
		x := st.Ins[0][0]
		for k, gs := range dwGroups {
			if slices.Contains(gs, x) {
				return batchKey{prog.ColSum, k, pl.Vals[x].Rows, pl.Vals[x].Cols, 0}, true
			}
		}
		return batchKey{}, false
	}
}

// plain reports whether st is a single-member step that neither accumulates nor carries folded
// biases, and is not batched yet.
func (pl *Plan) plain(st *Step) bool {
	return len(st.Ins) == 1 && len(st.Outs) == 1 && !st.Acc && st.Bias == nil && !st.Batch
}

// gradOut reports whether st writes one value of the gradient buffer that no step reads.
func (pl *Plan) gradOut(st *Step, readers map[int][]int) bool {
	o := st.Outs[0]
	return pl.Vals[o].Src == FromGrads && len(readers[o]) == 0
}

// firstGroup returns the first group (by its first member) of two or more steps with equal
// keys, in step order, whose members can all move to the group's place: the first member's
// (first) or the last's, which it returns too.
func (pl *Plan) firstGroup(key func(si int) (batchKey, bool), first bool) ([]int, int, bool) {
	byKey := map[batchKey][]int{}
	var order []batchKey
	for si := range pl.Steps {
		k, ok := key(si)
		if !ok {
			continue
		}
		if byKey[k] == nil {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], si)
	}
	for _, k := range order {
		g := byKey[k]
		to := g[len(g)-1]
		if first {
			to = g[0]
		}
		g = slices.DeleteFunc(g, func(si int) bool { return !pl.movable(si, to) })
		if len(g) >= 2 {
			return g, to, true
		}
	}
	return nil, 0, false
}

// movable reports whether step si can run at place to instead: no step between them writes
// what it reads, and, moving earlier, no step between them reads what it writes.
func (pl *Plan) movable(si, to int) bool {
	lo, hi := min(si, to), max(si, to)
	st := &pl.Steps[si]
	for j := lo; j <= hi; j++ {
		if j == si {
			continue
		}
		o := &pl.Steps[j]
		for _, v := range st.Ins[0] {
			if slices.Contains(o.Outs, v) {
				return false
			}
		}
		if to < si && slices.ContainsFunc(st.Outs, func(v int) bool { return slices.Contains(slices.Concat(o.Ins...), v) }) {
			return false
		}
	}
	return true
}

// merge makes the steps g (in step order) one batched step at place to (a member of g), its
// members in the order of g, and deletes the others.
func (pl *Plan) merge(g []int, to int) {
	b := Step{Kind: pl.Steps[to].Kind, Node: pl.Steps[to].Node, Batch: true}
	for _, si := range g {
		b.Ins = append(b.Ins, pl.Steps[si].Ins[0])
		b.Outs = append(b.Outs, pl.Steps[si].Outs[0])
	}
	pl.Steps[to] = b
	del := slices.DeleteFunc(slices.Clone(g), func(si int) bool { return si == to })
	slices.Sort(del)
	for i := len(del) - 1; i >= 0; i-- {
		pl.Steps = slices.Delete(pl.Steps, del[i], del[i]+1)
	}
}

// fillTable sets the pointer table's entries to the addresses of the batched steps' operands
// and the fill steps' buffers in this run (the activation arena may have moved since the last)
// and queues its upload if they changed: before the steps are queued or captured, since a
// capture takes no uploads. Each batched step's lists follow one another from its entry:
// member by member, its inputs, then its outputs (tableLists); a fill step's fills are three
// entries each: address, words, bits.
func (e *Exec) fillTable(pr *Program) error {
	if pr.table == nil {
		return nil
	}
	pl := pr.Plan
	for si := range pl.Steps {
		st := &pl.Steps[si]
		if st.Fills != nil {
			for i, v := range st.Outs {
				pr.table.Set(st.Table+3*i, e.Ptr(pr, v))
				pr.table.SetWord(st.Table+3*i+1, uint64(max(pl.Vals[v].Elems, 0)))
				pr.table.SetWord(st.Table+3*i+2, uint64(st.Fills[i]))
			}
			continue
		}
		if !st.Batch {
			continue
		}
		n := len(st.Ins)
		for w, ins := range st.Ins {
			for l, v := range append(slices.Clip(ins), st.Outs[w]) {
				pr.table.Set(st.Table+l*n+w, e.Ptr(pr, v))
			}
		}
	}
	if err := e.B.UploadTable(pr.table); err != nil {
		return fmt.Errorf("gpu: %s: %w", pr.Label, err)
	}
	return nil
}

// fused queues a step the plan made of several, with one launch: a batched step, a fill
// step, or an element-wise loss (L1, BCE) with its gradient.
func (e *Exec) fused(pr *Program, st *Step) error {
	switch {
	case st.Fills != nil:
		return e.B.FillBatch(pr.table, st.Table, len(st.Fills))
	case st.WithGrad: // (p, y, w) and (p, y, w, g)
		in, n := st.Ins[1], pr.Plan.Vals[st.Outs[1]].Elems
		return lossFolds[st.Kind].both(e.B, e.Ptr(pr, st.Outs[0]), e.Ptr(pr, st.Outs[1]), e.Ptr(pr, in[0]), e.Ptr(pr, in[1]),
			e.Ptr(pr, in[2]), e.Ptr(pr, in[3]), n)
	}
	pl, n := pr.Plan, len(st.Ins)
	in := st.Ins[0]
	switch st.Kind {
	case prog.MatMul: // (x [m, a], w [a, b])
		m, a := pl.Shape(in[0])
		_, b := pl.Shape(in[1])
		return e.B.MatMulBatch(pr.table, st.Table, n, m, a, b)
	case prog.MatMulGradW: // (x [m, a], g [m, b])
		m, a := pl.Shape(in[0])
		_, b := pl.Shape(in[1])
		return e.B.MatMulGradWBatch(pr.table, st.Table, n, m, a, b)
	case prog.ColSum: // (x [rows, d])
		rows, d := pl.Shape(in[0])
		return e.B.ColSumBatch(pr.table, st.Table, n, rows, d)
	}
	return fmt.Errorf("gpu: no batched launch for %s", st.Kind)
}
