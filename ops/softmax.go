package ops

import (
	"fmt"
	"github.com/rewiregnn/rewiregnn/prog"

	"github.com/rewiregnn/rewiregnn/kern"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// SegmentSoftmax normalises the scores s ([edges, H]) per column over the edges that share a
// destination: out[m,k] = exp(s[m,k]) / Σ_{m': dst[m']=dst[m]} exp(s[m',k]), computed with the
// maximum subtracted. Edges with dst -1 (padding) come out as zeros. nodes is the number of
// destination rows.
func SegmentSoftmax(s *gorgonia.Node, dst *Index, nodes int) (*gorgonia.Node, error) {
	if s.Dims() != 2 || s.Shape()[0] != dst.Len() {
		return nil, fmt.Errorf("segment softmax %q: scores %v, want [%d, heads]", dst.Name, s.Shape(), dst.Len())
	}
	var acc []float64 // per destination and column: max, then sum
	op := newFuncOp(prog.SegmentSoftmax, fmt.Sprintf("SegmentSoftmax{%s,%d→%d}", dst.Name, dst.Len(), nodes), 1, sameAs(0),
		softmaxKernel[float64](dst, nodes, &acc), softmaxKernel[float32](dst, nodes, &acc))
	op.check = func(s []tensor.Shape) error {
		if s[0][0] != dst.Len() {
			return fmt.Errorf("%d score rows", s[0][0])
		}
		return dst.check(nodes)
	}
	op.dev = DeviceOp{Index: dst, Rows: nodes}
	op.grad = func(_ gorgonia.Nodes, out, g *gorgonia.Node) (gorgonia.Nodes, error) {
		// dx[m] = y[m] ⊙ (dy[m] − Σ_{m' in m's segment} y[m'] ⊙ dy[m']).
		var gacc []float64
		gop := newFuncOp(prog.SegmentSoftmaxGrad, fmt.Sprintf("SegmentSoftmaxGrad{%s}", dst.Name), 2, sameAs(0),
			softmaxGradKernel[float64](dst, nodes, &gacc), softmaxGradKernel[float32](dst, nodes, &gacc))
		gop.dev = DeviceOp{Index: dst, Rows: nodes}
		dx, err := apply(gop, out, g)
		return gorgonia.Nodes{dx}, err
	}
	n, err := gorgonia.ApplyOp(op, s)
	if err != nil {
		return nil, fmt.Errorf("segment softmax %q: %w", dst.Name, err)
	}
	return n, nil
}

func softmaxKernel[T kern.Float](dst *Index, nodes int, acc *[]float64) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) {
		cols := s[0][1]
		kern.SegmentSoftmaxRows(out, in[0], cols, dst.Idx, scratch(acc, nodes*cols))
	}
}

func softmaxGradKernel[T kern.Float](dst *Index, nodes int, acc *[]float64) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) {
		cols := s[0][1]
		kern.SegmentSoftmaxGradRows(out, in[0], in[1], cols, dst.Idx, scratch(acc, nodes*cols))
	}
}
