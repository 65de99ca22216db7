// batchnorm.cu: masked BatchNorm1d over the kept rows, forward (training and evaluation) and
// backward, with the running statistics kept on the device.
//
// CPU twin: ops.BatchNorm in ops/batchnorm.go (bnForward, bnBackward; rows in kern/vec.go);
// docs/protocol.md §"Batch normalisation". Training uses the mean and biased variance of the kept
// rows and updates the running statistics with momentum 0.1 and the unbiased variance; evaluation
// uses the running statistics. Dropped rows come out as zeros and get no gradient.
//
// Shapes: x, out, dy, dx [rows, d]; keep [rows] int32 (non-zero: a real row);
// gamma, beta, mean, invstd, run_mean, run_var, dgamma, dbeta [d].
// Column kernels run on blocks of RW_COL_X × RW_COL_Y threads, one block per RW_COL_X columns
// and row chunk: threadIdx.x picks the column (coalesced reads), threadIdx.y strides over the
// chunk's rows. With many rows the launchers split the rows into chunks (common.cuh), and the
// last block of each column tile to finish combines the chunks in fixed order, in the same
// launch: bn_train_stats is one launch, bn_backward one launch for the sums and one
// (bn_backward_dx) for the element-wise pass that uses them. With one chunk bn_backward writes
// dx in the same block, as the sums are there.
// xbf: x is stored in bf16 (common.cuh; the executor's train.precision bf16 stores GatedGCN's ê,
// the edges' batch norm's x, so); everything else stays float32.
#include "common.cuh"
#include "bnstats.cuh"

// bn_train_stats: the training statistics of a stored x (bn_stats_pass, bnstats.cuh).
extern "C" __global__ void bn_train_stats(float* mean, float* invstd, float* run_mean,
                                          float* run_var, double* part, unsigned* count,
                                          const float* x, const int* keep, int rows, int d,
                                          int rpc, float eps, float momentum, int xbf) {
  bn_stats_pass<false>(BnLoad{x, d, xbf}, BnStats{mean, invstd, run_mean, run_var, part, count, keep, eps, momentum},
                       rows, d, rpc);
}

// bn_eval_stats: mean = running mean, invstd = 1/sqrt(running var + eps).
extern "C" __global__ void bn_eval_stats(float* mean, float* invstd, const float* run_mean,
                                         const float* run_var, int d, float eps) {
  RW_FOR(c, d) {
    mean[c] = run_mean[c];
    invstd[c] = (float)(1.0 / sqrt((double)run_var[c] + (double)eps));
  }
}

// bn_apply: out = gamma·xhat + beta on kept rows, with xhat = (x − mean)·invstd
// (rw_bn_xhat), zeros elsewhere; with relu, out = max(out, 0) and then + res where res is
// given: nn.BatchNormRelu's res + ReLU(BN(x)) in one pass, the same float operations as ew_relu
// and ew_add after it. xhat is not stored: the backward kernels recompute it from x.
extern "C" __global__ void bn_apply(float* out, const float* x, const float* mean,
                                    const float* invstd, const float* gamma, const float* beta,
                                    const int* keep, const float* res, int rows, int d, int relu,
                                    int xbf) {
  RW_FOR(e, (long long)rows * d) {
    int r = (int)(e / d);
    int c = (int)(e - (long long)r * d);
    float y = 0.0f;
    if (keep[r]) y = gamma[c] * rw_bn_xhat(rw_ld(x, xbf, e), mean[c], invstd[c]) + beta[c];
    if (relu) y = fmaxf(y, 0.0f);
    out[e] = res ? y + res[e] : y;
  }
}

// bn_backward: with S1 = Σ dy and S2 = Σ dy·xhat over the R kept rows of a column,
// dbeta = S1, dgamma = S2, and dx = gamma·invstd·(dy − S1/R − xhat·S2/R) in training,
// gamma·invstd·dy in evaluation, on kept rows (zeros elsewhere). Grid: column tiles × row
// chunks of rpc rows. With one chunk the block has the sums of every row and writes dx too.
// With several, each block writes its chunk's part[(chunk·3 + j)·d + c] (j = 0: Σ dy,
// 1: Σ dy·xhat, 2: count of kept rows), the last block of a column tile adds them in chunk
// order into tot[j·d + c] (double) and writes dgamma and dbeta, and bn_backward_dx, launched
// next, is the element-wise pass over every row that reads tot. With sums_only every launch
// (one chunk too) writes tot, into the caller's buffer, and no dx: the executor folded the dx
// pass into the gated aggregation's gradient (gated.cu), which reads tot. xhat is recomputed
// from the forward pass's input x and its mean and invstd (rw_bn_xhat: the bits bn_apply
// used).
//
// With beta given (nn.BatchNormRelu), dy is the gradient g of the ReLU's output gated by the
// forward pass's sign, g where gamma·xhat + beta > 0, else 0 (rw_relu_dy), computed where it is
// read instead of stored.
extern "C" __global__ void bn_backward(float* dx, float* dgamma, float* dbeta, double* tot,
                                       double* part, unsigned* count, const float* dy,
                                       const float* x, const float* mean, const float* invstd,
                                       const float* gamma, const float* beta, const int* keep,
                                       int rows, int d, int rpc, int training, int sums_only,
                                       int xbf) {
  __shared__ double sh[RW_COL_Y][RW_COL_X + 1];
  __shared__ int last;
  int c = blockIdx.x * RW_COL_X + threadIdx.x;
  int r0, r1;
  rw_chunk_rows(rows, rpc, &r0, &r1);
  double v[3];
  XhatOfX xs{x, mean, invstd, xbf};
  rw_col_dy_sums(dy, xs, gamma, beta, keep, r0, r1, d, c, sh, &v[0], &v[1], &v[2]);
  bool mine = rw_chunk_combine(v, part, count, d, c, &last, sh);
  if (mine) {
    dgamma[c] = (float)v[1];
    dbeta[c] = (float)v[0];
  }
  if (gridDim.y > 1 || sums_only) { // the sums for bn_backward_dx (or gated_backward)
    if (mine) {
      tot[c] = v[0];
      tot[d + c] = v[1];
      tot[2 * d + c] = v[2];
    }
    return;
  }
  if (c >= d) return; // one chunk: dx here, every thread of the column (it has the sums)
  double scale = (double)gamma[c] * invstd[c];
  double n = v[2] > 0.0 ? v[2] : 1.0;
  for (int r = threadIdx.y; r < rows; r += RW_COL_Y) {
    long long e = (long long)r * d + c;
    if (!keep[r]) {
      dx[e] = 0.0f;
      continue;
    }
    float xh = xs.at(e, c);
    dx[e] = rw_bn_dx(scale, rw_relu_dy(dy, xh, gamma, beta, e, c), xh, v[0], v[1], n, training);
  }
}

// bn_backward_dx: dx = rw_bn_dx(…) on kept rows, zeros elsewhere, from the sums tot that
// bn_backward's chunked launch left (grid-stride over every element: rw_bn_dx_at).
extern "C" __global__ void bn_backward_dx(float* dx, const float* dy, const float* x,
                                          const float* mean, const float* invstd, const float* gamma,
                                          const float* beta, const int* keep, const double* tot,
                                          int rows, int d, int training, int xbf) {
  RW_FOR(e, (long long)rows * d) {
    int r = (int)(e / d);
    int c = (int)(e - (long long)r * d);
    dx[e] = rw_bn_dx_at(dy, x, xbf, mean, invstd, gamma, beta, keep, tot, r, e, c, d, training);
  }
}
