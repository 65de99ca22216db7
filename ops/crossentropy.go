package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	"github.com/rewiregnn/rewiregnn/kern"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// WeightedCE is the weighted softmax cross-entropy of the rows of logits ([R, C]) against the
// classes in labels.Idx, normalised by the total weight (docs/protocol.md §"Losses and metrics"):
//
//	loss = Σ_i W_i · (−log softmax(z_i)[y_i]) / Σ_i W_i
//
// over the rows with a label ≥ 0, W_i = labels.W[i]. With W = 1 it is the mean cross-entropy of
// the superpixel and NeighborsMatch tasks; with W_i = w_{y_i} from SBMClassWeights it is the
// weighted cross-entropy of CLUSTER and PATTERN. Padding rows carry label −1 (or weight 0) and
// add nothing. Only logits are differentiated.
func WeightedCE(logits *gorgonia.Node, labels *Index) (*gorgonia.Node, error) {
	if logits.Dims() != 2 || logits.Shape()[1] < 1 {
		return nil, fmt.Errorf("weighted cross-entropy: logits of shape %v, want [rows, classes]", logits.Shape())
	}
	if len(labels.Idx) != logits.Shape()[0] || len(labels.W) != len(labels.Idx) {
		return nil, fmt.Errorf("weighted cross-entropy: %d labels and %d weights for %d rows", len(labels.Idx), len(labels.W), logits.Shape()[0])
	}
	n, err := gorgonia.ApplyOp(&ceOp{labels: labels}, logits)
	if err != nil {
		return nil, fmt.Errorf("weighted cross-entropy: %w", err)
	}
	return n, nil
}

// SBMClassWeights fills w[i] = w_{labels[i]} with w_c = (V − n_c)/V, V the number of rows with
// a label ≥ 0 and n_c those of class c (the per-batch weights of benchmarking-gnns' SBM loss);
// rows with a negative label get 0.
func SBMClassWeights(labels []int32, classes int, w []float64) error {
	var counts []int
	return SBMClassWeightsBuf(labels, classes, w, &counts)
}

// SBMClassWeightsBuf is SBMClassWeights with a count buffer reused between calls.
func SBMClassWeightsBuf(labels []int32, classes int, w []float64, counts *[]int) error {
	if cap(*counts) < classes {
		*counts = make([]int, classes)
	}
	cs := (*counts)[:classes]
	clear(cs)
	v := 0
	for i, y := range labels {
		if y < 0 {
			continue
		}
		if int(y) >= classes {
			return fmt.Errorf("class weights: label %d of row %d outside %d classes", y, i, classes)
		}
		cs[y]++
		v++
	}
	for i, y := range labels {
		w[i] = 0
		if y >= 0 {
			w[i] = float64(v-cs[y]) / float64(v)
		}
	}
	return nil
}

type ceOp struct {
	base
	labels *Index
}

func (op *ceOp) Arity() int            { return 1 }
func (op *ceOp) String() string        { return "WeightedCE{" + op.labels.Name + "}" }
func (op *ceOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "WeightedCE%p", op) }
func (op *ceOp) Hashcode() uint32      { return hashOf(op) }
func (op *ceOp) Type() hm.Type         { return hm.NewFnType(matT(), hm.TypeVariable('a')) }
func (op *ceOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	return tensor.ScalarShape(), nil
}

func (op *ceOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	if err := arity(op, vs); err != nil {
		return nil, err
	}
	z, err := dense(op, vs[0], 0)
	if err != nil {
		return nil, err
	}
	rows, cols := rowsCols(z)
	if err := op.check(rows, cols); err != nil {
		return nil, err
	}
	if z.Dtype() == tensor.Float64 {
		var out [1]float64
		kern.WeightedCE(out[:], z.Float64s(), op.labels.Idx, op.labels.W, rows, cols)
		return gorgonia.NewF64(out[0]), nil
	}
	var out [1]float32
	kern.WeightedCE(out[:], z.Float32s(), op.labels.Idx, op.labels.W, rows, cols)
	return gorgonia.NewF32(out[0]), nil
}

// check rejects labels that do not fit the logits.
func (op *ceOp) check(rows, cols int) error {
	if len(op.labels.Idx) != rows {
		return fmt.Errorf("%v: %d labels for %d rows", op, len(op.labels.Idx), rows)
	}
	for i, y := range op.labels.Idx {
		if int(y) >= cols {
			return fmt.Errorf("%v: label %d of row %d outside %d classes", op, y, i, cols)
		}
	}
	return nil
}

func (op *ceOp) DiffWRT(int) []bool { return []bool{true} }
func (op *ceOp) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	dz, err := gorgonia.ApplyOp(&ceGradOp{fwd: op}, in[0], grad)
	if err != nil {
		return nil, fmt.Errorf("weighted cross-entropy gradient: %w", err)
	}
	return gorgonia.Nodes{dz}, nil
}

// ceGradOp: ∂loss/∂z_i = g · W_i/ΣW · (softmax(z_i) − onehot(y_i)).
type ceGradOp struct {
	base
	fwd *ceOp
	out Buffer
}

func (op *ceGradOp) Arity() int            { return 2 }
func (op *ceGradOp) String() string        { return "WeightedCEGrad" }
func (op *ceGradOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "WeightedCEGrad%p", op) }
func (op *ceGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *ceGradOp) Type() hm.Type {
	return hm.NewFnType(matT(), hm.TypeVariable('a'), matT())
}
func (op *ceGradOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := inShape(op, in, 0)
	if err != nil {
		return nil, err
	}
	return s.Clone(), nil
}

func (op *ceGradOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	if err := arity(op, vs); err != nil {
		return nil, err
	}
	z, err := dense(op, vs[0], 0)
	if err != nil {
		return nil, err
	}
	rows, cols := rowsCols(z)
	if err := op.fwd.check(rows, cols); err != nil {
		return nil, err
	}
	g, err := upstreamScalar(op, vs[1])
	if err != nil {
		return nil, err
	}
	out := op.out.Get(z.Dtype(), z.Shape()...)
	if z.Dtype() == tensor.Float64 {
		kern.WeightedCEBackward(out.Float64s(), z.Float64s(), op.fwd.labels.Idx, op.fwd.labels.W, g, rows, cols)
	} else {
		kern.WeightedCEBackward(out.Float32s(), z.Float32s(), op.fwd.labels.Idx, op.fwd.labels.W, g, rows, cols)
	}
	return out, nil
}
