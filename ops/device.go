package ops

import (
	"strings"

	"gorgonia.org/gorgonia"
)

// This file is what an executor other than Gorgonia's tape machine (the CUDA executor of
// package gpu) needs to run the graphs of this package: a description of every op node and the
// dropout masks in closed form. Nothing here changes how the CPU runs.

// Op kinds reported by Describe: the op's name up to its first '{'.
const (
	OpGather             = "Gather" // also Embed
	OpScatterAdd         = "ScatterAdd"
	OpSegmentSoftmax     = "SegmentSoftmax"
	OpSegmentSoftmaxGrad = "SegmentSoftmaxGrad"
	OpSegmentMax         = "SegmentMax"     // keeps the arg-max, int32 [Rows, d], in State
	OpSegmentMaxGrad     = "SegmentMaxGrad" // (g) → dx [Index.Len(), d], from its State's arg-max
	OpBatchNorm          = "BatchNorm"
	OpBatchNormGrad      = "BatchNormGrad" // Which 0: dx (also sums dγ, dβ); 1: dγ, 2: dβ
	OpBatchNormRelu      = "BatchNormRelu"
	OpBatchNormReluGrad  = "BatchNormReluGrad"
	OpEdgeSum            = "EdgeSum"
	OpEdgeSumGrad        = "EdgeSumGrad" // Which 0: along Src (also sums along Dst); 1: along Dst
	OpLayerNorm          = "LayerNorm"
	OpLayerNormGrad      = "LayerNormGrad"
	OpGated              = "GatedAggregate"
	OpGatedGrad          = "GatedAggregateGrad" // Which 0: dê (also sums dbh); 1: dbh
	OpGaussian           = "GaussianWeights"
	OpGaussianGrad       = "GaussianWeightsGrad"
	OpKernelMix          = "KernelMix"
	OpKernelMixGradX     = "KernelMixGradX"
	OpKernelMixGradW     = "KernelMixGradW"
	OpHeadDot            = "HeadDot"
	OpHeadScale          = "HeadScale"
	OpMatMul             = "MatMul"
	OpMatMulGradX        = "MatMulGradX"
	OpMatMulGradW        = "MatMulGradW"
	OpAddBias            = "AddBias"
	OpColSum             = "ColSum"
	OpAdd                = "Add"
	OpRelu               = "Relu"
	OpReluGrad           = "ReluGrad"
	OpDropout            = "Dropout"
	OpDropoutGrad        = "DropoutGrad"
	OpMaskedL1           = "MaskedL1"
	OpMaskedL1Grad       = "MaskedL1Grad"
	OpWeightedCE         = "WeightedCE"
	OpWeightedCEGrad     = "WeightedCEGrad"
)

// DeviceOp describes an op of this package: its kind and the attributes that are not graph
// inputs (index and mask holders, batch-norm and dropout state, row counts). Fields that do not
// apply are zero.
type DeviceOp struct {
	Kind     string
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
		d.Kind, _, _ = strings.Cut(o.name, "{")
		return d, true
	case *l1Op:
		return DeviceOp{Kind: OpMaskedL1}, true
	case *l1GradOp:
		return DeviceOp{Kind: OpMaskedL1Grad}, true
	case *ceOp:
		return DeviceOp{Kind: OpWeightedCE, Index: o.labels}, true
	case *ceGradOp:
		return DeviceOp{Kind: OpWeightedCEGrad, Index: o.fwd.labels}, true
	}
	return DeviceOp{}, false
}

// CheckRows reports the first entry of ix outside [-1, rows), as the CPU ops do before using it.
func (ix *Index) CheckRows(rows int) error { return ix.check(rows) }

// StepSeed is the seed of the current training step's mask: element i is kept when
// DropKeep(StepSeed, i, Rate).
func (s *DropState) StepSeed() uint64 { return s.Seed ^ mix64(*s.step) }

// Keep reports whether element i survives at the current step (the mask the CPU op applies).
func (s *DropState) Keep(i int) bool { return DropKeep(s.StepSeed(), i, s.Rate) }
