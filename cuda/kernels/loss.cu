// loss.cu: the training losses, forward (a device scalar) and backward.
//
// CPU twins: kern.MaskedL1 and kern.MaskedL1Backward (ops.MaskedL1), kern.MaskedBCE and
// kern.MaskedBCEBackward (ops.MaskedBCE) in kern/loss.go, and kern.WeightedCE and
// kern.WeightedCEBackward (ops.WeightedCE); docs/protocol.md §"Losses and metrics".
//
// MaskedL1, p, y, w, dp [n]:      loss = Σ w·|p − y|;   dp = g·w·sign(p − y)
// MaskedBCE, z, y, w, dz [n]:     loss = Σ w·(max(z, 0) − z·y + log(1 + e^(−|z|)));
//                                 dz = g·w·(σ(z) − y)   (binary cross-entropy with logits)
// WeightedCE, z, dz [r, c]; labels [r] int32 (-1: no label); w [r]:
//   loss = Σ_i w_i·(logsumexp(z_i) − z_i[y_i]) / Σ_{i: y_i ≥ 0} w_i   (0 when that sum is 0)
//   dz_i = g·w_i/Σw·(softmax(z_i) − onehot(y_i)), zeros on rows without a label or weight.
// g, the upstream gradient, is a device scalar (the backward pass of a graph keeps it there).
// Reductions to a scalar run in one block (the number of graphs or rows of a batch is small
// next to the rest of the step), in double and in a fixed order.
#include "common.cuh"

// masked_l1: one block of RW_THREADS threads; out [1].
extern "C" __global__ void masked_l1(float* out, const float* p, const float* y, const float* w,
                                     int n) {
  __shared__ double sh[32];
  double s = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += (double)w[i] * fabs((double)p[i] - y[i]);
  s = rw_block_sum(s, sh);
  if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = (float)s;
}

extern "C" __global__ void masked_l1_grad(float* dp, const float* p, const float* y,
                                          const float* w, const float* g, int n) {
  float gs = g[0];
  RW_FOR(i, n) {
    float s = p[i] > y[i] ? 1.0f : (p[i] < y[i] ? -1.0f : 0.0f);
    dp[i] = gs * w[i] * s;
  }
}

// masked_l1_both: masked_l1 and masked_l1_grad in one launch (one block): the loss into out [1]
// and dp = g·w·sign(p − y), each with the bits of its own kernel.
extern "C" __global__ void masked_l1_both(float* out, float* dp, const float* p, const float* y,
                                          const float* w, const float* g, int n) {
  __shared__ double sh[32];
  float gs = g[0];
  double s = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    s += (double)w[i] * fabs((double)p[i] - y[i]);
    float sg = p[i] > y[i] ? 1.0f : (p[i] < y[i] ? -1.0f : 0.0f);
    dp[i] = gs * w[i] * sg;
  }
  s = rw_block_sum(s, sh);
  if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = (float)s;
}

// rw_bce is the binary cross-entropy of logit z against target y, in double, in the form that
// neither overflows nor loses small terms: max(z, 0) − z·y + log1p(e^(−|z|)).
__device__ __forceinline__ double rw_bce(double z, double y) {
  return fmax(z, 0.0) - z * y + log1p(exp(-fabs(z)));
}

// rw_sigmoid_d is σ(z) in double, through e^z/(1 + e^z) for z < 0 so no e^(−z) overflows.
__device__ __forceinline__ double rw_sigmoid_d(double z) {
  if (z >= 0.0) return 1.0 / (1.0 + exp(-z));
  double e = exp(z);
  return e / (1.0 + e);
}

// masked_bce: one block of RW_THREADS threads; out [1].
extern "C" __global__ void masked_bce(float* out, const float* z, const float* y, const float* w,
                                      int n) {
  __shared__ double sh[32];
  double s = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += (double)w[i] * rw_bce(z[i], y[i]);
  s = rw_block_sum(s, sh);
  if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = (float)s;
}

extern "C" __global__ void masked_bce_grad(float* dz, const float* z, const float* y,
                                           const float* w, const float* g, int n) {
  double gs = g[0];
  RW_FOR(i, n) dz[i] = (float)(gs * w[i] * (rw_sigmoid_d(z[i]) - y[i]));
}

// masked_bce_both: masked_bce and masked_bce_grad in one launch (one block), each result with
// the bits of its own kernel.
extern "C" __global__ void masked_bce_both(float* out, float* dz, const float* z, const float* y,
                                           const float* w, const float* g, int n) {
  __shared__ double sh[32];
  double gs = g[0];
  double s = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    s += (double)w[i] * rw_bce(z[i], y[i]);
    dz[i] = (float)(gs * w[i] * (rw_sigmoid_d(z[i]) - y[i]));
  }
  s = rw_block_sum(s, sh);
  if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = (float)s;
}

// ce_rows: one warp per row; rowloss[i] = w_i·(logsumexp(z_i) − z_i[y_i]) and roww[i] = w_i for
// labelled rows, both 0 otherwise (a label ≥ c counts as no label).
extern "C" __global__ void ce_rows(float* rowloss, float* roww, const float* z, const int* labels,
                                   const float* w, int r, int c) {
  RW_WARP_FOR(i, r) {
    int y = rw_valid(labels[i], c);
    const float* zi = z + i * c;
    if (y < 0) {
      if (RW_LANE == 0) rowloss[i] = roww[i] = 0.0f;
      continue;
    }
    float mx = rw_neg_inf();
    for (int k = RW_LANE; k < c; k += 32) mx = fmaxf(mx, zi[k]);
    mx = rw_warp_max(mx);
    double s = 0.0;
    for (int k = RW_LANE; k < c; k += 32) s += exp((double)zi[k] - mx);
    s = rw_warp_sum(s);
    if (RW_LANE == 0) {
      double logz = mx + log(s);
      rowloss[i] = w[i] == 0.0f ? 0.0f : (float)(w[i] * (logz - zi[y]));
      roww[i] = w[i];
    }
  }
}

// ce_reduce: one block; out [1] = Σ rowloss / Σ roww (0 when Σ roww = 0); total [1] = Σ roww.
extern "C" __global__ void ce_reduce(float* out, float* total, const float* rowloss,
                                     const float* roww, int r) {
  __shared__ double sh[32];
  double l = 0.0, t = 0.0;
  for (int i = threadIdx.x; i < r; i += blockDim.x) {
    l += rowloss[i];
    t += roww[i];
  }
  l = rw_block_sum(l, sh);
  t = rw_block_sum(t, sh);
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    out[0] = t == 0.0 ? 0.0f : (float)(l / t);
    total[0] = (float)t;
  }
}

// ce_total: one block; total [1] = Σ w_i over labelled rows (the backward pass's normaliser).
extern "C" __global__ void ce_total(float* total, const int* labels, const float* w, int r, int c) {
  __shared__ double sh[32];
  double t = 0.0;
  for (int i = threadIdx.x; i < r; i += blockDim.x)
    if (rw_valid(labels[i], c) >= 0) t += w[i];
  t = rw_block_sum(t, sh);
  if (threadIdx.x == 0 && blockIdx.x == 0) total[0] = (float)t;
}

// ce_grad: one warp per row.
extern "C" __global__ void ce_grad(float* dz, const float* z, const int* labels, const float* w,
                                   const float* total, const float* g, int r, int c) {
  RW_WARP_FOR(i, r) {
    int y = rw_valid(labels[i], c);
    const float* zi = z + i * c;
    float* di = dz + i * c;
    if (y < 0 || w[i] == 0.0f || total[0] == 0.0f) {
      for (int k = RW_LANE; k < c; k += 32) di[k] = 0.0f;
      continue;
    }
    float mx = rw_neg_inf();
    for (int k = RW_LANE; k < c; k += 32) mx = fmaxf(mx, zi[k]);
    mx = rw_warp_max(mx);
    double s = 0.0;
    for (int k = RW_LANE; k < c; k += 32) s += exp((double)zi[k] - mx);
    double logz = mx + log(rw_warp_sum(s));
    double scale = (double)g[0] * w[i] / total[0];
    for (int k = RW_LANE; k < c; k += 32) {
      double v = scale * exp((double)zi[k] - logz);
      if (k == y) v -= scale;
      di[k] = (float)v;
    }
  }
}
