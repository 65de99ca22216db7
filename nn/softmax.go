package nn

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
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
	n, err := gorgonia.ApplyOp(&softmaxOp{dst: dst, nodes: nodes}, s)
	if err != nil {
		return nil, fmt.Errorf("segment softmax %q: %w", dst.Name, err)
	}
	return n, nil
}

type softmaxOp struct {
	base
	dst   *Index
	nodes int
	out   buffer
	acc   []float64 // per destination and column: max, then sum
}

func (op *softmaxOp) Arity() int { return 1 }
func (op *softmaxOp) String() string {
	return fmt.Sprintf("SegmentSoftmax{%s,%d→%d}", op.dst.Name, op.dst.Len(), op.nodes)
}
func (op *softmaxOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%s%p", op, op) }
func (op *softmaxOp) Hashcode() uint32      { return hashOf(op) }
func (op *softmaxOp) Type() hm.Type         { return fnType(1) }
func (op *softmaxOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := inShape(op, in, 0)
	if err != nil {
		return nil, err
	}
	return s.Clone(), nil
}

func (op *softmaxOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	if err := arity(op, vs); err != nil {
		return nil, err
	}
	x, err := dense(op, vs[0], 0)
	if err != nil {
		return nil, err
	}
	rows, cols := rowsCols(x)
	if rows != op.dst.Len() {
		return nil, fmt.Errorf("%v: %d score rows", op, rows)
	}
	if err := op.dst.check(op.nodes); err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	if len(op.acc) != op.nodes*cols {
		op.acc = make([]float64, op.nodes*cols)
	}
	out := op.out.get(x.Dtype(), rows, cols)
	switch x.Dtype() {
	case tensor.Float64:
		SegmentSoftmaxRows(out.Float64s(), x.Float64s(), cols, op.dst.Idx, op.acc)
	default:
		SegmentSoftmaxRows(out.Float32s(), x.Float32s(), cols, op.dst.Idx, op.acc)
	}
	return out, nil
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

func (op *softmaxOp) DiffWRT(int) []bool { return []bool{true} }
func (op *softmaxOp) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	dx, err := gorgonia.ApplyOp(&softmaxGradOp{fwd: op}, out, grad)
	if err != nil {
		return nil, fmt.Errorf("%v gradient: %w", op, err)
	}
	return gorgonia.Nodes{dx}, nil
}

// softmaxGradOp: dx[m] = y[m] ⊙ (dy[m] − Σ_{m' in m's segment} y[m'] ⊙ dy[m']).
type softmaxGradOp struct {
	base
	fwd *softmaxOp
	out buffer
	acc []float64
}

func (op *softmaxGradOp) Arity() int { return 2 }
func (op *softmaxGradOp) String() string {
	return fmt.Sprintf("SegmentSoftmaxGrad{%s}", op.fwd.dst.Name)
}
func (op *softmaxGradOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%s%p", op, op) }
func (op *softmaxGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *softmaxGradOp) Type() hm.Type         { return fnType(2) }
func (op *softmaxGradOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := inShape(op, in, 0)
	if err != nil {
		return nil, err
	}
	return s.Clone(), nil
}

func (op *softmaxGradOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	if err := arity(op, vs); err != nil {
		return nil, err
	}
	y, err := dense(op, vs[0], 0)
	if err != nil {
		return nil, err
	}
	dy, err := dense(op, vs[1], 1)
	if err != nil {
		return nil, err
	}
	if err := sameType(op, y, dy); err != nil {
		return nil, err
	}
	rows, cols := rowsCols(y)
	if len(op.acc) != op.fwd.nodes*cols {
		op.acc = make([]float64, op.fwd.nodes*cols)
	}
	out := op.out.get(y.Dtype(), rows, cols)
	switch y.Dtype() {
	case tensor.Float64:
		segmentSoftmaxGrad(out.Float64s(), y.Float64s(), dy.Float64s(), cols, op.fwd.dst.Idx, op.acc)
	default:
		segmentSoftmaxGrad(out.Float32s(), y.Float32s(), dy.Float32s(), cols, op.fwd.dst.Idx, op.acc)
	}
	return out, nil
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
