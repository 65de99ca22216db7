// gemm.cu: the weight gradient of a narrow product, dw [a, b] = xᵀ·g (x [m, a], g [m, b],
// a, b ≤ RW_WG_MAX): the one matrix product of the models that cuBLAS runs slowly, a small
// output summed over many rows (on an H200, 2026-11-27, 24 µs for one 70 × 3058 · 3058 × 70
// product and 104 µs for four batched, where the arithmetic and the reads take a few µs).
//
// CPU twin: ops.MatMul's weight gradient. Grid: products (x) × row chunks of rpc rows (y);
// blocks of 16 × 16 threads. A block sums its chunk in tiles of RW_WG_TILE rows staged in
// shared memory; thread (tx, ty) owns the outputs (ty + 16i, tx + 16j), i, j < 8, in registers,
// and adds x[r, ty + 16i]·g[r, tx + 16j] row by row in float (fmaf), rows in order. With one
// chunk it writes dw; with several each block writes its chunk's float partials to part
// (product z's at part + z·chunks·a·b, chunk-major) and the product's last block
// (rw_last_chunk; count: one arrival counter per product) adds the chunks in order 0, 1, … in
// double. No atomics on floats: deterministic.
#include "common.cuh"

#define RW_WG_MAX 128 // the widest a and b (8 register tiles of 16)
#define RW_WG_TILE 32 // rows staged in shared memory at a time

__device__ __forceinline__ void rw_gradw(float* dw, const float* x, const float* g, float* part,
                                         unsigned* count, int m, int a, int b, int rpc) {
  __shared__ float sx[RW_WG_TILE][RW_WG_MAX];
  __shared__ float sg[RW_WG_TILE][RW_WG_MAX];
  __shared__ int last;
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
#pragma unroll
      for (int i = 0; i < 8; i++) {
        if (i >= ni) break;
        float xv = sx[r][ty + 16 * i];
#pragma unroll
        for (int j = 0; j < 8; j++)
          if (j < nj) acc[i][j] = fmaf(xv, sg[r][tx + 16 * j], acc[i][j]);
      }
    }
  }
  long long ab = (long long)a * b;
  if (gridDim.y == 1) {
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
      for (int j = 0; j < 8; j++)
        if (i < ni && j < nj) dw[(long long)(ty + 16 * i) * b + tx + 16 * j] = acc[i][j];
    return;
  }
  float* p = part + (long long)blockIdx.y * ab;
#pragma unroll
  for (int i = 0; i < 8; i++)
#pragma unroll
    for (int j = 0; j < 8; j++)
      if (i < ni && j < nj) p[(long long)(ty + 16 * i) * b + tx + 16 * j] = acc[i][j];
  if (!rw_last_chunk(count, &last)) return;
  const volatile float* q = part; // other blocks' partials: see rw_chunk_sum
  for (long long o = tid; o < ab; o += 256) {
    double s = 0.0;
    for (int k = 0; k < (int)gridDim.y; k++) s += q[k * ab + o];
    dw[o] = (float)s;
  }
}

// matmul_gradw: dw = xᵀ·g for one product (count: its one arrival counter).
extern "C" __global__ void matmul_gradw(float* dw, const float* x, const float* g, float* part,
                                        unsigned* count, int m, int a, int b, int rpc) {
  rw_gradw(dw, x, g, part, count, m, a, b, rpc);
}

// matmul_gradw_batch: dw_z = x_zᵀ·g_z for the gridDim.x products whose addresses lie in the
// pointer tables dws, xs and gs (device memory), each with its own partials and counter.
extern "C" __global__ void matmul_gradw_batch(const unsigned long long* dws,
                                              const unsigned long long* xs,
                                              const unsigned long long* gs, float* part,
                                              unsigned* count, int m, int a, int b, int rpc) {
  int z = blockIdx.x;
  rw_gradw(rw_addr<float>(dws[z]), rw_addr<const float>(xs[z]), rw_addr<const float>(gs[z]),
           part + (long long)z * gridDim.y * a * b, count, m, a, b, rpc);
}
