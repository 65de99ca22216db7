// gate.cuh: GatedGCN's edge gate as the kernels that compute it add it into the node sums:
// gated.cu's gated_edges, which reads ê, and the edge sums that compute ê and fold the gate
// into their own pass (gather.cu's edge_sum, fused.cu's edge_sum_stats: the executor's
// Plan.foldGate). One place for the arithmetic, so that both give the same values. NVRTC
// receives it as a named header.
#pragma once
#include "common.cuh"

// rw_bh is element se (column c) of bh, plus bb[c] where a bias was folded in.
__device__ __forceinline__ float rw_bh(const float* bh, const float* bb, long long se, int c) {
  return bb ? bh[se] + bb[c] : bh[se];
}

// RwGate is the gate's side of the aggregation: bh [nbh, d] (its folded bias bb [d] or null),
// and the undivided sums out and denominators den [nodes, d] it adds into (filled with 0 and
// GatedEps before). add takes edge k's element (column c) of ê, the value ê holds where it is
// stored (rounded already where that is bf16): with η = σ(ê), out[dst] += η·bh[src] and
// den[dst] += η, skipping an edge whose src or dst is -1 or out of range.
struct RwGate {
  float *out, *den;
  const float *bh, *bb;
  const int *src, *dst;
  int d, nbh, nodes;
  __device__ __forceinline__ void add(int k, int c, float ehat) const {
    int s = rw_valid(src[k], nbh);
    int t = rw_valid(dst[k], nodes);
    if (s < 0 || t < 0) return;
    float g = rw_sigmoid(ehat);
    atomicAdd(&out[(long long)t * d + c], g * rw_bh(bh, bb, (long long)s * d + c, c));
    atomicAdd(&den[(long long)t * d + c], g);
  }
};
