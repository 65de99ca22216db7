package ops

import (
	"github.com/rewiregnn/rewiregnn/kern"
	"github.com/rewiregnn/rewiregnn/prog"
	"gorgonia.org/gorgonia"
)

// This file is what the lowering (package lower) reads to translate the graphs of this package
// into programs: a description of every op node (its program op, set where the op is made, and
// its attributes) and the dropout masks in closed form. Nothing here changes how the CPU runs.

// DeviceOp describes an op of this package for the lowering (package lower): the program op it
// becomes and the attributes that are not graph inputs (index and mask holders, batch-norm and
// dropout state, row counts). Fields that do not apply are zero.
type DeviceOp struct {
	Op       prog.Op
	Which    int        // gradient ops computing one of several inputs' gradients: which one
	Index    *Index     // Gather, ScatterAdd: the index; SegmentSoftmax(Grad), SegmentMax(Grad): dst; WeightedCE(Grad): labels
	Src, Dst *Index     // GatedAggregate(Grad), EdgeSum(Grad)
	Rows     int        // ScatterAdd, EdgeSumGrad: output rows; SegmentSoftmax(Grad), SegmentMax(Grad), GatedAggregate(Grad): nodes
	Heads    int        // HeadDot
	Mask     *Mask      // BatchNorm(Relu)(Grad), LayerNorm(Grad): the rows that hold data
	BN       *BNState   // BatchNorm(Relu)(Grad)
	Drop     *DropState // Dropout(Grad)
	// State is shared by a forward op that keeps results for its backward pass (batch and layer
	// norm, the gated aggregation, the segment max's arg-max) and its gradient ops, and by
	// gradient ops that one pass computes together (the first leaves the others' results in
	// it); nil otherwise.
	State any
}

// Describe returns the description of an op of this package, and false for any other op
// (Gorgonia's own operators, constants).
func Describe(op gorgonia.Op) (DeviceOp, bool) {
	switch o := op.(type) {
	case *Func:
		d := o.dev
		d.Op = o.kind
		return d, true
	case *lossOp:
		return DeviceOp{Op: o.k.fwdOp}, true
	case *lossGradOp:
		return DeviceOp{Op: o.k.bwdOp}, true
	case *ceOp:
		return DeviceOp{Op: prog.WeightedCE, Index: o.labels}, true
	case *ceGradOp:
		return DeviceOp{Op: prog.WeightedCEGrad, Index: o.fwd.labels}, true
	}
	return DeviceOp{}, false
}

// StepSeed is the seed of the current training step's mask: element i is kept when
// DropKeep(StepSeed, i, Rate).
func (s *DropState) StepSeed() uint64 { return s.Seed ^ kern.Mix64(*s.step) }

// Keep reports whether element i survives at the current step (the mask the CPU op applies).
func (s *DropState) Keep(i int) bool { return DropKeep(s.StepSeed(), i, s.Rate) }
