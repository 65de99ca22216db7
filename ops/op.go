package ops

import (
	"fmt"
	"github.com/rewiregnn/rewiregnn/prog"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Index maps rows of one tensor to rows of another. Idx has a fixed length per compiled graph;
// its values change per batch. An entry -1 selects no row. W, if not nil, weights every entry.
type Index struct {
	Name string
	Idx  []int32
	W    []float64
}

// NewIndex returns an index of n entries, all -1.
func NewIndex(name string, n int) *Index {
	ix := &Index{Name: name, Idx: make([]int32, n)}
	ix.Clear()
	return ix
}

// Clear sets every entry to -1 and drops the weights' effect (weights become 0).
func (ix *Index) Clear() {
	for i := range ix.Idx {
		ix.Idx[i] = -1
	}
	for i := range ix.W {
		ix.W[i] = 0
	}
}

// Len is the number of entries.
func (ix *Index) Len() int { return len(ix.Idx) }

// check reports the first entry outside [-1, rows), or weights that do not match the entries
// (prog.IndexInput.Check, which the GPU executor applies to the same index before uploading it).
func (ix *Index) check(rows int) error {
	return prog.IndexInput{Name: ix.Name, Len: len(ix.Idx), Weighted: ix.W != nil}.Check(ix.Idx, ix.W, rows)
}

// Mask marks the rows of a tensor that hold real data (the rest are shape-bucket padding).
type Mask struct {
	Name string
	Keep []bool
}

// NewMask returns a mask of n rows, none kept.
func NewMask(name string, n int) *Mask { return &Mask{Name: name, Keep: make([]bool, n)} }

// base gives the Op methods that every op here answers the same way.
type base struct{}

func (base) ReturnsPtr() bool     { return false }
func (base) CallsExtern() bool    { return false }
func (base) OverwritesInput() int { return -1 }

// fnType is the Gorgonia type of an op taking n tensors of one element type and returning one.
func fnType(n int) hm.Type {
	a := matT()
	ts := make([]hm.Type, n+1)
	for i := range ts {
		ts[i] = a
	}
	return hm.NewFnType(ts...)
}

// matT and vecT are the Gorgonia types of a matrix and a vector of element type 'a'.
func matT() hm.Type { return gorgonia.TensorType{Dims: 2, Of: hm.TypeVariable('a')} }
func vecT() hm.Type { return gorgonia.TensorType{Dims: 1, Of: hm.TypeVariable('a')} }

// Buffer is an op's reusable output tensor: reallocated only when the shape or type changes.
type Buffer struct{ t *tensor.Dense }

// Get returns the buffer's tensor with element type dt and the given shape.
func (b *Buffer) Get(dt tensor.Dtype, shape ...int) *tensor.Dense {
	if b.t != nil && b.t.Dtype() == dt && b.t.Shape().Eq(tensor.Shape(shape)) {
		return b.t
	}
	b.t = tensor.New(tensor.WithShape(shape...), tensor.Of(dt))
	return b.t
}

// scratch returns *p resized to n values (reallocated only when its length changes).
func scratch(p *[]float64, n int) []float64 {
	if len(*p) != n {
		*p = make([]float64, n)
	}
	return *p
}

// dense returns v as a *tensor.Dense of float32 or float64.
func dense(op fmt.Stringer, v gorgonia.Value, i int) (*tensor.Dense, error) {
	d, ok := v.(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("%v: input %d is %T, want a dense tensor", op, i, v)
	}
	if dt := d.Dtype(); dt != tensor.Float64 && dt != tensor.Float32 {
		return nil, fmt.Errorf("%v: input %d has element type %v, want float32 or float64", op, i, dt)
	}
	return d, nil
}

// rowsCols returns the shape of a matrix (a vector counts as one column per row).
func rowsCols(d *tensor.Dense) (int, int) {
	s := d.Shape()
	switch len(s) {
	case 1:
		return s[0], 1
	case 2:
		return s[0], s[1]
	}
	return s[0], s.TotalSize() / max(s[0], 1)
}

// inShape returns input i's shape from InferShape's arguments.
func inShape(op fmt.Stringer, in []gorgonia.DimSizer, i int) (tensor.Shape, error) {
	if i >= len(in) {
		return nil, fmt.Errorf("%v: %d inputs, want at least %d", op, len(in), i+1)
	}
	s, ok := in[i].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("%v: input %d shape is %T", op, i, in[i])
	}
	return s, nil
}

// sameType checks that every input has the element type of the first.
func sameType(op fmt.Stringer, ds ...*tensor.Dense) error {
	for i, d := range ds[1:] {
		if d.Dtype() != ds[0].Dtype() {
			return fmt.Errorf("%v: input %d is %v, input 0 is %v", op, i+1, d.Dtype(), ds[0].Dtype())
		}
	}
	return nil
}

func arity(op gorgonia.Op, vs []gorgonia.Value) error {
	if len(vs) != op.Arity() {
		return fmt.Errorf("%v: %d inputs, want %d", op, len(vs), op.Arity())
	}
	return nil
}

// upstreamScalar reads the scalar upstream gradient of a loss's gradient op.
func upstreamScalar(op fmt.Stringer, v gorgonia.Value) (float64, error) {
	switch x := v.Data().(type) {
	case float64:
		return x, nil
	case float32:
		return float64(x), nil
	}
	return 0, fmt.Errorf("%v: upstream gradient is %T, want a scalar", op, v.Data())
}
