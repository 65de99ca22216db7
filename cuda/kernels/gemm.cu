// gemm.cu: the weight gradient of a narrow product, dw [a, b] = xᵀ·g (x [m, a], g [m, b],
// a, b ≤ RW_WG_MAX), in two passes: a small output summed over many rows, which cuBLAS gives to
// a few blocks (on an H200, 2026-11-27: 24 µs for one 70 × 3058 · 3058 × 70 product and 104 µs
// for four batched, where the arithmetic and the reads take a few µs). Used where
// gpu.narrow_gradw is true (cuda/gradw.go); the first version (3a240f6, reverted) merged the
// chunks in the last block to arrive, one dependent load after another, and lost to cuBLAS.
//
// CPU twin: ops.MatMul's weight gradient.
//   matmul_gradw[_batch]  grid: products (x) × row chunks of rpc rows (y); blocks of 16 × 16
//                         threads. A block sums its chunk in tiles of RW_WG_TILE rows staged in
//                         shared memory; thread (tx, ty) owns the outputs (ty + 16i, tx + 16j),
//                         i, j < 8, in registers, and adds x[r, ty + 16i]·g[r, tx + 16j] row by
//                         row (fmaf), rows in order. With one chunk it writes dw; with several,
//                         its chunk's partial (product z, chunk k at part + (z·chunks + k)·a·b).
//   matmul_gradw_merge    one thread per output element of every product (grid-stride): the
//                         sum of its chunks' partials in chunk order, in double, RW_UNROLL
//                         independent loads at a time.
// No atomics: deterministic.
#include "common.cuh"

#define RW_WG_MAX 128 // the widest a and b (8 register tiles of 16)
#define RW_WG_TILE 32 // rows staged in shared memory at a time

// rw_gradw_chunk writes x[r0:r1]ᵀ·g[r0:r1] (the block's chunk) to out [a, b].
__device__ __forceinline__ void rw_gradw_chunk(float* out, const float* x, const float* g, int m, int a,
                                               int b, int rpc) {
  __shared__ float sx[RW_WG_TILE][RW_WG_MAX];
  __shared__ float sg[RW_WG_TILE][RW_WG_MAX];
  int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
  int ni = (a - ty + 15) / 16, nj = (b - tx + 15) / 16; // this thread's output rows and columns
  int r0, r1;
  rw_chunk_rows(m, rpc, &r0, &r1);
  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; i++)
#pragma unroll
    for (int j = 0; j < 8; j++) acc[i][j] = 0.0f;
  for (int t0 = r0; t0 < r1; t0 += RW_WG_TILE) {
    int nt = r1 - t0 < RW_WG_TILE ? r1 - t0 : RW_WG_TILE;
    __syncthreads(); // the previous tile is no longer read
    for (int e = tid; e < nt * a; e += 256) {
      int r = e / a;
      sx[r][e - r * a] = x[(long long)t0 * a + e];
    }
    for (int e = tid; e < nt * b; e += 256) {
      int r = e / b;
      sg[r][e - r * b] = g[(long long)t0 * b + e];
    }
    __syncthreads();
    for (int r = 0; r < nt; r++) {
      float gv[8];
#pragma unroll
      for (int j = 0; j < 8; j++) gv[j] = j < nj ? sg[r][tx + 16 * j] : 0.0f;
#pragma unroll
      for (int i = 0; i < 8; i++) {
        if (i >= ni) break;
        float xv = sx[r][ty + 16 * i];
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = fmaf(xv, gv[j], acc[i][j]);
      }
    }
  }
#pragma unroll
  for (int i = 0; i < 8; i++)
#pragma unroll
    for (int j = 0; j < 8; j++)
      if (i < ni && j < nj) out[(long long)(ty + 16 * i) * b + tx + 16 * j] = acc[i][j];
}

// rw_gradw_out is where block (z, chunk) of a weight gradient writes: dw itself with one chunk,
// else its partial.
__device__ __forceinline__ float* rw_gradw_out(float* dw, float* part, int a, int b) {
  if (gridDim.y == 1) return dw;
  return part + ((long long)blockIdx.x * gridDim.y + blockIdx.y) * a * b;
}

// matmul_gradw: dw = xᵀ·g for one product (gridDim.x = 1).
extern "C" __global__ void matmul_gradw(float* dw, float* part, const float* x, const float* g, int m,
                                        int a, int b, int rpc) {
  rw_gradw_chunk(rw_gradw_out(dw, part, a, b), x, g, m, a, b, rpc);
}

// matmul_gradw_batch: dw_z = x_zᵀ·g_z for the gridDim.x products whose addresses lie in the
// pointer tables dws, xs and gs (device memory).
extern "C" __global__ void matmul_gradw_batch(const unsigned long long* dws,
                                              const unsigned long long* xs,
                                              const unsigned long long* gs, float* part, int m,
                                              int a, int b, int rpc) {
  int z = blockIdx.x;
  rw_gradw_chunk(rw_gradw_out(rw_addr<float>(dws[z]), part, a, b), rw_addr<const float>(xs[z]),
                 rw_addr<const float>(gs[z]), m, a, b, rpc);
}

// matmul_gradw_merge: dw_z[o] = Σ_k part[(z·chunks + k)·ab + o] for the n products (dw_z at
// dws[z] in device memory, or dw for n = 1 where dws is null), o < ab.
extern "C" __global__ void matmul_gradw_merge(const unsigned long long* dws, float* dw,
                                              const float* part, int n, int chunks, int ab) {
  RW_FOR(e, (long long)n * ab) {
    int z = (int)(e / ab);
    int o = (int)(e - (long long)z * ab);
    const float* p = part + (long long)z * chunks * ab + o;
    double s = 0.0;
    int k = 0;
    for (; k + RW_UNROLL <= chunks; k += RW_UNROLL) { // loads first, then the additions in order
      float v[RW_UNROLL];
      for (int u = 0; u < RW_UNROLL; u++) v[u] = p[(long long)(k + u) * ab];
      for (int u = 0; u < RW_UNROLL; u++) s += v[u];
    }
    for (; k < chunks; k++) s += p[(long long)k * ab];
    float* out = dws ? rw_addr<float>(dws[z]) : dw;
    out[o] = (float)s;
  }
}
