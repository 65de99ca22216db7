// segmax.cu: max over the edges that share a destination (segment max), forward and backward.
//
// CPU twins: kern.SegmentMaxRows (forward) and kern.SegmentMaxGradRows (backward) in
// kern/segmax.go (op ops.SegmentMax).
//
// Shapes: x, dx [m, d] (edges × features); seg [m] int32, the destination of each edge (-1:
// padding edge, ignored; its dx row is zeros); out, g [nodes, d]; arg [nodes, d] int32, the
// arg-max edge per (node, column), -1 for a node without edges (written by the forward pass,
// read by the backward pass).
//
// Semantics (as the CPU twin): the arg-max is the lowest edge index among a column's maxima,
// -0 ties with +0, a NaN wins over every number (the lowest-index NaN), out[n,j] =
// x[arg[n,j], j] bit for bit, and a node without edges gets 0. Only integer atomics (max and
// min, which give the same result in any order), so the forward pass is deterministic; the
// backward pass has no atomics at all.
//
// Forward, three steps on one stream, with integer keys (seg_max_key) in scratch key [nodes, d]
// (the Go side fills key with RW_MAX_EMPTY and arg with INT_MAX):
//   seg_max_keys  key[t,k] = max over the edges i of t of key(x[i,k])               (atomicMax)
//   seg_max_arg   arg[t,k] = min over the edges i of t with key(x[i,k]) = key[t,k] of i (atomicMin)
//   seg_max_out   out[t,k] = x[arg[t,k], k], or 0 and arg -1 where t has no edge
// Backward:
//   seg_max_bwd   dx[i,k] = g[t,k] if arg[t,k] = i (t = seg[i]), else 0
#include "common.cuh"

// RW_MAX_EMPTY is the key of a node without edges: below every float's key.
#define RW_MAX_EMPTY ((int)0x80000000)

// seg_max_key maps a float to an int whose order is the float order, with -0 equal to +0 and
// every NaN above +inf (one key for all NaNs).
__device__ __forceinline__ int seg_max_key(float v) {
  if (v != v) return 0x7fffffff;
  if (v == 0.0f) return 0;
  int b = __float_as_int(v);
  return b >= 0 ? b : b ^ 0x7fffffff;
}

extern "C" __global__ void seg_max_keys(int* key, const float* x, const int* seg, int m, int d,
                                        int nodes) {
  RW_FOR(e, (long long)m * d) {
    int i = (int)(e / d);
    int k = (int)(e - (long long)i * d);
    int t = rw_valid(seg[i], nodes);
    if (t >= 0) atomicMax(&key[(long long)t * d + k], seg_max_key(x[e]));
  }
}

extern "C" __global__ void seg_max_arg(int* arg, const int* key, const float* x, const int* seg,
                                       int m, int d, int nodes) {
  RW_FOR(e, (long long)m * d) {
    int i = (int)(e / d);
    int k = (int)(e - (long long)i * d);
    int t = rw_valid(seg[i], nodes);
    if (t < 0) continue;
    long long o = (long long)t * d + k;
    if (seg_max_key(x[e]) == key[o]) atomicMin(&arg[o], i);
  }
}

// seg_max_out: one thread per (node, column); fully overwrites out.
extern "C" __global__ void seg_max_out(float* out, int* arg, const int* key, const float* x,
                                       int nodes, int d) {
  RW_FOR(o, (long long)nodes * d) {
    int k = (int)(o % d);
    if (key[o] == RW_MAX_EMPTY) {
      out[o] = 0.0f;
      arg[o] = -1;
    } else {
      out[o] = x[(long long)arg[o] * d + k];
    }
  }
}

extern "C" __global__ void seg_max_bwd(float* dx, const float* g, const int* arg, const int* seg,
                                       int m, int d, int nodes) {
  RW_FOR(e, (long long)m * d) {
    int i = (int)(e / d);
    int k = (int)(e - (long long)i * d);
    int t = rw_valid(seg[i], nodes);
    long long o = (long long)t * d + k;
    dx[e] = (t >= 0 && arg[o] == i) ? g[o] : 0.0f;
  }
}
