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
	st := &segMaxState{dst: dst, nodes: nodes, fwdD: -1}
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

// segMaxState keeps, from the forward pass, the real edges grouped by destination and the
// arg-max edge per (node, column) ([nodes, d], -1 for a node without edges), which the
// gradient op reads.
type segMaxState struct {
	dst   *Index
	nodes int
	byDst kern.Segments
	arg   []int32
	fwdD  int // width of the last forward pass (-1 before the first)
}

// ready checks that a forward pass of the gradient's shape ran (input g [nodes, d]).
func (st *segMaxState) ready(s []tensor.Shape) error {
	if s[0][0] != st.nodes {
		return fmt.Errorf("output gradient has %d rows, want %d", s[0][0], st.nodes)
	}
	if st.fwdD != s[0][1] {
		return fmt.Errorf("no forward pass of width %d to differentiate", s[0][1])
	}
	return nil
}

func segMaxForward[T kern.Float](st *segMaxState) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) {
		d := s[0][1]
		dst := st.dst.Idx
		st.byDst.Group(dst, st.nodes, func(k int) bool { return dst[k] >= 0 })
		if n := st.nodes * d; cap(st.arg) < n {
			st.arg = make([]int32, n)
		} else {
			st.arg = st.arg[:n]
		}
		kern.SegmentMaxRows(out, st.arg, in[0], d, &st.byDst)
		st.fwdD = d
	}
}

func segMaxBackward[T kern.Float](st *segMaxState) kernel[T] {
	return func(dx []T, in [][]T, s []tensor.Shape) {
		kern.SegmentMaxGradRows(dx, in[0], st.arg, s[0][1], st.dst.Idx)
	}
}
