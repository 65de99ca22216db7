package ops

import (
	"fmt"
	"github.com/rewiregnn/rewiregnn/prog"
	"math"

	"github.com/rewiregnn/rewiregnn/kern"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BNEps is the constant added to the variance (PyTorch BatchNorm1d's default).
const BNEps = 1e-5

// BNMomentum is the weight of the batch statistics in the running statistics.
const BNMomentum = 0.1

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

// StopCalibration returns to the momentum update and returns the number of batches averaged.
func (s *BNState) StopCalibration() int {
	s.calibrating = false
	return s.batches
}

// average folds one batch's mean and unbiased variance of column c into the running statistics
// as the batches-th term of their cumulative mean.
func (s *BNState) average(c int, mean, variance float64) {
	w := 1 / float64(s.batches)
	s.RunMean[c] += (mean - s.RunMean[c]) * w
	s.RunVar[c] += (variance - s.RunVar[c]) * w
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
	op := newFuncOp(kind, fmt.Sprintf("%s{%s}", name, st.Name), len(in), sameAs(0), nil, nil)
	op.p64, op.p32 = bnForward[float64](s), bnForward[float32](s)
	op.ranks = ranks
	op.check = s.checkInput
	op.dev = DeviceOp{BN: st, Mask: mask, State: s}
	op.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		// The x gradient's op (inputs x, γ, β, dy) also sums dγ and dβ, which two small ops copy
		// out after it (they take dx as input to run after it). The residual's gradient is dy.
		dx := newFuncOp(gkind, fmt.Sprintf("%sGrad{%s,x}", name, st.Name), 4, sameAs(0), bnBackward[float64](s), bnBackward[float32](s))
		dx.ranks = []int{2, 1, 1, 2, 2}
		dx.check = s.ready
		dx.sumsIn = true
		dx.dev = DeviceOp{BN: st, Mask: mask, State: s}
		dX, err := apply(dx, in[0], in[1], in[2], g)
		if err != nil {
			return nil, err
		}
		grads := gorgonia.Nodes{dX, nil, nil}
		for i, sums := range []*[]float64{&s.dgamma, &s.dbeta} {
			cp := newFuncOp(gkind, fmt.Sprintf("%sGrad{%s,%s}", name, st.Name, []string{"γ", "β"}[i]), 2, sameAs(1),
				copySums[float64](sums), copySums[float32](sums))
			cp.ranks = []int{2, 1, 1}
			cp.after = true
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
	bn            *BNState
	mask          *Mask
	relu          bool // the op is BatchNormRelu
	kept          int
	mean, invStd  []float64
	dgamma, dbeta []float64
	sum1, sum2    []float64 // the forward pass's column sums
	cols          any       // per-column vectors in the element type, 4 of d
	parts         any       // per-chunk column sums, 2·d per chunk
}

func (s *bnState) checkInput(sh []tensor.Shape) error {
	if sh[0][0] != len(s.mask.Keep) || sh[0][1] != len(s.bn.RunMean) {
		return fmt.Errorf("input %v, want %dx%d", sh[0], len(s.mask.Keep), len(s.bn.RunMean))
	}
	if kept := s.mask.Count(); s.bn.Training && kept < 2 {
		return fmt.Errorf("%d real rows; training statistics need at least 2", kept)
	}
	return nil
}

// ready checks that a forward pass of the gradient's shape ran (inputs x, γ, dy).
func (s *bnState) ready(sh []tensor.Shape) error {
	if len(s.mean) != sh[0][1] || sh[0][0] != len(s.mask.Keep) {
		return fmt.Errorf("no forward pass of shape %v to differentiate", sh[0])
	}
	return nil
}

// bnChunk is the number of rows per partial column sum; the partial sums are added in a fixed
// order, so the statistics do not depend on the number of workers.
const bnChunk = 256

// colSums adds up, per column, f's two row sums over the kept rows in fixed chunks of rows
// (in parallel), returning them in float64.
func colSums[T kern.Float](s *bnState, rows, d int, s1, s2 []float64, f func(p1, p2 []T, r int)) {
	nc := (rows + bnChunk - 1) / bnChunk
	parts := kern.Grow[T](s.parts, nc*2*d)
	s.parts = parts
	kern.ParallelChunks(nc, func(c int) {
		p1, p2 := parts[c*2*d:c*2*d+d], parts[c*2*d+d:(c+1)*2*d]
		clear(p1)
		clear(p2)
		for r := c * bnChunk; r < min(rows, (c+1)*bnChunk); r++ {
			if s.mask.Keep[r] {
				f(p1, p2, r)
			}
		}
	})
	clear(s1)
	clear(s2)
	for c := 0; c < nc; c++ {
		for j := 0; j < d; j++ {
			s1[j] += float64(parts[c*2*d+j])
			s2[j] += float64(parts[c*2*d+d+j])
		}
	}
}

// bnForward: in training, the column means and variances of the kept rows (sums of x − k for
// k the first kept row, which keeps them accurate), and the running statistics' update; then
// out = (x − μ)·γ/σ + β on kept rows, 0 on the others. A replay (RunOpts.Replay: the executor
// recomputing the step for the backward pass) leaves the running statistics alone.
func bnForward[T kern.Float](s *bnState) planKernel[T] {
	return func(pl *RunOpts, out []T, in [][]T, sh []tensor.Shape) {
		replay := pl != nil && pl.Replay
		x, gamma, beta := in[0], in[1], in[2]
		rows, d := sh[0][0], sh[0][1]
		st := s.bn
		s.mean, s.invStd = scratch(&s.mean, d), scratch(&s.invStd, d)
		cols := kern.Grow[T](s.cols, 4*d)
		s.cols = cols
		mu, p, k := cols[:d], cols[d:2*d], cols[2*d:3*d]
		s.kept = s.mask.Count()
		if st.Training {
			first := 0
			for !s.mask.Keep[first] {
				first++
			}
			copy(k, x[first*d:(first+1)*d])
			s1, s2 := scratch(&s.sum1, d), scratch(&s.sum2, d)
			colSums(s, rows, d, s1, s2, func(p1, p2 []T, r int) { kern.StatsRow(p1, p2, x[r*d:(r+1)*d], k) })
			n := float64(s.kept)
			if st.calibrating && !replay {
				st.batches++
			}
			for c := 0; c < d; c++ {
				m1 := s1[c] / n
				ss := max(s2[c]-s1[c]*m1, 0) // Σ (x − mean)²
				s.mean[c] = float64(k[c]) + m1
				switch {
				case replay:
				case st.calibrating:
					st.average(c, s.mean[c], ss/(n-1))
				default:
					st.RunMean[c] = (1-BNMomentum)*st.RunMean[c] + BNMomentum*s.mean[c]
					st.RunVar[c] = (1-BNMomentum)*st.RunVar[c] + BNMomentum*ss/(n-1)
				}
				s.invStd[c] = 1 / math.Sqrt(ss/n+BNEps)
			}
		} else {
			for c := 0; c < d; c++ {
				s.mean[c] = st.RunMean[c]
				s.invStd[c] = 1 / math.Sqrt(st.RunVar[c]+BNEps)
			}
		}
		for c := 0; c < d; c++ {
			mu[c] = T(s.mean[c])
			p[c] = T(float64(gamma[c]) * s.invStd[c])
		}
		var res []T
		if len(in) == 4 {
			res = in[3]
		}
		kern.ParallelRange(rows, d, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				o, xr := out[r*d:(r+1)*d], x[r*d:(r+1)*d]
				switch {
				case !s.mask.Keep[r] && res != nil:
					copy(o, res[r*d:(r+1)*d])
				case !s.mask.Keep[r]:
					clear(o)
				case res != nil:
					kern.AffineReluAddRow(o, xr, mu, p, beta, res[r*d:(r+1)*d])
				case s.relu:
					kern.AffineReluRow(o, xr, mu, p, beta)
				default:
					kern.AffineRow(o, xr, mu, p, beta)
				}
			}
		})
	}
}

// bnBackward takes x, γ, β and the output gradient g; dy = g, or with the ReLU, g where the
// normalised output γ⊙x̂+β is positive (recomputed from x), else 0. With S1 = Σ dy and
// S2 = Σ dy⊙(x − μ) over the R kept rows, dβ = S1 and dγ = S2/σ; in training
// dx = γ/σ ⊙ (dy − S1/R − x̂ ⊙ S2/(σR)), in evaluation dx = γ/σ ⊙ dy, on kept rows (0 on the
// others).
func bnBackward[T kern.Float](s *bnState) kernel[T] {
	return func(dx []T, in [][]T, sh []tensor.Shape) {
		x, gamma, beta, dy := in[0], in[1], in[2], in[3]
		rows, d := sh[0][0], sh[0][1]
		cols := kern.Grow[T](s.cols, 7*d)
		s.cols = cols
		mu, p, a, b, c := cols[:d], cols[d:2*d], cols[4*d:5*d], cols[5*d:6*d], cols[6*d:7*d]
		s.dgamma, s.dbeta = scratch(&s.dgamma, d), scratch(&s.dbeta, d)
		for j := 0; j < d; j++ {
			mu[j] = T(s.mean[j])
			p[j] = T(float64(gamma[j]) * s.invStd[j])
		}
		colSums(s, rows, d, s.dbeta, s.dgamma, func(p1, p2 []T, r int) {
			if s.relu {
				kern.StatsReluRow(p1, p2, dy[r*d:(r+1)*d], x[r*d:(r+1)*d], mu, p, beta)
			} else {
				kern.Stats2Row(p1, p2, dy[r*d:(r+1)*d], x[r*d:(r+1)*d], mu)
			}
		})
		n := float64(s.kept)
		for j := 0; j < d; j++ {
			inv := s.invStd[j]
			gi := float64(gamma[j]) * inv
			a[j], b[j], c[j] = T(gi), 0, 0
			if s.bn.Training {
				b[j] = T(-gi * inv * inv * s.dgamma[j] / n)
				c[j] = T(-gi * s.dbeta[j] / n)
			}
			s.dgamma[j] *= inv
		}
		var sum []T // a summand the executor folded in (Func.SumsIn)
		if len(in) > 4 {
			sum = in[4]
		}
		kern.ParallelRange(rows, d, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				o := dx[r*d : (r+1)*d]
				switch {
				case !s.mask.Keep[r]:
					clear(o)
				case s.relu:
					kern.BNBackReluRow(o, dy[r*d:(r+1)*d], x[r*d:(r+1)*d], mu, p, beta, a, b, c)
				default:
					kern.BNBackRow(o, dy[r*d:(r+1)*d], x[r*d:(r+1)*d], mu, a, b, c)
				}
				if sum != nil {
					kern.AddTo(o, sum[r*d:(r+1)*d])
				}
			}
		})
	}
}

// copySums is the kernel of the dγ and dβ ops: the sums the x gradient's op left in *sums.
func copySums[T kern.Float](sums *[]float64) kernel[T] {
	return func(out []T, _ [][]T, _ []tensor.Shape) {
		for i, v := range *sums {
			out[i] = T(v)
		}
	}
}
