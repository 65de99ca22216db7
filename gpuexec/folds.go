package gpuexec

// Folds of GatedGCN's remaining launches into the steps around them (besides foldSums and
// foldBiases in plan.go): a batch norm's statistics into its input's producer, the L1 loss's
// gradient into the loss, the gated division into its readers. Each gives the bits of the
// launches it removes.

import (
	"slices"

	"github.com/rewiregnn/rewiregnn/cuda"
	"github.com/rewiregnn/rewiregnn/prog"
)

// FoldedStats are the training statistics of a batch norm that the producer of its input takes
// in its own pass (foldStats): the batch norm's state (its running statistics and training
// switch), its mask of kept rows, and its mean and 1/σ buffers (the batch norm's Aux 0 and 1).
type FoldedStats struct {
	State, Mask  int
	Mean, InvStd int
}

// foldStats moves a training batch norm's statistics pass into the step that computes its
// input, when that step is an edge sum or a two-operand addition (GatedGCN's ê and its residual
// sum A h + aggregate): the producer stores its values and takes their statistics in one pass
// (cuda EdgeSumBiasedStats, AddBiasedDivStats; the bits of the two passes), and the batch norm
// only normalises (Step.StatsDone). In evaluation the producer runs as it did and the batch
// norm reads its running statistics.
func (pl *Plan) foldStats() {
	writers := map[int]int{}
	for _, st := range pl.Steps {
		for _, o := range st.Outs {
			writers[o]++
		}
	}
	for bi := range pl.Steps {
		b := &pl.Steps[bi]
		if (b.Kind != prog.BatchNorm && b.Kind != prog.BatchNormRelu) || b.StatsDone || b.Batch || len(b.Aux) < 2 {
			continue
		}
		nd := &b.Node
		if nd.State < 0 || pl.Prog.States[nd.State].Kind != prog.BNState || nd.Mask < 0 {
			continue
		}
		x := b.Ins[0][0]
		v := &pl.Vals[x]
		if v.Src != FromStep || v.Def < 0 || v.Def >= bi || writers[x] != 1 {
			continue
		}
		p := &pl.Steps[v.Def]
		if !pl.statsProducer(p, x) {
			continue
		}
		p.Stats = &FoldedStats{State: nd.State, Mask: nd.Mask, Mean: b.Aux[0], InvStd: b.Aux[1]}
		p.Aux = append(slices.Clip(p.Aux), b.Aux[0], b.Aux[1])
		b.StatsDone = true
	}
	pl.redefine()
}

// statsProducer reports whether step p, which writes x, can take a batch norm's statistics of
// x in its pass: a single edge sum, or an element-wise addition of two operands of x's shape.
func (pl *Plan) statsProducer(p *Step, x int) bool {
	if p.Stats != nil || p.Acc || p.Batch || p.Fills != nil || len(p.Ins) != 1 || len(p.Outs) != 1 || p.Outs[0] != x || len(p.Aux) != 0 {
		return false
	}
	switch p.Kind {
	case prog.EdgeSum:
		return true
	case prog.Add:
		out := pl.Vals[x]
		a, b := pl.Vals[p.Ins[0][0]], pl.Vals[p.Ins[0][1]]
		return out.Elems > 1 && a.Elems == out.Elems && b.Elems == out.Elems && out.Rows > 0
	}
	return false
}

// foldLossGrad runs an element-wise loss (L1, BCE) and its gradient, the step right after it
// reading the same predictions, targets and weights, as one launch (cuda MaskedL1WithGrad,
// MaskedBCEWithGrad: the bits of both): the loss step gets the gradient as its second member
// (Step.WithGrad).
func (pl *Plan) foldLossGrad() {
	for li := 0; li+1 < len(pl.Steps); li++ {
		l, g := &pl.Steps[li], &pl.Steps[li+1]
		want, ok := LossGrad(l.Kind)
		if !ok || g.Kind != want || len(l.Ins) != 1 || len(g.Ins) != 1 || l.WithGrad || l.Batch || g.Batch {
			continue
		}
		li3, gi := l.Ins[0], g.Ins[0]
		if len(li3) != 3 || len(gi) != 4 || !slices.Equal(li3, gi[:3]) || slices.Contains(gi, l.Outs[0]) {
			continue
		}
		l.Ins = append(l.Ins, gi)
		l.Outs = append(l.Outs, g.Outs[0])
		l.WithGrad = true
		pl.Steps = slices.Delete(pl.Steps, li+1, li+2)
	}
	pl.redefine()
}

// foldEdgeScatter runs the edge sum's gradient (its output gradient dê scattered along src and
// along dst: scatter_add_pair, one more pass over dê) inside the gated aggregation gradient's
// pass that writes dê's last term, when that step comes right before it, computes the dê it
// reads, and both use the same src and dst: GatedGCN's ê = Ce + Dh_src + Eh_dst is read by the
// gated aggregation (and its batch norm), so the gated aggregation's gradient finishes dê
// (cuda GatedBufs.DSrc, DDst). Each gradient buffer receives its additions in the order the
// scatter pass gave them (the same grid over dê's elements).
func (pl *Plan) foldEdgeScatter() {
	for gi := 0; gi+1 < len(pl.Steps); gi++ {
		g, s := &pl.Steps[gi], &pl.Steps[gi+1]
		if g.Kind != prog.GatedAggregateGrad || s.Kind != prog.EdgeSumGrad || g.Batch || s.Batch || g.Scatter || s.Acc || len(g.Outs) != 2 || len(s.Outs) != 2 {
			continue
		}
		if in := primary(s); len(in) != 1 || in[0] != g.Outs[0] || g.Outs[0] < 0 {
			continue
		}
		if s.Node.Src != g.Node.Src || s.Node.Dst != g.Node.Dst || slices.Contains(s.Outs, -1) {
			continue
		}
		g.Ins = append(g.Ins, s.Ins...)
		g.Outs = append(g.Outs, s.Outs...)
		g.Scatter = true
		pl.Steps = slices.Delete(pl.Steps, gi+1, gi+2)
	}
	pl.redefine()
}

// FoldedBN is the batch norm whose dx a gated aggregation's gradient step computes as dê's
// first term (foldBNDx): the inputs of the batch norm's gradient (x, γ, β, dy), its forward
// pass's mean and 1/σ, the column sums its gradient step leaves (Tot), its state (for the
// training switch) and mask, and whether a ReLU follows it.
type FoldedBN struct {
	X, Gamma, Beta, Dy int
	Mean, InvStd, Tot  int
	State, Mask        int
	Relu               bool
}

// foldBNDx moves a batch norm's dx pass (bn_backward_dx, or the dx that bn_backward writes on
// one row chunk) into the gated aggregation gradient that adds its own term into that dx
// (Step.Acc): GatedGCN's ê is read by the edges' batch norm and by the gated aggregation, so
// dê = the batch norm's dx + the gated term. The batch norm's gradient step then writes its
// column sums (SumsOnly: a temporary of cuda.TotElems in dx's place) and the gated gradient
// computes the dx element where it adds to it (cuda GatedBufs.BN): the same float operations,
// so the same bits, without storing dx and reading it back. It folds only where the two steps
// are the only writers of dê and no step between them reads it. The gated step's Aux gains
// what it reads for that (x, dy, the mean, 1/σ and the sums), so they live until it runs.
func (pl *Plan) foldBNDx() {
	writers := map[int][]int{}
	for si, st := range pl.Steps {
		for _, o := range st.Outs {
			writers[o] = append(writers[o], si)
		}
	}
	readers := pl.readers()
	for gi := range pl.Steps {
		g := &pl.Steps[gi]
		if g.Kind != prog.GatedAggregateGrad || !g.Acc || g.Batch || g.BN != nil {
			continue
		}
		de := g.Outs[0]
		w := writers[de]
		if len(w) != 2 || w[1] != gi {
			continue
		}
		bi := w[0]
		b := &pl.Steps[bi]
		if (b.Kind != prog.BatchNormGrad && b.Kind != prog.BatchNormReluGrad) || b.Batch || b.SumsOnly || b.Outs[0] != de || len(b.Ins) == 0 || len(b.Ins[0]) != 4 || len(b.Aux) < 2 {
			continue
		}
		if slices.ContainsFunc(readers[de], func(r int) bool { return r > bi && r < gi }) {
			continue
		}
		in := b.Ins[0] // (x, γ, β, dy)
		tot := pl.addVal(Value{Name: "column sums of " + pl.Vals[de].Name, Elems: cuda.TotElems(pl.Vals[de].Cols)})
		// The batch norm's step writes the sums in dx's place (its member 0), and its dγ and
		// dβ members, which name dx as copied from it, name the sums; dê is written first by
		// the gated gradient.
		b.Outs[0] = tot
		for w := 1; w < len(b.Ins); w++ {
			b.Ins[w] = slices.Clone(b.Ins[w]) // the program node's own inputs otherwise
			for i, v := range b.Ins[w] {
				if v == de {
					b.Ins[w][i] = tot
				}
			}
		}
		b.SumsOnly = true
		g.BN = &FoldedBN{X: in[0], Gamma: in[1], Beta: in[2], Dy: in[3], Mean: b.Aux[0], InvStd: b.Aux[1], Tot: tot,
			State: b.Node.State, Mask: b.Node.Mask, Relu: b.Kind == prog.BatchNormReluGrad}
		g.Acc = false
		g.Aux = append(slices.Clip(g.Aux), in[0], in[3], b.Aux[0], b.Aux[1], tot)
	}
	pl.redefine()
}

// FoldedGate is the gated aggregation that an edge sum step computes in its pass (foldGate):
// its gated values Bh (and Bh's folded bias, -1 for none), its undivided sums Out and its
// denominators Den (the gated step's output and Aux 0), and the rows of Bh and of Out.
type FoldedGate struct {
	Bh, BhBias, Out, Den int
	NBh, Nodes           int
}

// foldGate moves a gated aggregation's pass over ê (gated_edges: σ(ê) and both sums) into the
// edge sum step that computes ê (GatedGCN's Ce + Dh_src + Eh_dst, gated along the same src and
// dst): the edge sum adds each element into the sums as it stores it (cuda.EdgeGate), which
// saves the gated step's read of ê and its launch. It folds a gated step only where nothing is
// left of it: its sums were filled by a fill step (Prefilled) and are divided by their readers
// (Raw). Bh and its bias must be computed before the edge sum, and no step between the two may
// touch the sums. The edge sum's Aux gains Bh, its bias, the sums and the denominators, so they
// live until it runs. In evaluation (edge_sum) the sums get gated_edges's additions in its
// order, so the same bits on the emulator's deterministic schedule; in training
// (edge_sum_stats) they come in the statistics grid's order, so they may differ in the last
// bits from the launch they replace there (as any two runs' do on a GPU).
func (pl *Plan) foldGate() {
	for gi := len(pl.Steps) - 1; gi >= 0; gi-- {
		g := &pl.Steps[gi]
		if g.Kind != prog.GatedAggregate || g.Batch || !g.Raw || !g.Prefilled || len(g.Ins) != 1 || len(g.Ins[0]) != 2 || len(g.Aux) != 1 {
			continue
		}
		ehat, bh := g.Ins[0][0], g.Ins[0][1]
		e := &pl.Vals[ehat]
		if e.Src != FromStep || e.Def < 0 || e.Def >= gi {
			continue
		}
		pi := e.Def
		p := &pl.Steps[pi]
		if p.Kind != prog.EdgeSum || p.Batch || p.Acc || p.Gate != nil || len(p.Outs) != 1 || p.Outs[0] != ehat ||
			p.Node.Src != g.Node.Src || p.Node.Dst != g.Node.Dst {
			continue
		}
		f := FoldedGate{Bh: bh, BhBias: -1, Out: g.Outs[0], Den: g.Aux[0], NBh: pl.Vals[bh].Rows, Nodes: g.Node.Rows}
		if g.Bias != nil {
			f.BhBias = g.Bias[1]
		}
		if !pl.computedBefore(pi, bh, f.BhBias) || pl.touched(pi+1, gi, f.Out, f.Den) {
			continue
		}
		p.Gate = &f
		p.Aux = append(slices.Clip(p.Aux), bh, f.Out, f.Den)
		if f.BhBias >= 0 {
			p.Aux = append(p.Aux, f.BhBias)
		}
		pl.Steps = slices.Delete(pl.Steps, gi, gi+1)
	}
	pl.redefine()
}

// computedBefore reports whether each of the values vs (-1: none) is available when step si
// runs: not computed by a step, or computed by an earlier one.
func (pl *Plan) computedBefore(si int, vs ...int) bool {
	for _, v := range vs {
		if v < 0 {
			continue
		}
		switch pl.Vals[v].Src {
		case FromStep, FromGrads, FromResult:
			if pl.Vals[v].Def < 0 || pl.Vals[v].Def >= si {
				return false
			}
		}
	}
	return true
}

// touched reports whether a step in [from, to) reads or writes one of the values vs.
func (pl *Plan) touched(from, to int, vs ...int) bool {
	for si := from; si < to; si++ {
		st := &pl.Steps[si]
		for _, list := range [][]int{slices.Concat(st.Ins...), st.Outs, st.Aux, st.Bias, st.Div} {
			if slices.ContainsFunc(list, func(v int) bool { return slices.Contains(vs, v) }) {
				return true
			}
		}
	}
	return false
}

// lossFolds are the element-wise losses foldLossGrad can run with their gradient in one launch:
// each loss kind's gradient kind and the backend's fused launch.
var lossFolds = map[prog.Op]struct {
	grad prog.Op
	both func(b Backend, out, dp, p, y, w, g cuda.DevPtr, n int) error
}{
	prog.MaskedL1:  {prog.MaskedL1Grad, Backend.MaskedL1WithGrad},
	prog.MaskedBCE: {prog.MaskedBCEGrad, Backend.MaskedBCEWithGrad},
}

// LossGrad returns the gradient kind of an element-wise loss that foldLossGrad can run with its
// gradient in one launch, and false for any other kind.
func LossGrad(k prog.Op) (prog.Op, bool) {
	f, ok := lossFolds[k]
	if !ok {
		return prog.Invalid, false
	}
	return f.grad, true
}

// foldDivs folds the gated aggregation's division (its sums by its denominators, gated_div:
// one pass over a node-sized matrix) into the steps that read the quotients: GatedGCN's
// residual sum h = A h + aggregate divides its operand as it adds (add_biased with a divisor),
// and the aggregation's gradient divides where it reads the quotient (Step.Raw). The bits are
// the division's. A gated aggregation whose output the host reads, or a step other than those
// reads, keeps its division.
func (pl *Plan) foldDivs() {
	outs := map[int]bool{}
	for _, v := range pl.Prog.Outputs() {
		outs[v] = true
	}
	readers := pl.readers()
	for gi := range pl.Steps {
		g := &pl.Steps[gi]
		o := g.Outs[0]
		if g.Kind != prog.GatedAggregate || g.Raw || g.Batch || outs[o] || pl.Vals[o].Src != FromStep || len(readers[o]) == 0 {
			continue
		}
		if slices.ContainsFunc(readers[o], func(r int) bool { return !pl.readsRaw(&pl.Steps[r], g, o) }) {
			continue
		}
		g.Raw = true
		for _, r := range readers[o] {
			st := &pl.Steps[r]
			if st.Kind == prog.GatedAggregateGrad {
				st.Raw = true
				continue
			}
			if st.Ins[0][0] == o { // the divided operand goes second: a + b is b + a, bit for bit
				st.Ins[0][0], st.Ins[0][1] = st.Ins[0][1], st.Ins[0][0]
				if st.Bias != nil {
					st.Bias[0], st.Bias[1] = st.Bias[1], st.Bias[0]
				}
			}
			st.Div = []int{-1, g.Aux[0]}
		}
	}
}

// readsRaw reports whether step st can read gated aggregation g's output o undivided: g's own
// gradient step, or an addition of two operands of o's shape that reads o once, carries no bias
// on it and divides nothing yet.
func (pl *Plan) readsRaw(st, g *Step, o int) bool {
	switch st.Kind {
	case prog.GatedAggregateGrad:
		return st.Node.Group == g.Node.Group && !st.Raw
	case prog.Add:
		if len(st.Ins) != 1 || st.Div != nil || st.Batch || pl.biasSlot(st, o) < 0 {
			return false
		}
		k := slices.Index(st.Ins[0], o)
		return st.Bias == nil || st.Bias[k] < 0
	}
	return false
}

// storeBF16 marks the values Options.BF16 stores in bf16: the output of every edge sum (GatedGCN's
// ê = Ce + Dh_src + Eh_dst, the widest tensor its layer keeps for the backward pass) that the host
// does not read and that only steps whose kernels read bf16 read there (readsBF16): the gated
// aggregation and its gradient as their ê, a batch norm and its gradient as their x. The edge
// sum rounds each float32 sum to bf16 as it stores it (its statistics, where folded, are those of
// the rounded values), the readers convert back to float32, and the gradients stay float32: the
// backward pass is that of the forward pass on the rounded ê, with the rounding's own derivative
// taken as 1.
func (pl *Plan) storeBF16() {
	outs := map[int]bool{}
	for _, v := range pl.Prog.Outputs() {
		outs[v] = true
	}
	readers := pl.readers()
	for _, st := range pl.Steps {
		if st.Kind != prog.EdgeSum || st.Batch || st.Acc || len(st.Outs) != 1 {
			continue
		}
		v := st.Outs[0]
		if outs[v] || pl.Vals[v].Src != FromStep || len(readers[v]) == 0 {
			continue
		}
		if !slices.ContainsFunc(readers[v], func(r int) bool { return !readsBF16(&pl.Steps[r], v) }) {
			pl.Vals[v].BF16 = true
		}
	}
}

// readsBF16 reports whether step st reads value v only where its kernels can read it stored in
// bf16: as a gated aggregation's ê (input 0 of its members that read (ê, Bh, out, g); the scatter
// members fold in read dê) or as a batch norm's x (input 0), forward or backward.
func readsBF16(st *Step, v int) bool {
	if slices.Contains(st.Bias, v) || slices.Contains(st.Div, v) || (slices.Contains(st.Aux, v) && (st.BN == nil || st.BN.X != v)) {
		return false // read as a bias, a divisor, or a buffer kept for it other than a folded batch norm's x
	}
	only := func(ins []int, k int) bool { // v is read at position k of ins or not at all
		for i, x := range ins {
			if x == v && i != k {
				return false
			}
		}
		return true
	}
	switch st.Kind {
	case prog.GatedAggregate, prog.BatchNorm, prog.BatchNormRelu:
		return len(st.Ins) == 1 && only(st.Ins[0], 0)
	case prog.GatedAggregateGrad:
		for w, ins := range st.Ins {
			k := 0
			if w >= 2 {
				k = -1
			}
			if !only(ins, k) {
				return false
			}
		}
		return true
	case prog.BatchNormGrad, prog.BatchNormReluGrad:
		for _, ins := range st.Ins {
			if !only(ins, 0) {
				return false
			}
		}
		return true
	}
	return false
}
