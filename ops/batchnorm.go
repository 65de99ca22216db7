package ops

import (
	"fmt"
	"github.com/rewiregnn/rewiregnn/prog"

	"github.com/rewiregnn/rewiregnn/kern"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BNEps is the constant added to the variance (PyTorch BatchNorm1d's default).
const BNEps = kern.BNEps

// BNMomentum is the weight of the batch statistics in the running statistics.
const BNMomentum = kern.BNMomentum

// BNState is the running statistics of one batch-norm layer, shared by every compiled graph
// (shape bucket) of a model, and the switch between training and evaluation.
type BNState struct {
	Name     string
	RunMean  []float64
	RunVar   []float64
	Training bool
	// calibrating: the training-mode passes average their batch statistics into the running
	// statistics (StartCalibration); batches counts the passes averaged so far.
	calibrating bool
	batches     int
}

// StartCalibration zeroes the running statistics and makes every following training-mode
// forward pass (with Training set) fold its batch statistics into them with equal weight, so
// that after k passes they are the mean over the k batches of the batch mean and of the
// unbiased batch variance (PyTorch's momentum=None), until StopCalibration. It serves to
// re-estimate the statistics of a trained model with its parameters frozen (train.Recalibrate);
// training never calls it, and without it the momentum update is unchanged.
func (s *BNState) StartCalibration() {
	clear(s.RunMean)
	clear(s.RunVar)
	s.calibrating, s.batches = true, 0
}

// Pass counts a forward pass for a calibration: during one (StartCalibration), a training
// pass that is not a replay returns the number of passes averaged including itself; otherwise
// 0 (the momentum update, or no update at all for a replay or in evaluation).
func (s *BNState) Pass(replay bool) int {
	if !s.Training || !s.calibrating || replay {
		return 0
	}
	s.batches++
	return s.batches
}

// StopCalibration returns to the momentum update and returns the number of batches averaged.
func (s *BNState) StopCalibration() int {
	s.calibrating = false
	return s.batches
}

// NewBNState returns running statistics for d features: mean 0, variance 1, training on.
func NewBNState(name string, d int) *BNState {
	s := &BNState{Name: name, RunMean: make([]float64, d), RunVar: make([]float64, d), Training: true}
	for i := range s.RunVar {
		s.RunVar[i] = 1
	}
	return s
}

// BatchNorm normalises the kept rows of x ([rows, d]) per column and returns γ⊙x̂+β
// (docs/protocol.md §"Batch normalisation"). In training the statistics are the mean and biased
// variance over the rows mask keeps, and the running statistics are updated with momentum 0.1 and
// the unbiased variance; in evaluation the running statistics are used. Rows the mask drops come
// out as zeros and get no gradient.
func BatchNorm(x, gamma, beta *gorgonia.Node, st *BNState, mask *Mask) (*gorgonia.Node, error) {
	return batchNorm(x, gamma, beta, st, mask, false, nil)
}

// BatchNormRelu is res + ReLU(BatchNorm(x, γ, β)) in one op (the normalisation, activation and
// residual connection of a GatedGCN layer); without res (nil) it is ReLU(BatchNorm(x, γ, β)).
// Rows the mask drops come out as res's rows (zeros without res).
func BatchNormRelu(x, gamma, beta *gorgonia.Node, st *BNState, mask *Mask, res *gorgonia.Node) (*gorgonia.Node, error) {
	if res != nil && !res.Shape().Eq(x.Shape()) {
		return nil, fmt.Errorf("batch norm %q: residual %v, input %v", st.Name, res.Shape(), x.Shape())
	}
	return batchNorm(x, gamma, beta, st, mask, true, res)
}

func batchNorm(x, gamma, beta *gorgonia.Node, st *BNState, mask *Mask, relu bool, res *gorgonia.Node) (*gorgonia.Node, error) {
	d := len(st.RunMean)
	if x.Dims() != 2 || x.Shape()[0] != len(mask.Keep) || x.Shape()[1] != d {
		return nil, fmt.Errorf("batch norm %q: input shape %v, want [%d, %d]", st.Name, x.Shape(), len(mask.Keep), d)
	}
	if gamma.Dims() != 1 || beta.Dims() != 1 || gamma.Shape()[0] != d || beta.Shape()[0] != d {
		return nil, fmt.Errorf("batch norm %q: γ %v and β %v, want [%d]", st.Name, gamma.Shape(), beta.Shape(), d)
	}
	s := &bnState{bn: st, mask: mask, relu: relu}
	name, kind, gkind := "BatchNorm", prog.BatchNorm, prog.BatchNormGrad
	if relu {
		name, kind, gkind = "BatchNormRelu", prog.BatchNormRelu, prog.BatchNormReluGrad
	}
	in := gorgonia.Nodes{x, gamma, beta}
	ranks := []int{2, 1, 1, 2}
	if res != nil {
		in, ranks = append(in, res), []int{2, 1, 1, 2, 2}
	}
	op := newFuncOp(kind, fmt.Sprintf("%s{%s}", name, st.Name), len(in), sameAs(0), bnForward[float64](s), bnForward[float32](s))
	op.ranks = ranks
	op.check = s.checkInput
	op.dev = DeviceOp{BN: st, Mask: mask, State: s}
	op.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		// The x gradient's op (inputs x, γ, β, dy) also sums dγ and dβ, which two small ops copy
		// out after it (they take dx as input to run after it). The residual's gradient is dy.
		dx := newFuncOp(gkind, fmt.Sprintf("%sGrad{%s,x}", name, st.Name), 4, sameAs(0), bnBackward[float64](s), bnBackward[float32](s))
		dx.ranks = []int{2, 1, 1, 2, 2}
		dx.check = s.ready
		dx.dev = DeviceOp{BN: st, Mask: mask, State: s}
		dX, err := apply(dx, in[0], in[1], in[2], g)
		if err != nil {
			return nil, err
		}
		grads := gorgonia.Nodes{dX, nil, nil}
		for i := range 2 {
			cp := newFuncOp(gkind, fmt.Sprintf("%sGrad{%s,%s}", name, st.Name, []string{"γ", "β"}[i]), 2, sameAs(1),
				copySums[float64](s, i), copySums[float32](s, i))
			cp.ranks = []int{2, 1, 1}
			cp.dev = DeviceOp{BN: st, Mask: mask, State: s, Which: i + 1}
			if grads[i+1], err = apply(cp, dX, in[i+1]); err != nil {
				return nil, err
			}
		}
		if len(in) == 4 {
			grads = append(grads, g)
		}
		return grads, nil
	}
	n, err := gorgonia.ApplyOp(op, in...)
	if err != nil {
		return nil, fmt.Errorf("batch norm %q: %w", st.Name, err)
	}
	return n, nil
}

// bnState is what a batch norm's forward pass keeps for its gradient ops: the statistics it
// normalised with; the x gradient's op leaves dγ and dβ in it.
type bnState struct {
	bn   *BNState
	mask *Mask
	relu bool // the op is BatchNormRelu
	kern.BatchNormState
	grads any // dγ and dβ in the element type, 2·d
}

func (s *bnState) checkInput(sh []tensor.Shape) error {
	if sh[0][0] != len(s.mask.Keep) || sh[0][1] != len(s.bn.RunMean) {
		return fmt.Errorf("input %v, want %dx%d", sh[0], len(s.mask.Keep), len(s.bn.RunMean))
	}
	if s.bn.Training {
		return prog.CheckBatchRows(s.mask.Keep)
	}
	return nil
}

// ready checks that a forward pass of the gradient's shape ran (inputs x, γ, dy).
func (s *bnState) ready(sh []tensor.Shape) error {
	if len(s.Mean) != sh[0][1] || sh[0][0] != len(s.mask.Keep) {
		return fmt.Errorf("no forward pass of shape %v to differentiate", sh[0])
	}
	return nil
}

// bnForward: kern.BatchNorm, in training with the running statistics' momentum update, or
// during a calibration their cumulative mean.
func bnForward[T kern.Float](s *bnState) kernel[T] {
	return func(out []T, in [][]T, sh []tensor.Shape) {
		rows, d := sh[0][0], sh[0][1]
		st := s.bn
		o := kern.BNOpts{Eps: BNEps, Momentum: BNMomentum, Relu: s.relu, Average: st.Pass(false)}
		b := kern.BatchNormBufs[T]{X: in[0], Gamma: in[1], Beta: in[2], Keep: s.mask.Keep,
			RunMean: st.RunMean, RunVar: st.RunVar, Out: out}
		if len(in) == 4 {
			b.Res = in[3]
		}
		kern.BatchNormForward(&s.BatchNormState, b, rows, d, st.Training, o)
	}
}

// bnBackward takes x, γ, β and the output gradient g: kern.BatchNormBackward, through the ReLU
// for BatchNormRelu. It writes dx and leaves dγ and dβ for copySums.
func bnBackward[T kern.Float](s *bnState) kernel[T] {
	return func(dx []T, in [][]T, sh []tensor.Shape) {
		rows, d := sh[0][0], sh[0][1]
		grads := kern.Grow[T](s.grads, 2*d)
		s.grads = grads
		b := kern.BatchNormBufs[T]{X: in[0], Gamma: in[1], Beta: in[2], Keep: s.mask.Keep}
		kern.BatchNormGrad(&s.BatchNormState, dx, grads[:d], grads[d:], in[3], b, rows, d, s.bn.Training, s.relu, nil)
	}
}

// copySums is the kernel of the dγ (which 0) and dβ (which 1) ops: what the x gradient's op left
// in s.
func copySums[T kern.Float](s *bnState, which int) kernel[T] {
	return func(out []T, _ [][]T, _ []tensor.Shape) {
		g := s.grads.([]T)
		copy(out, g[which*len(out):(which+1)*len(out)])
	}
}
