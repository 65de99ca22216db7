// sums.cuh: the element of each biased sum kernel, shared by the kernel that only stores it
// (gather.cu's edge_sum, elementwise.cu's add_biased) and the kernel that also takes a batch
// norm's statistics of it in the same pass (fused.cu), so both store the same bits; and the
// edge sum's gradient element, shared by scatter_add_pair and gated_backward. NVRTC
// receives it as a named header.
#pragma once
#include "common.cuh"

// rw_edge_sum_at is edge_sum's element (k, c): e + be + (hs + bs)[src[k]] + (ht + bt)[dst[k]],
// each bias optional (null) and an index of -1 adding nothing, bias included.
__device__ __forceinline__ float rw_edge_sum_at(const float* e, const float* be, const float* hs,
                                                const float* bs, const float* ht, const float* bt,
                                                const int* src, const int* dst, int k, int c,
                                                int rows, int d) {
  long long x = (long long)k * d + c;
  int s = rw_valid(src[k], rows);
  int t = rw_valid(dst[k], rows);
  float v = be ? e[x] + be[c] : e[x];
  if (s >= 0) v += bs ? hs[(long long)s * d + c] + bs[c] : hs[(long long)s * d + c];
  if (t >= 0) v += bt ? ht[(long long)t * d + c] + bt[c] : ht[(long long)t * d + c];
  return v;
}

// rw_add_biased_at is add_biased's element x (column c): (a + ba) + (b / db + bb), each of ba,
// db, bb optional (null).
__device__ __forceinline__ float rw_add_biased_at(const float* a, const float* ba, const float* b,
                                                  const float* bb, const float* db, long long x,
                                                  int c) {
  float u = ba ? a[x] + ba[c] : a[x];
  float y = db ? b[x] / db[x] : b[x];
  if (bb) y = y + bb[c];
  return u + y;
}

// rw_edge_sum_grad_add adds v, element (k, c) of an edge sum's output gradient, into that sum's
// gradients ds at row src[k] and dt at row dst[k] ([rows, d] each; an index of -1 adds
// nothing): scatter_add_pair's element, and gated_backward's where the executor folded that
// pass into it (the same additions, so the same bits on the emulator's schedule).
__device__ __forceinline__ void rw_edge_sum_grad_add(float* ds, float* dt, const int* src,
                                                     const int* dst, int k, int c, int rows,
                                                     int d, float v) {
  int s = rw_valid(src[k], rows);
  int t = rw_valid(dst[k], rows);
  if (s >= 0) atomicAdd(&ds[(long long)s * d + c], v);
  if (t >= 0) atomicAdd(&dt[(long long)t * d + c], v);
}
