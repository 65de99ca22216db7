package gpuexec

import (
	"math"
	"slices"

	"github.com/rewiregnn/rewiregnn/cuda"
	"github.com/rewiregnn/rewiregnn/prog"
)

// prefill moves the fills of the accumulating steps' buffers (the gated aggregation's sums and
// denominators and its gradient's dBh, the edge sum's two gradients, scatter-adds' outputs),
// which their launchers would each queue before adding into them, into fill steps: one before
// the first step for the forward pass's accumulators and one before the first backward step
// for the backward pass's, each one launch (cuda FillBatch). Those buffers then live from their
// fill step on: the forward's from the start of the run, the backward's from the start of the
// backward pass, which costs a little activation memory for node-sized buffers.
func (pl *Plan) prefill() {
	fwd, bwd := fillStep(), fillStep()
	firstGrad := -1
	for si := range pl.Steps {
		st := &pl.Steps[si]
		if st.Node.Grad && firstGrad < 0 {
			firstGrad = si
		}
		vals, bits := pl.accumulators(si, st)
		if len(vals) == 0 {
			continue
		}
		st.Prefilled = true
		to := &fwd
		if st.Node.Grad {
			to = &bwd
		}
		to.Outs, to.Fills = append(to.Outs, vals...), append(to.Fills, bits...)
	}
	if len(bwd.Outs) > 0 {
		pl.Steps = slices.Insert(pl.Steps, firstGrad, bwd)
	}
	if len(fwd.Outs) > 0 {
		pl.Steps = slices.Insert(pl.Steps, 0, fwd)
	}
	pl.redefine()
}

// fillStep is an empty fill step: it reads nothing and no host state.
func fillStep() Step {
	return Step{Node: prog.Node{Index: -1, Src: -1, Dst: -1, Mask: -1, State: -1, Group: -1}, Fills: []uint32{}}
}

// accumulators returns the buffers step st adds into after its launcher filled them, and the
// bits it fills them with; nothing for a step that fills none, or whose buffers are not its own
// (a batched, accumulating or fill step, or a buffer another step writes first). si is st's
// place.
func (pl *Plan) accumulators(si int, st *Step) ([]int, []uint32) {
	if st.Batch || st.Fills != nil {
		return nil, nil
	}
	var vals []int
	var bits []uint32
	switch st.Kind {
	case prog.GatedAggregate: // the sums and the denominators (GatedEps)
		vals, bits = []int{st.Outs[0], st.Aux[0]}, []uint32{0, math.Float32bits(cuda.GatedEps)}
	case prog.GatedAggregateGrad:
		// dBh (dê is written, or added into a sum: Step.Acc), and the edge sum's gradients
		// that it scatters dê into (Step.Scatter)
		vals = slices.Clone(st.Outs[1:])
		bits = make([]uint32, len(vals))
	case prog.EdgeSumGrad:
		vals, bits = []int{st.Outs[0], st.Outs[1]}, []uint32{0, 0}
	case prog.ScatterAdd:
		if len(st.Outs) == 1 && !st.Acc {
			vals, bits = []int{st.Outs[0]}, []uint32{0}
		}
	}
	for _, v := range vals {
		if v < 0 {
			return nil, nil
		}
		if src := pl.Vals[v].Src; (src != FromStep && src != FromGrads && src != FromResult) || pl.Vals[v].Def != si {
			return nil, nil
		}
	}
	return vals, bits
}
