package ops

import (
	"fmt"
	"github.com/rewiregnn/rewiregnn/prog"

	"github.com/rewiregnn/rewiregnn/kern"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// SegmentMax is the max aggregation (GraphSAGE-max, PNA): for x [M, d], one row per edge (e.g.
// gathered source features), and dst (M entries in [-1, nodes); -1 is padding, ignored), the
// result is [nodes, d] with
//
//	out[n, j] = max over the edges e with dst[e] = n of x[e, j],   0 for a node without edges
//
// (as PyTorch Geometric's max aggregation fills empty nodes). Its gradient sends each output
// gradient to one edge: dx[e, j] = g[dst[e], j] when e is node dst[e]'s arg-max in column j,
// else 0. Ties go to the lowest edge index (and -0 ties with +0), so forward and backward are
// deterministic; a NaN propagates: it wins over every number, the lowest-index NaN of a
// column being the arg-max, so out[n, j] is NaN and the gradient goes to that edge. out[n, j]
// is always x[arg-max, j], bit for bit. dst must be unweighted.
//
// The forward pass keeps the arg-max per (node, column), int32 [nodes, d], for its gradient op
// (the forward state, DeviceOp.State); the CPU kernels are kern.SegmentMaxRows and
// kern.SegmentMaxGradRows, the GPU's cuda/kernels/segmax.cu.
func SegmentMax(x *gorgonia.Node, dst *Index, nodes int) (*gorgonia.Node, error) {
	if x.Dims() != 2 || x.Shape()[0] != dst.Len() || nodes < 0 {
		return nil, fmt.Errorf("segment max %q: input %v, want [%d, d]; %d nodes", dst.Name, x.Shape(), dst.Len(), nodes)
	}
	st := &segMaxState{dst: dst, nodes: nodes}
	op := newFuncOp(prog.SegmentMax, fmt.Sprintf("SegmentMax{%s,%d→%d}", dst.Name, dst.Len(), nodes), 1, rowsOf(nodes, 0),
		segMaxForward[float64](st), segMaxForward[float32](st))
	op.check = func(s []tensor.Shape) error {
		if s[0][0] != dst.Len() {
			return fmt.Errorf("input has %d rows", s[0][0])
		}
		if dst.W != nil {
			return fmt.Errorf("weighted index")
		}
		return dst.check(nodes)
	}
	op.dev = DeviceOp{Index: dst, Rows: nodes, State: st}
	op.grad = func(_ gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		gop := newFuncOp(prog.SegmentMaxGrad, fmt.Sprintf("SegmentMaxGrad{%s,%d→%d}", dst.Name, nodes, dst.Len()), 1, rowsOf(dst.Len(), 0),
			segMaxBackward[float64](st), segMaxBackward[float32](st))
		gop.check = st.ready
		gop.dev = DeviceOp{Index: dst, Rows: nodes, State: st}
		dx, err := apply(gop, g)
		return gorgonia.Nodes{dx}, err
	}
	n, err := gorgonia.ApplyOp(op, x)
	if err != nil {
		return nil, fmt.Errorf("segment max %q: %w", dst.Name, err)
	}
	return n, nil
}

// segMaxState keeps, from the forward pass, the edges grouped by destination and the arg-max
// edge per (node, column) (kern.SegmentMaxState), which the gradient op reads.
type segMaxState struct {
	dst   *Index
	nodes int
	kern.SegmentMaxState
}

// ready checks that a forward pass of the gradient's shape ran (input g [nodes, d]).
func (st *segMaxState) ready(s []tensor.Shape) error {
	if s[0][0] != st.nodes {
		return fmt.Errorf("output gradient has %d rows, want %d", s[0][0], st.nodes)
	}
	return st.Ready(s[0][1])
}

func segMaxForward[T kern.Float](st *segMaxState) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) {
		kern.SegmentMaxForward(&st.SegmentMaxState, out, in[0], st.dst.Idx, st.nodes, s[0][1])
	}
}

func segMaxBackward[T kern.Float](st *segMaxState) kernel[T] {
	return func(dx []T, in [][]T, s []tensor.Shape) {
		kern.SegmentMaxGrad(&st.SegmentMaxState, dx, in[0], st.dst.Idx, s[0][1])
	}
}
