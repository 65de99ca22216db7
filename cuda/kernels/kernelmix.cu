// kernelmix.cu: MoNet's mixture of K kernel blocks, forward and backward.
//
// CPU twin: ops.KernelMix in ops/heads.go (kernelMix, kernelMixGradX, kernelMixGradW).
//   out[m,t]     = Σ_k w[m,k]·x[m,k·d+t]
//   dx[m,k·d+t]  = w[m,k]·g[m,t]
//   dw[m,k]      = Σ_t x[m,k·d+t]·g[m,t]     (one warp per (m, k))
//
// Shapes: x, dx [m, k·d]; w, dw [m, k]; out, g [m, d].
#include "common.cuh"

extern "C" __global__ void kernel_mix(float* out, const float* x, const float* w, int m, int k,
                                      int d) {
  RW_FOR(e, (long long)m * d) {
    long long i = e / d;
    int t = (int)(e - i * d);
    double acc = 0.0;
    for (int j = 0; j < k; j++) acc += (double)w[i * k + j] * x[(i * k + j) * d + t];
    out[e] = (float)acc;
  }
}

extern "C" __global__ void kernel_mix_grad_x(float* dx, const float* g, const float* w, int m,
                                             int k, int d) {
  RW_FOR(e, (long long)m * k * d) {
    long long i = e / ((long long)k * d);
    int rest = (int)(e - i * k * d);
    int j = rest / d;
    int t = rest - j * d;
    dx[e] = w[i * k + j] * g[i * d + t];
  }
}

extern "C" __global__ void kernel_mix_grad_w(float* dw, const float* x, const float* g, int m,
                                             int k, int d) {
  RW_WARP_FOR(ij, (long long)m * k) {
    long long i = ij / k;
    const float* xs = x + ij * d; // row i, block j: x[i, j·d : (j+1)·d]
    const float* gs = g + i * d;
    double acc = 0.0;
    for (int t = RW_LANE; t < d; t += 32) acc += (double)xs[t] * gs[t];
    acc = rw_warp_sum(acc);
    if (RW_LANE == 0) dw[ij] = (float)acc;
  }
}
