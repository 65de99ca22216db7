// heads.cu: per-head products of the graph Transformer's attention, forward kernels that also
// serve as each other's gradients.
//
// CPU twins: ops.HeadDot and ops.HeadScale in ops/heads.go (headDot, headScale). With H heads of
// width w = d/H:
//   head_dot    out[m,j]     = Σ_t a[m,j·w+t]·b[m,j·w+t]     (one warp per (m, j))
//   head_scale  out[m,j·w+t] = s[m,j]·x[m,j·w+t]
// Gradients (as nn builds them): HeadDot(q,k): dq = HeadScale(k,g), dk = HeadScale(q,g);
// HeadScale(x,s): dx = HeadScale(g,s), ds = HeadDot(x,g).
//
// Shapes: a, b, x, out of head_scale [m, d]; out of head_dot and s [m, h].
#include "common.cuh"

extern "C" __global__ void head_dot(float* out, const float* a, const float* b, int m, int h,
                                    int d) {
  int w = d / h;
  RW_WARP_FOR(ij, (long long)m * h) {
    long long i = ij / h;
    int j = (int)(ij - i * h);
    long long base = i * d + (long long)j * w;
    double acc = 0.0;
    for (int t = RW_LANE; t < w; t += 32) acc += (double)a[base + t] * b[base + t];
    acc = rw_warp_sum(acc);
    if (RW_LANE == 0) out[ij] = (float)acc;
  }
}

extern "C" __global__ void head_scale(float* out, const float* x, const float* s, int m, int h,
                                      int d) {
  int w = d / h;
  RW_FOR(e, (long long)m * d) {
    long long i = e / d;
    int j = (int)(e - i * d) / w;
    out[e] = s[i * h + j] * x[e];
  }
}
