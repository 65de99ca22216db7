package kern

import "math"

// BNEps is the constant added to the variance of a batch norm (PyTorch BatchNorm1d's default)
// and of a layer norm.
const BNEps = 1e-5

// BNMomentum is the weight of the batch statistics in a batch norm's running statistics.
const BNMomentum = 0.1

// BNChunk is the number of rows per partial column sum of a batch norm: each chunk of rows is
// summed into its own buffer (in the element type) by whichever goroutine takes it, and the
// chunks' sums are then added in index order in float64, so the statistics and the parameter
// gradients do not depend on the number of goroutines.
const BNChunk = 256

// BatchNormBufs are the buffers of one masked batch norm over rows×d: inputs X [rows, d],
// Gamma, Beta [d], Keep [rows]; the running statistics RunMean, RunVar [d]; outputs Out
// [rows, d] and Mean, InvStd [d] (the statistics normalised with, kept for the backward pass).
// The CPU's differ from the GPU's (cuda.BatchNormBufs): no Xhat (the backward pass recomputes
// x̂ from X, Mean and InvStd), statistics in float64, and Res, a residual added to the output of
// BatchNormRelu (nil: none), and Scratch.
type BatchNormBufs[T Float] struct {
	X, Gamma, Beta  []T
	Keep            []bool
	RunMean, RunVar []float64
	Out             []T
	Mean, InvStd    []float64
	Res             []T
	Scratch         *BNScratch
}

// BNScratch is a batch norm's working memory, reused between calls: per-chunk column sums and
// per-column vectors in the element type, and the column sums in float64.
type BNScratch struct {
	parts, cols any
	s1, s2      []float64
}

// BNScratchBytes is what a BNScratch holds once a training pass over rows×d with elements of
// elem bytes has run, and with grad its backward pass too (the widest use of each buffer): the
// per-chunk sums, the per-column vectors and the float64 column sums.
func BNScratchBytes(rows, d int, elem int64, grad bool) int64 {
	chunks, cols := int64((rows+BNChunk-1)/BNChunk), int64(4*d)
	if grad {
		cols = int64(7 * d)
	}
	return elem*(chunks*2*int64(d)+cols) + 16*int64(d)
}

// BNOpts are a batch norm's constants and the CPU's variants of its forward pass.
type BNOpts struct {
	Eps, Momentum float64
	// Average > 0 (a calibration): a training pass folds its statistics into the running
	// statistics as the Average-th term of their cumulative mean, run += (batch − run)/Average,
	// instead of run = (1 − Momentum)·run + Momentum·batch.
	Average int
	// Replay: the pass recomputes a step already taken (an executor's replay step) and leaves the running
	// statistics alone.
	Replay bool
	// Relu: the output is ReLU(γ⊙x̂+β) (+ Res), BatchNormRelu.
	Relu bool
}

// BatchNorm is the forward pass of a masked batch norm (cuda.Kernels.BatchNorm). In training,
// the column means and biased variances of the kept rows (sums of x − k for k the first kept
// row, which keeps them accurate, in fixed chunks of BNChunk rows) and the update of the running
// statistics with the unbiased variance (o.Momentum, or o.Average; none for o.Replay); in
// evaluation, the running statistics. Then out = (x − μ)·γ/σ + β on kept rows, with o.Relu
// max(·, 0), plus b.Res if not nil; dropped rows get b.Res's rows, or zeros. Training needs at
// least one kept row (the callers require 2).
func BatchNorm[T Float](b BatchNormBufs[T], rows, d int, training bool, o BNOpts) {
	sc := b.Scratch
	cols := Grow[T](sc.cols, 4*d)
	sc.cols = cols
	mu, p, k := cols[:d], cols[d:2*d], cols[2*d:3*d]
	x, keep := b.X[:rows*d], b.Keep[:rows]
	mean, invStd := b.Mean[:d], b.InvStd[:d]
	if training {
		first := 0
		for !keep[first] {
			first++
		}
		copy(k, x[first*d:(first+1)*d])
		s1, s2 := grow64(&sc.s1, d), grow64(&sc.s2, d)
		bnColSums(sc, rows, d, s1, s2, func(p1, p2 []T, lo, hi int) { StatsRows(p1, p2, x[lo*d:hi*d], k, keep[lo:hi], d) })
		n := float64(countKept(keep))
		for c := 0; c < d; c++ {
			m1 := s1[c] / n
			ss := max(s2[c]-s1[c]*m1, 0) // Σ (x − mean)²
			mean[c] = float64(k[c]) + m1
			switch {
			case o.Replay:
			case o.Average > 0:
				w := 1 / float64(o.Average)
				b.RunMean[c] += (mean[c] - b.RunMean[c]) * w
				b.RunVar[c] += (ss/(n-1) - b.RunVar[c]) * w
			default:
				b.RunMean[c] = (1-o.Momentum)*b.RunMean[c] + o.Momentum*mean[c]
				b.RunVar[c] = (1-o.Momentum)*b.RunVar[c] + o.Momentum*ss/(n-1)
			}
			invStd[c] = 1 / math.Sqrt(ss/n+o.Eps)
		}
	} else {
		for c := 0; c < d; c++ {
			mean[c] = b.RunMean[c]
			invStd[c] = 1 / math.Sqrt(b.RunVar[c]+o.Eps)
		}
	}
	for c := 0; c < d; c++ {
		mu[c] = T(mean[c])
		p[c] = T(float64(b.Gamma[c]) * invStd[c])
	}
	out, beta, res, relu := b.Out, b.Beta, b.Res, o.Relu
	ParallelRange(rows, d, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			o, xr := out[r*d:(r+1)*d], x[r*d:(r+1)*d]
			switch {
			case !keep[r] && res != nil:
				copy(o, res[r*d:(r+1)*d])
			case !keep[r]:
				clear(o)
			case res != nil:
				AffineReluAddRow(o, xr, mu, p, beta, res[r*d:(r+1)*d])
			case relu:
				AffineReluRow(o, xr, mu, p, beta)
			default:
				AffineRow(o, xr, mu, p, beta)
			}
		}
	})
}

// BatchNormBackward is the backward pass of a batch norm (cuda.Kernels.BatchNormBackward) from
// the forward pass's X, Mean and InvStd and the output gradient dy: with relu (BatchNormRelu;
// cuda.Kernels.BatchNormReluBackward does the same) dy is first zeroed where the
// normalised output γ⊙x̂+β is not positive (recomputed from x, β read from b.Beta). With
// S1 = Σ dy and S2 = Σ dy⊙(x − μ) over the R kept rows (in chunks of BNChunk rows), dβ = S1 and
// dγ = S2/σ; in training dx = γ/σ ⊙ (dy − S1/R − x̂ ⊙ S2/(σR)), in evaluation dx = γ/σ ⊙ dy, on
// kept rows (0 on the others), plus sum [rows, d] if not nil (a summand the CPU executor
// folded in).
func BatchNormBackward[T Float](dx, dgamma, dbeta, dy []T, b BatchNormBufs[T], rows, d int, training, relu bool, sum []T) {
	sc := b.Scratch
	cols := Grow[T](sc.cols, 7*d)
	sc.cols = cols
	mu, p, ca, cb, cc := cols[:d], cols[d:2*d], cols[4*d:5*d], cols[5*d:6*d], cols[6*d:7*d]
	x, keep, gamma, beta := b.X[:rows*d], b.Keep[:rows], b.Gamma[:d], b.Beta
	mean, invStd := b.Mean[:d], b.InvStd[:d]
	for j := 0; j < d; j++ {
		mu[j] = T(mean[j])
		p[j] = T(float64(gamma[j]) * invStd[j])
	}
	s1, s2 := grow64(&sc.s1, d), grow64(&sc.s2, d)
	bnColSums(sc, rows, d, s1, s2, func(p1, p2 []T, lo, hi int) {
		if relu {
			StatsReluRows(p1, p2, dy[lo*d:hi*d], x[lo*d:hi*d], mu, p, beta, keep[lo:hi], d)
		} else {
			Stats2Rows(p1, p2, dy[lo*d:hi*d], x[lo*d:hi*d], mu, keep[lo:hi], d)
		}
	})
	n := float64(countKept(keep))
	for j := 0; j < d; j++ {
		inv := invStd[j]
		gi := float64(gamma[j]) * inv
		ca[j], cb[j], cc[j] = T(gi), 0, 0
		if training {
			cb[j] = T(-gi * inv * inv * s2[j] / n)
			cc[j] = T(-gi * s1[j] / n)
		}
		dbeta[j] = T(s1[j])
		dgamma[j] = T(s2[j] * inv)
	}
	ParallelRange(rows, d, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			o := dx[r*d : (r+1)*d]
			switch {
			case !keep[r]:
				clear(o)
			case relu:
				BNBackReluRow(o, dy[r*d:(r+1)*d], x[r*d:(r+1)*d], mu, p, beta, ca, cb, cc)
			default:
				BNBackRow(o, dy[r*d:(r+1)*d], x[r*d:(r+1)*d], mu, ca, cb, cc)
			}
			if sum != nil {
				AddTo(o, sum[r*d:(r+1)*d])
			}
		}
	})
}

// bnColSums adds up, per column, two row sums over fixed chunks of BNChunk rows (in parallel):
// f adds rows lo … hi−1's terms (those of the kept rows, in row order) to the chunk's sums p1 and
// p2, zero at first, in the element type; the chunks' sums are then added in index order into s1
// and s2 in float64.
func bnColSums[T Float](sc *BNScratch, rows, d int, s1, s2 []float64, f func(p1, p2 []T, lo, hi int)) {
	nc := (rows + BNChunk - 1) / BNChunk
	parts := Grow[T](sc.parts, nc*2*d)
	sc.parts = parts
	ParallelChunks(nc, func(c int) {
		p1, p2 := parts[c*2*d:c*2*d+d], parts[c*2*d+d:(c+1)*2*d]
		clear(p1)
		clear(p2)
		f(p1, p2, c*BNChunk, min(rows, (c+1)*BNChunk))
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

func countKept(keep []bool) int {
	n := 0
	for _, k := range keep {
		if k {
			n++
		}
	}
	return n
}

// grow64 returns *p resliced to n values, reallocated if too short (contents undefined).
func grow64(p *[]float64, n int) []float64 {
	if cap(*p) < n {
		*p = make([]float64, n)
	}
	*p = (*p)[:n]
	return *p
}
