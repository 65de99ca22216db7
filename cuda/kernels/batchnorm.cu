// batchnorm.cu: masked BatchNorm1d over the kept rows, forward (training and evaluation) and
// backward, with the running statistics kept on the device.
//
// CPU twin: ops.BatchNorm in ops/batchnorm.go (bnForward, bnBackward; rows in kern/vec.go);
// docs/protocol.md §"Batch normalisation". Training uses the mean and biased variance of the kept
// rows and updates the running statistics with momentum 0.1 and the unbiased variance; evaluation
// uses the running statistics. Dropped rows come out as zeros and get no gradient.
//
// Shapes: x, xhat, out, dy, dx [rows, d]; keep [rows] int32 (non-zero: a real row);
// gamma, beta, mean, invstd, run_mean, run_var, dgamma, dbeta [d].
// Column kernels run on blocks of RW_COL_X × RW_COL_Y threads, one block per RW_COL_X columns:
// threadIdx.x picks the column (coalesced reads), threadIdx.y strides over rows. With many
// rows the launchers split the rows into chunks as well (common.cuh): the *_part kernels
// reduce one chunk each, the combine kernels add the chunks in fixed order, and bn_backward_dx
// is the element-wise pass that uses the sums. With one chunk the fused kernels
// (bn_train_stats, bn_backward) do everything in one launch, as before.
#include "common.cuh"

// bn_stats_store writes column c's statistics from the mean mu, the count cnt and the centred
// sum of squares q of its kept rows, and updates its running statistics.
__device__ __forceinline__ void bn_stats_store(int c, double mu, double cnt, double q,
                                               float* mean, float* invstd, float* run_mean,
                                               float* run_var, float eps, float momentum) {
  double var = cnt > 0.0 ? q / cnt : 0.0;
  double unbiased = cnt > 1.0 ? q / (cnt - 1.0) : var;
  double m = momentum;
  mean[c] = (float)mu;
  invstd[c] = (float)(1.0 / sqrt(var + (double)eps));
  run_mean[c] = (float)((1.0 - m) * run_mean[c] + m * mu);
  run_var[c] = (float)((1.0 - m) * run_var[c] + m * unbiased);
}

// bn_dx is one element of bn_backward's dx, from the column sums s1, s2 over n kept rows.
__device__ __forceinline__ float bn_dx(double scale, float dy, float xh, double s1, double s2,
                                       double n, int training) {
  if (training) return (float)(scale * (dy - s1 / n - xh * s2 / n));
  return (float)(scale * dy);
}

// bn_col_sum_count sets *s = Σ x and *cnt = the count over the kept rows in [r0, r1) of column
// c (0 for c ≥ d), each summed over the block's column (every thread must call it).
__device__ __forceinline__ void bn_col_sum_count(const float* x, const int* keep, int r0, int r1,
                                                 int d, int c, double (*sh)[RW_COL_X + 1],
                                                 double* s, double* cnt) {
  double a = 0.0, n = 0.0;
  if (c < d)
    for (int r = r0 + threadIdx.y; r < r1; r += RW_COL_Y)
      if (keep[r]) {
        a += x[(long long)r * d + c];
        n += 1.0;
      }
  *s = rw_col_reduce(a, sh);
  *cnt = rw_col_reduce(n, sh);
}

// bn_col_sq returns Σ (x − mu)² over the kept rows in [r0, r1) of column c (0 for c ≥ d),
// summed over the block's column (every thread must call it).
__device__ __forceinline__ double bn_col_sq(const float* x, const int* keep, int r0, int r1, int d,
                                           int c, double mu, double (*sh)[RW_COL_X + 1]) {
  double q = 0.0;
  if (c < d)
    for (int r = r0 + threadIdx.y; r < r1; r += RW_COL_Y)
      if (keep[r]) {
        double dv = x[(long long)r * d + c] - mu;
        q += dv * dv;
      }
  return rw_col_reduce(q, sh);
}

// bn_train_stats: per column, over kept rows, mean and 1/sqrt(biased var + eps); running
// statistics updated in place (they are the op's state, not an input).
extern "C" __global__ void bn_train_stats(float* mean, float* invstd, float* run_mean,
                                          float* run_var, const float* x, const int* keep,
                                          int rows, int d, float eps, float momentum) {
  __shared__ double sh[RW_COL_Y][RW_COL_X + 1];
  int c = blockIdx.x * RW_COL_X + threadIdx.x;
  double s, cnt;
  bn_col_sum_count(x, keep, 0, rows, d, c, sh, &s, &cnt);
  double mu = cnt > 0.0 ? s / cnt : 0.0;
  double q = bn_col_sq(x, keep, 0, rows, d, c, mu, sh);
  if (c < d && threadIdx.y == 0)
    bn_stats_store(c, mu, cnt, q, mean, invstd, run_mean, run_var, eps, momentum);
}

// The chunked bn_train_stats keeps its two passes (the mean first, then the centred sum of
// squares: safer than E[x²] − E[x]²), each a chunked reduction with a combine in chunk order:
//   bn_stats_sum_part  part[(chunk·2 + 0)·d + c] = Σ x, part[(chunk·2 + 1)·d + c] = count;
//   bn_stats_mean      tot[c] = mean, tot[d + c] = count (double);
//   bn_stats_sq_part   part[chunk·d + c] = Σ (x − mean)²;
//   bn_stats_finish    mean, invstd and the running statistics, as bn_train_stats.
extern "C" __global__ void bn_stats_sum_part(double* part, const float* x, const int* keep,
                                             int rows, int d, int rpc) {
  __shared__ double sh[RW_COL_Y][RW_COL_X + 1];
  int c = blockIdx.x * RW_COL_X + threadIdx.x;
  int r0, r1;
  rw_chunk_rows(rows, rpc, &r0, &r1);
  double s, cnt;
  bn_col_sum_count(x, keep, r0, r1, d, c, sh, &s, &cnt);
  if (c < d && threadIdx.y == 0) {
    double* p = rw_part(part, 2, d, c);
    p[0] = s;
    p[d] = cnt;
  }
}

extern "C" __global__ void bn_stats_mean(double* tot, const double* part, int chunks, int d) {
  RW_FOR(c, d) {
    double s = rw_chunk_sum(part, chunks, 2, 0, d, (int)c);
    double cnt = rw_chunk_sum(part, chunks, 2, 1, d, (int)c);
    tot[c] = cnt > 0.0 ? s / cnt : 0.0;
    tot[d + c] = cnt;
  }
}

extern "C" __global__ void bn_stats_sq_part(double* part, const float* x, const int* keep,
                                            const double* tot, int rows, int d, int rpc) {
  __shared__ double sh[RW_COL_Y][RW_COL_X + 1];
  int c = blockIdx.x * RW_COL_X + threadIdx.x;
  int r0, r1;
  rw_chunk_rows(rows, rpc, &r0, &r1);
  double q = bn_col_sq(x, keep, r0, r1, d, c, c < d ? tot[c] : 0.0, sh);
  if (c < d && threadIdx.y == 0) *rw_part(part, 1, d, c) = q;
}

extern "C" __global__ void bn_stats_finish(float* mean, float* invstd, float* run_mean,
                                           float* run_var, const double* part,
                                           const double* tot, int chunks, int d, float eps,
                                           float momentum) {
  RW_FOR(c, d) {
    double q = rw_chunk_sum(part, chunks, 1, 0, d, (int)c);
    bn_stats_store((int)c, tot[c], tot[d + c], q, mean, invstd, run_mean, run_var, eps,
                   momentum);
  }
}

// bn_eval_stats: mean = running mean, invstd = 1/sqrt(running var + eps).
extern "C" __global__ void bn_eval_stats(float* mean, float* invstd, const float* run_mean,
                                         const float* run_var, int d, float eps) {
  RW_FOR(c, d) {
    mean[c] = run_mean[c];
    invstd[c] = (float)(1.0 / sqrt((double)run_var[c] + (double)eps));
  }
}

// bn_apply: xhat = (x − mean)·invstd and out = gamma·xhat + beta on kept rows, zeros elsewhere.
extern "C" __global__ void bn_apply(float* out, float* xhat, const float* x, const float* mean,
                                    const float* invstd, const float* gamma, const float* beta,
                                    const int* keep, int rows, int d) {
  RW_FOR(e, (long long)rows * d) {
    int r = (int)(e / d);
    int c = (int)(e - (long long)r * d);
    if (!keep[r]) {
      xhat[e] = 0.0f;
      out[e] = 0.0f;
      continue;
    }
    float xh = (float)(((double)x[e] - mean[c]) * invstd[c]);
    xhat[e] = xh;
    out[e] = gamma[c] * xh + beta[c];
  }
}

// bn_backward, fused: with S1 = Σ dy and S2 = Σ dy·xhat over the R kept rows of a column,
// dbeta = S1, dgamma = S2, and dx = gamma·invstd·(dy − S1/R − xhat·S2/R) in training,
// gamma·invstd·dy in evaluation, on kept rows (zeros elsewhere).
extern "C" __global__ void bn_backward(float* dx, float* dgamma, float* dbeta, const float* dy,
                                       const float* xhat, const float* invstd,
                                       const float* gamma, const int* keep, int rows, int d,
                                       int training) {
  __shared__ double sh[RW_COL_Y][RW_COL_X + 1];
  int c = blockIdx.x * RW_COL_X + threadIdx.x;
  double s1, s2, cnt;
  rw_col_dy_sums(dy, xhat, keep, 0, rows, d, c, sh, &s1, &s2, &cnt);
  if (c >= d) return; // no __syncthreads below
  if (threadIdx.y == 0) {
    dgamma[c] = (float)s2;
    dbeta[c] = (float)s1;
  }
  double scale = (double)gamma[c] * invstd[c];
  double n = cnt > 0.0 ? cnt : 1.0;
  for (int r = threadIdx.y; r < rows; r += RW_COL_Y) {
    long long e = (long long)r * d + c;
    dx[e] = keep[r] ? bn_dx(scale, dy[e], xhat[e], s1, s2, n, training) : 0.0f;
  }
}

// The chunked bn_backward: bn_backward_part reduces each row chunk to part[(chunk·3 + j)·d + c]
// (j = 0: Σ dy, 1: Σ dy·xhat, 2: count of kept rows); bn_backward_combine adds the chunks in
// order into tot[j·d + c] (double) and writes dbeta = S1, dgamma = S2; bn_backward_dx is the
// element-wise pass dx = bn_dx(…) on kept rows, zeros elsewhere.
extern "C" __global__ void bn_backward_part(double* part, const float* dy, const float* xhat,
                                            const int* keep, int rows, int d, int rpc) {
  __shared__ double sh[RW_COL_Y][RW_COL_X + 1];
  int c = blockIdx.x * RW_COL_X + threadIdx.x;
  int r0, r1;
  rw_chunk_rows(rows, rpc, &r0, &r1);
  double s1, s2, cnt;
  rw_col_dy_sums(dy, xhat, keep, r0, r1, d, c, sh, &s1, &s2, &cnt);
  if (c < d && threadIdx.y == 0) {
    double* p = rw_part(part, 3, d, c);
    p[0] = s1;
    p[d] = s2;
    p[2 * d] = cnt;
  }
}

extern "C" __global__ void bn_backward_combine(float* dgamma, float* dbeta, double* tot,
                                               const double* part, int chunks, int d) {
  RW_FOR(c, d) {
    double s1 = rw_chunk_sum(part, chunks, 3, 0, d, (int)c);
    double s2 = rw_chunk_sum(part, chunks, 3, 1, d, (int)c);
    tot[c] = s1;
    tot[d + c] = s2;
    tot[2 * d + c] = rw_chunk_sum(part, chunks, 3, 2, d, (int)c);
    dgamma[c] = (float)s2;
    dbeta[c] = (float)s1;
  }
}

extern "C" __global__ void bn_backward_dx(float* dx, const float* dy, const float* xhat,
                                          const float* invstd, const float* gamma,
                                          const int* keep, const double* tot, int rows, int d,
                                          int training) {
  RW_FOR(e, (long long)rows * d) {
    int r = (int)(e / d);
    int c = (int)(e - (long long)r * d);
    if (!keep[r]) {
      dx[e] = 0.0f;
      continue;
    }
    double scale = (double)gamma[c] * invstd[c];
    double n = tot[2 * d + c] > 0.0 ? tot[2 * d + c] : 1.0;
    dx[e] = bn_dx(scale, dy[e], xhat[e], tot[c], tot[d + c], n, training);
  }
}

// bn_relu_mask: dy = g where the normalised output gamma·xhat + beta is positive, else 0: the
// ReLU's gradient inside nn.BatchNormRelu (res + ReLU(BN(x))), from the forward pass's xhat.
// CPU twin: nn.BatchNormRelu's backward (bnBackward with relu). Dropped rows have xhat = 0, and
// bn_backward gives them no gradient whatever dy holds there.
extern "C" __global__ void bn_relu_mask(float* dy, const float* g, const float* xhat,
                                        const float* gamma, const float* beta, int rows, int d) {
  RW_FOR(e, (long long)rows * d) {
    int c = (int)(e % d);
    dy[e] = gamma[c] * xhat[e] + beta[c] > 0.0f ? g[e] : 0.0f;
  }
}
