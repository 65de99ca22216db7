package gpuexec

import (
	"slices"

	"github.com/rewiregnn/rewiregnn/prog"
)

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
