// batchnorm.cu: masked BatchNorm1d over the kept rows, forward (training and evaluation) and
// backward, with the running statistics kept on the device.
//
// CPU twin: nn.BatchNorm in nn/batchnorm.go (bnForwardCols, bnAffine, bnBackwardCols);
// REFERENCE §1.2. Training uses the mean and biased variance of the kept rows and updates the
// running statistics with momentum 0.1 and the unbiased variance; evaluation uses the running
// statistics. Dropped rows come out as zeros and get no gradient.
//
// Shapes: x, xhat, out, dy, dx [rows, d]; keep [rows] int32 (non-zero: a real row);
// gamma, beta, mean, invstd, run_mean, run_var, dgamma, dbeta [d].
// Column kernels run on blocks of RW_COL_X × RW_COL_Y threads, one block per RW_COL_X columns:
// threadIdx.x picks the column (coalesced reads), threadIdx.y strides over rows.
#include "common.cuh"

// bn_train_stats: per column, over kept rows, mean and 1/sqrt(biased var + eps); running
// statistics updated in place (they are the op's state, not an input).
extern "C" __global__ void bn_train_stats(float* mean, float* invstd, float* run_mean,
                                          float* run_var, const float* x, const int* keep,
                                          int rows, int d, float eps, float momentum) {
  __shared__ double sh[RW_COL_Y][RW_COL_X + 1];
  int c = blockIdx.x * RW_COL_X + threadIdx.x;
  bool col = c < d;
  double s = 0.0, cnt = 0.0;
  if (col)
    for (int r = threadIdx.y; r < rows; r += RW_COL_Y)
      if (keep[r]) {
        s += x[(long long)r * d + c];
        cnt += 1.0;
      }
  s = rw_col_reduce(s, sh);
  cnt = rw_col_reduce(cnt, sh);
  double mu = cnt > 0.0 ? s / cnt : 0.0;
  double q = 0.0;
  if (col)
    for (int r = threadIdx.y; r < rows; r += RW_COL_Y)
      if (keep[r]) {
        double dv = x[(long long)r * d + c] - mu;
        q += dv * dv;
      }
  q = rw_col_reduce(q, sh);
  if (col && threadIdx.y == 0) {
    double var = cnt > 0.0 ? q / cnt : 0.0;
    double unbiased = cnt > 1.0 ? q / (cnt - 1.0) : var;
    double m = momentum;
    mean[c] = (float)mu;
    invstd[c] = (float)(1.0 / sqrt(var + (double)eps));
    run_mean[c] = (float)((1.0 - m) * run_mean[c] + m * mu);
    run_var[c] = (float)((1.0 - m) * run_var[c] + m * unbiased);
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
  bool col = c < d;
  double s1 = 0.0, s2 = 0.0, cnt = 0.0;
  if (col)
    for (int r = threadIdx.y; r < rows; r += RW_COL_Y)
      if (keep[r]) {
        long long e = (long long)r * d + c;
        s1 += dy[e];
        s2 += (double)dy[e] * xhat[e];
        cnt += 1.0;
      }
  s1 = rw_col_reduce(s1, sh);
  s2 = rw_col_reduce(s2, sh);
  cnt = rw_col_reduce(cnt, sh);
  if (!col) return; // no __syncthreads below
  if (threadIdx.y == 0) {
    dgamma[c] = (float)s2;
    dbeta[c] = (float)s1;
  }
  double scale = (double)gamma[c] * invstd[c];
  double n = cnt > 0.0 ? cnt : 1.0;
  for (int r = threadIdx.y; r < rows; r += RW_COL_Y) {
    long long e = (long long)r * d + c;
    if (!keep[r]) {
      dx[e] = 0.0f;
    } else if (training) {
      dx[e] = (float)(scale * (dy[e] - s1 / n - xhat[e] * s2 / n));
    } else {
      dx[e] = (float)(scale * dy[e]);
    }
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
