package cpuexec

import (
	"github.com/rewiregnn/rewiregnn/kern"
	"github.com/rewiregnn/rewiregnn/prog"
)

// What a Runner holds, known from the shapes before it runs: its activation slots (PlanBytes),
// the scratch its product gradients share (ScratchBytes), and what the kernels keep between
// steps (keptBytes: the forward state a group's gradient reads, grouped edges, float64
// accumulators). Buffers are reused between runs, so this is also its share of a step's peak.

// Bytes returns the runner's memory (slots, scratch and kept state).
func (r *Runner) Bytes() int64 {
	n, _ := r.PlanBytes()
	n += r.ScratchBytes()
	var acc, tmp int64 // the scratch a kernel uses while it runs, one of each for the runner (call.acc, call.tmp)
	for i := range r.steps {
		st := &r.steps[i]
		if st.Replay {
			continue // its state is counted at its first run
		}
		k, a, t := keptBytes(r.P, st, r.elem())
		n += k
		acc, tmp = max(acc, a), max(tmp, t)
	}
	return n + acc + tmp
}

// elem is the size of the program's elements in bytes.
func (r *Runner) elem() int64 {
	if r.dtype == prog.Float64 {
		return 8
	}
	return 4
}

// ScratchBytes is the scratch the product gradients' passes share (with an arena, the arena's):
// the largest need of each of its buffers.
func (r *Runner) ScratchBytes() int64 {
	var need kern.ScratchNeed
	for i := range r.steps {
		st := &r.steps[i]
		if st.Kind != prog.MatMulGradX && st.Kind != prog.MatMulGradW {
			continue
		}
		m, a, b := productDims(r.P, st)
		need = need.Max(kern.ProductGradNeed(m, a, b, r.dtype == prog.Float32, st.Outs[0] >= 0))
	}
	return r.elem() * need.Values()
}

// productDims returns a product gradient step's m, a and b (x [m, a], w [a, b]).
func productDims(p *prog.Program, st *Step) (m, a, b int) {
	if st.Ins[0] != nil { // dx: (g [m, b], w [a, b])
		m, b = p.Vals[st.Ins[0][0]].RowsCols()
		a, _ = p.Vals[st.Ins[0][1]].RowsCols()
		return m, a, b
	}
	m, a = p.Vals[st.Ins[1][0]].RowsCols() // dw: (x [m, a], g [m, b])
	_, b = p.Vals[st.Ins[1][1]].RowsCols()
	return m, a, b
}

// segmentsBytes is the size of kern.Segments grouping edges by nodes.
func segmentsBytes(nodes, edges int) int64 { return int64(4 * (2*nodes + 1 + edges)) }

// keptBytes returns what step st's kernel keeps between steps and, separately, the scratch it
// borrows from the runner while it runs (call.acc, float64; call.tmp, the element type).
func keptBytes(p *prog.Program, st *Step, elem int64) (kept, acc, tmp int64) {
	in := st.ins()
	rc := func(i int) (int64, int64) {
		r, c := p.Vals[in[i]].RowsCols()
		return int64(r), int64(c)
	}
	rows := int64(st.Node.Rows)
	switch st.Kind {
	case prog.BatchNorm, prog.BatchNormRelu: // mean and 1/σ, and the passes' scratch
		m, d := rc(0)
		return 16*d + kern.BNScratchBytes(int(m), int(d), elem, p.Train), 0, 0
	case prog.LayerNorm: // x̂ and 1/σ
		m, d := rc(0)
		return 8 * (m*d + m), 0, 0
	case prog.GatedAggregate: // the denominators (kept only for a gradient); edges by destination and by source
		m, d := rc(0)
		nbh, _ := rc(1)
		edges := segmentsBytes(int(rows), int(m)) + segmentsBytes(int(nbh), int(m)) + 4*m
		if !p.Train {
			return edges, 0, elem * rows * d
		}
		return elem*rows*d + edges, 0, 0
	case prog.GatedAggregateGrad: // g ⊘ D
		_, d := rc(1)
		return elem * rows * d, 0, 0
	case prog.EdgeSum: // edges by source and by destination
		m, _ := rc(0)
		n, _ := rc(1)
		return 2 * segmentsBytes(int(n), int(m)), 0, 0
	case prog.SegmentMax: // edges by destination, the arg-max
		m, d := rc(0)
		return segmentsBytes(int(rows), int(m)) + 4*rows*d, 0, 0
	case prog.SegmentSoftmax, prog.SegmentSoftmaxGrad:
		_, h := rc(0)
		return 0, 8 * rows * h, 0
	}
	return 0, 0, 0
}

// elemBytes is the element size of a slot class (0 float32, 1 float64).
func elemBytes(class int) int64 {
	if class == 1 {
		return 8
	}
	return 4
}
