package nn

import (
	"fmt"
	"math"

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
	op := newFuncOp(fmt.Sprintf("SegmentSoftmax{%s,%d→%d}", dst.Name, dst.Len(), nodes), 1, sameAs(0),
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
		gop := newFuncOp(fmt.Sprintf("SegmentSoftmaxGrad{%s}", dst.Name), 2, sameAs(0),
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

func softmaxKernel[T Float](dst *Index, nodes int, acc *[]float64) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) {
		cols := s[0][1]
		SegmentSoftmaxRows(out, in[0], cols, dst.Idx, scratch(acc, nodes*cols))
	}
}

func softmaxGradKernel[T Float](dst *Index, nodes int, acc *[]float64) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) {
		cols := s[0][1]
		segmentSoftmaxGrad(out, in[0], in[1], cols, dst.Idx, scratch(acc, nodes*cols))
	}
}

// SegmentSoftmaxRows is the CPU kernel of SegmentSoftmax; acc is scratch of nodes×cols.
func SegmentSoftmaxRows[T Float](dst, src []T, cols int, seg []int32, acc []float64) {
	for i := range acc {
		acc[i] = math.Inf(-1)
	}
	for m, t := range seg {
		if t < 0 {
			continue
		}
		a := acc[int(t)*cols : (int(t)+1)*cols]
		for k, v := range src[m*cols : (m+1)*cols] {
			a[k] = max(a[k], float64(v))
		}
	}
	for m, t := range seg {
		d := dst[m*cols : (m+1)*cols]
		if t < 0 {
			clear(d)
			continue
		}
		a := acc[int(t)*cols : (int(t)+1)*cols]
		for k, v := range src[m*cols : (m+1)*cols] {
			d[k] = T(math.Exp(float64(v) - a[k]))
		}
	}
	clear(acc)
	for m, t := range seg {
		if t < 0 {
			continue
		}
		a := acc[int(t)*cols : (int(t)+1)*cols]
		for k, v := range dst[m*cols : (m+1)*cols] {
			a[k] += float64(v)
		}
	}
	for m, t := range seg {
		if t < 0 {
			continue
		}
		a := acc[int(t)*cols : (int(t)+1)*cols]
		d := dst[m*cols : (m+1)*cols]
		for k := range d {
			d[k] = T(float64(d[k]) / a[k])
		}
	}
}

func segmentSoftmaxGrad[T Float](dx, y, dy []T, cols int, seg []int32, acc []float64) {
	clear(acc)
	for m, t := range seg {
		if t < 0 {
			continue
		}
		a := acc[int(t)*cols : (int(t)+1)*cols]
		for k := range a {
			a[k] += float64(y[m*cols+k]) * float64(dy[m*cols+k])
		}
	}
	for m, t := range seg {
		d := dx[m*cols : (m+1)*cols]
		if t < 0 {
			clear(d)
			continue
		}
		a := acc[int(t)*cols : (int(t)+1)*cols]
		for k := range d {
			d[k] = T(float64(y[m*cols+k]) * (float64(dy[m*cols+k]) - a[k]))
		}
	}
}
