// gaussian.cu: MoNet's Gaussian kernel weights, forward and backward.
//
// CPU twin: ops.GaussianWeights in ops/gaussian.go (gaussW, gaussGrad).
//   w[m,k] = exp(−½ Σ_c (u[m,c] − mu[k,c])²·is[k,c]²)
// Gradients, with gw = g[m,k]·w[m,k] and dv = u[m,c] − mu[k,c]:
//   du[m,c]  = −Σ_k gw·dv·is²       (one thread per (m, c))
//   dmu[k,c] =  Σ_m gw·dv·is²       (one block per (k, c), block reduction over m)
//   dis[k,c] = −Σ_m gw·dv²·is
//
// Shapes: u, du [m, p]; mu, is, dmu, dis [k, p]; w, g [m, k].
#include "common.cuh"

extern "C" __global__ void gauss_weights(float* w, const float* u, const float* mu, const float* is,
                                         int m, int k, int p) {
  RW_FOR(e, (long long)m * k) {
    int i = (int)(e / k);
    int j = (int)(e - (long long)i * k);
    double acc = 0.0;
    for (int c = 0; c < p; c++) {
      double dv = u[(long long)i * p + c] - mu[j * p + c];
      double s = is[j * p + c];
      acc += dv * dv * s * s;
    }
    w[e] = (float)exp(-0.5 * acc);
  }
}

extern "C" __global__ void gauss_grad_u(float* du, const float* u, const float* mu, const float* is,
                                        const float* w, const float* g, int m, int k, int p) {
  RW_FOR(e, (long long)m * p) {
    int i = (int)(e / p);
    int c = (int)(e - (long long)i * p);
    double acc = 0.0;
    for (int j = 0; j < k; j++) {
      double gw = (double)g[(long long)i * k + j] * w[(long long)i * k + j];
      double dv = u[e] - mu[j * p + c];
      double s = is[j * p + c];
      acc -= gw * dv * s * s;
    }
    du[e] = (float)acc;
  }
}

// gauss_grad_params: grid of k·p blocks of RW_THREADS threads.
extern "C" __global__ void gauss_grad_params(float* dmu, float* dis, const float* u,
                                             const float* mu, const float* is, const float* w,
                                             const float* g, int m, int k, int p) {
  __shared__ double sh[32];
  for (int kc = blockIdx.x; kc < k * p; kc += gridDim.x) {
    int j = kc / p;
    int c = kc - j * p;
    double mj = mu[kc], s = is[kc];
    double a = 0.0, b = 0.0;
    for (int i = threadIdx.x; i < m; i += blockDim.x) {
      double gw = (double)g[(long long)i * k + j] * w[(long long)i * k + j];
      double dv = u[(long long)i * p + c] - mj;
      a += gw * dv;
      b += gw * dv * dv;
    }
    a = rw_block_sum(a, sh);
    b = rw_block_sum(b, sh);
    if (threadIdx.x == 0) {
      dmu[kc] = (float)(a * s * s);
      dis[kc] = (float)(-b * s);
    }
  }
}
