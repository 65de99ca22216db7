// layernorm.cu: masked LayerNorm over each row's features, forward and backward.
//
// CPU twin: ops.LayerNorm in ops/layernorm.go (lnKernel, lnGradKernel; rows in kern/norm.go): PyTorch
// LayerNorm with biased variance; dropped rows come out as zeros and get no gradient.
//
// Shapes: x, xhat, out, dy, dx [rows, d]; keep [rows] int32; invstd [rows] (0 on dropped
// rows); gamma, beta, dgamma, dbeta [d].
// Row kernels give each row to one warp (lanes stride over the features); the parameter
// gradients are column sums on RW_COL_X × RW_COL_Y blocks.
#include "common.cuh"

// ln_forward: per kept row, xhat = (x − mean)/sqrt(var + eps), out = gamma·xhat + beta.
extern "C" __global__ void ln_forward(float* out, float* xhat, float* invstd, const float* x,
                                      const float* gamma, const float* beta, const int* keep,
                                      int rows, int d, float eps) {
  RW_WARP_FOR(r, rows) {
    const float* xr = x + r * d;
    float* xh = xhat + r * d;
    float* o = out + r * d;
    if (!keep[r]) { // the whole warp takes this branch
      for (int c = RW_LANE; c < d; c += 32) {
        xh[c] = 0.0f;
        o[c] = 0.0f;
      }
      if (RW_LANE == 0) invstd[r] = 0.0f;
      continue;
    }
    double s = 0.0;
    for (int c = RW_LANE; c < d; c += 32) s += xr[c];
    double mu = rw_warp_sum(s) / d;
    double q = 0.0;
    for (int c = RW_LANE; c < d; c += 32) {
      double dv = xr[c] - mu;
      q += dv * dv;
    }
    double inv = 1.0 / sqrt(rw_warp_sum(q) / d + (double)eps);
    for (int c = RW_LANE; c < d; c += 32) {
      float v = (float)((xr[c] - mu) * inv);
      xh[c] = v;
      o[c] = gamma[c] * v + beta[c];
    }
    if (RW_LANE == 0) invstd[r] = (float)inv;
  }
}

// ln_backward_x: per kept row, with g = gamma·dy, dx = invstd·(g − mean(g) − xhat·mean(g·xhat)).
extern "C" __global__ void ln_backward_x(float* dx, const float* dy, const float* xhat,
                                         const float* invstd, const float* gamma,
                                         const int* keep, int rows, int d) {
  RW_WARP_FOR(r, rows) {
    const float* g = dy + r * d;
    const float* xh = xhat + r * d;
    float* o = dx + r * d;
    if (!keep[r]) {
      for (int c = RW_LANE; c < d; c += 32) o[c] = 0.0f;
      continue;
    }
    double m1 = 0.0, m2 = 0.0;
    for (int c = RW_LANE; c < d; c += 32) {
      double gg = (double)gamma[c] * g[c];
      m1 += gg;
      m2 += gg * xh[c];
    }
    m1 = rw_warp_sum(m1) / d;
    m2 = rw_warp_sum(m2) / d;
    double inv = invstd[r];
    for (int c = RW_LANE; c < d; c += 32)
      o[c] = (float)(inv * ((double)gamma[c] * g[c] - m1 - xh[c] * m2));
  }
}

// ln_backward_params: dgamma = Σ dy·xhat and dbeta = Σ dy over the kept rows (grid: column
// tiles × row chunks of rpc rows, as col_sum). With several chunks each block writes
// part[(chunk·2 + 0)·d + c] = Σ dy and part[(chunk·2 + 1)·d + c] = Σ dy·xhat over its chunk,
// and the last block of a column tile adds them in a fixed order (rw_chunk_combine).
extern "C" __global__ void ln_backward_params(float* dgamma, float* dbeta, double* part,
                                              unsigned* count, const float* dy,
                                              const float* xhat, const int* keep, int rows,
                                              int d, int rpc) {
  __shared__ double sh[RW_COL_Y][RW_COL_X + 1];
  __shared__ int last;
  int c = blockIdx.x * RW_COL_X + threadIdx.x;
  int r0, r1;
  rw_chunk_rows(rows, rpc, &r0, &r1);
  double v[2];
  rw_col_dy_sums(dy, XhatStored{xhat}, nullptr, nullptr, keep, r0, r1, d, c, sh, &v[0], &v[1], nullptr);
  if (!rw_chunk_combine(v, part, count, d, c, &last, sh)) return;
  dbeta[c] = (float)v[0];
  dgamma[c] = (float)v[1];
}
