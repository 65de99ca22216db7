// softmax.cu: softmax over the edges that share a destination (segment softmax), forward and
// backward.
//
// CPU twins: kern.SegmentSoftmaxRows (forward) and kern.SegmentSoftmaxGradRows (backward) in
// kern/rows.go (op ops.SegmentSoftmax).
//
// Shapes: s, y, dy, dx [m, h] (edges × heads); seg [m] int32, the destination of each edge
// (-1: padding edge, whose row comes out as zeros); per-destination scratch [nodes, h].
//
// Forward, four steps on one stream (the Go side fills mx with -inf and sum with 0):
//   seg_softmax_max   mx[t,k]  = max over the edges of t of s[m,k]
//   seg_softmax_exp   y[m,k]   = exp(s[m,k] − mx[t,k]);  sum[t,k] += y[m,k]
//   seg_softmax_div   y[m,k]  /= sum[t,k]
// Backward (the Go side zero-fills dot):
//   seg_softmax_bwd_dot  dot[t,k] += y[m,k]·dy[m,k]
//   seg_softmax_bwd      dx[m,k]   = y[m,k]·(dy[m,k] − dot[t,k])
#include "common.cuh"

extern "C" __global__ void seg_softmax_max(float* mx, const float* s, const int* seg, int m, int h,
                                           int nodes) {
  RW_FOR(e, (long long)m * h) {
    int i = (int)(e / h);
    int k = (int)(e - (long long)i * h);
    int t = rw_valid(seg[i], nodes);
    if (t >= 0) rw_atomic_max(&mx[(long long)t * h + k], s[e]);
  }
}

extern "C" __global__ void seg_softmax_exp(float* y, float* sum, const float* s, const float* mx,
                                           const int* seg, int m, int h, int nodes) {
  RW_FOR(e, (long long)m * h) {
    int i = (int)(e / h);
    int k = (int)(e - (long long)i * h);
    int t = rw_valid(seg[i], nodes);
    if (t < 0) {
      y[e] = 0.0f;
      continue;
    }
    float v = expf(s[e] - mx[(long long)t * h + k]);
    y[e] = v;
    atomicAdd(&sum[(long long)t * h + k], v);
  }
}

extern "C" __global__ void seg_softmax_div(float* y, const float* sum, const int* seg, int m, int h,
                                           int nodes) {
  RW_FOR(e, (long long)m * h) {
    int i = (int)(e / h);
    int k = (int)(e - (long long)i * h);
    int t = rw_valid(seg[i], nodes);
    if (t >= 0) y[e] = y[e] / sum[(long long)t * h + k];
  }
}

extern "C" __global__ void seg_softmax_bwd_dot(float* dot, const float* y, const float* dy,
                                               const int* seg, int m, int h, int nodes) {
  RW_FOR(e, (long long)m * h) {
    int i = (int)(e / h);
    int k = (int)(e - (long long)i * h);
    int t = rw_valid(seg[i], nodes);
    if (t >= 0) atomicAdd(&dot[(long long)t * h + k], y[e] * dy[e]);
  }
}

extern "C" __global__ void seg_softmax_bwd(float* dx, const float* y, const float* dy,
                                           const float* dot, const int* seg, int m, int h,
                                           int nodes) {
  RW_FOR(e, (long long)m * h) {
    int i = (int)(e / h);
    int k = (int)(e - (long long)i * h);
    int t = rw_valid(seg[i], nodes);
    dx[e] = t < 0 ? 0.0f : y[e] * (dy[e] - dot[(long long)t * h + k]);
  }
}
