// common.cuh: the helpers every kernel file shares. NVRTC receives it as a named header.
//
// Conventions of all kernels:
//   - float32 tensors, row-major [rows, cols]; index tensors are int32 with -1 meaning "no row";
//     an index outside its range is treated as -1, so a bad index can never write outside a
//     buffer (the host validates indexes before upload, as the CPU ops do, and reports them);
//   - every kernel fully overwrites its outputs unless its comment says the Go side clears or
//     fills an accumulator first, and it never writes its inputs;
//   - 1-D kernels use grid-stride loops, so any grid size covers any n;
//   - reductions accumulate in double, as the CPU twins do.
#pragma once

#define RW_THREADS 256 // threads of a 1-D block
#define RW_COL_X 32    // column tile of the column-reduction kernels (block RW_COL_X × RW_COL_Y)
#define RW_COL_Y 8
// RW_UNROLL is how many rows (or chunks) a thread of a column reduction loads before it adds
// them: the loads are independent of each other and of the sums, so they are in flight
// together instead of one after another, while the additions keep their order (the same bits as
// one row at a time; a remainder of fewer rows goes one at a time). A build may define it as 1
// to compare.
#ifndef RW_UNROLL
#define RW_UNROLL 4
#endif
// Column reductions over many rows also split the rows into chunks (grid.y = chunks of rpc
// rows each; geometry from colReduceGeometry in cuda/kernels.go), all in one launch: each
// block writes its chunk's partial results (double) to a scratch array
// part[(chunk·q + j)·d + c] for the op's q quantities and counts itself in its column tile's
// arrival counter (rw_last_chunk); the tile's last block to arrive combines the chunks of each
// column in a fixed order (rw_chunk_sum: its thread rows take every RW_COL_Y-th chunk, then
// their results are added in row order; no float atomics, so the result does not depend on
// scheduling) and writes the outputs. With one chunk (grid.y = 1) the block finishes on its own: no partials,
// no counter.

// rw_addr is the pointer at device address a, read from a pointer table in device memory (the
// batched launches' operand lists). The emulated GPU defines its own (cuda_emu.h), which maps
// the address into its process.
#ifndef RW_EMU
template <class T>
__device__ __forceinline__ T* rw_addr(unsigned long long a) {
  return reinterpret_cast<T*>(a);
}
#endif

// RW_FOR(i, n): grid-stride loop over 0 ≤ i < n (i is a long long).
#define RW_FOR(i, n)                                                            \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;        \
       i < (long long)(n); i += (long long)blockDim.x * gridDim.x)

// RW_WARP_FOR(w, n): each warp of the grid takes items w, w + warps, … below n.
#define RW_WARP_FOR(w, n)                                                       \
  for (long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; \
       w < (long long)(n); w += ((long long)blockDim.x * gridDim.x) >> 5)

#define RW_LANE (threadIdx.x & 31)

__device__ __forceinline__ float rw_neg_inf() { return __int_as_float(0xff800000); }

__device__ __forceinline__ float rw_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// bf16 storage (train.precision bf16): a tensor the executor stores in bf16 holds each element
// as the upper 16 bits of its float32, rounded to nearest with ties to even (a NaN stays a quiet
// NaN, a value past bf16's largest finite one becomes ±Inf), in an unsigned short; kernels read
// it back as the float32 those bits are and compute in float32 (sums in double) as ever. A kernel
// that can read or write such a tensor takes a flag beside its pointer (…bf; the pointer keeps
// its float type): with the flag 0 it reads and writes float32, bit for bit as before the flag.
// CPU twin of the rounding: emu.RoundBF16.
__device__ __forceinline__ unsigned short rw_bf16_bits(float x) {
  unsigned u = (unsigned)__float_as_int(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}

// rw_bf16_float is the float32 of bf16 bits h (exact).
__device__ __forceinline__ float rw_bf16_float(unsigned short h) {
  return __int_as_float((int)((unsigned)h << 16));
}

// rw_round_bf16 is x rounded to bf16, as a float32: what storing x in bf16 and reading it back
// gives.
__device__ __forceinline__ float rw_round_bf16(float x) { return rw_bf16_float(rw_bf16_bits(x)); }

// rw_ld is element e of p, a float32 tensor or (bf) a bf16 one.
__device__ __forceinline__ float rw_ld(const float* p, int bf, long long e) {
  return bf ? rw_bf16_float(reinterpret_cast<const unsigned short*>(p)[e]) : p[e];
}

// rw_st stores v as element e of p, a float32 tensor or (bf) a bf16 one (v rounded).
__device__ __forceinline__ void rw_st(float* p, int bf, long long e, float v) {
  if (bf)
    reinterpret_cast<unsigned short*>(p)[e] = rw_bf16_bits(v);
  else
    p[e] = v;
}

// rw_valid maps an index entry to itself when it lies in [0, n) and to -1 otherwise.
__device__ __forceinline__ int rw_valid(int j, int n) { return (j >= 0 && j < n) ? j : -1; }

// rw_atomic_max sets *addr = max(*addr, v) atomically (compare-and-swap on the bits). The
// first read is atomic too: a plain load racing with other threads' compare-and-swap is a data
// race in CUDA's memory model (ThreadSanitizer on the emulated GPU reported it).
__device__ __forceinline__ void rw_atomic_max(float* addr, float v) {
  int* a = (int*)addr;
  int old = atomicAdd(a, 0);
  while (__int_as_float(old) < v) {
    int assumed = old;
    old = atomicCAS(a, assumed, __float_as_int(v));
    if (old == assumed) break;
  }
}

// rw_warp_sum returns the sum of v over the 32 lanes of the warp, in every lane.
__device__ __forceinline__ double rw_warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float rw_warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// rw_block_sum returns the sum of v over a 1-D block (a multiple of 32 threads) in every
// thread; sh is shared scratch of 32 doubles. Every thread of the block must call it.
__device__ __forceinline__ double rw_block_sum(double v, double* sh) {
  v = rw_warp_sum(v);
  __syncthreads(); // sh may still be read by a previous call
  if (RW_LANE == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    int warps = (blockDim.x + 31) >> 5;
    double s = threadIdx.x < warps ? sh[threadIdx.x] : 0.0;
    s = rw_warp_sum(s);
    if (threadIdx.x == 0) sh[0] = s;
  }
  __syncthreads();
  return sh[0];
}

// rw_col_put stores v as this thread's entry sh[threadIdx.y][threadIdx.x] of a RW_COL_X ×
// RW_COL_Y block and waits until every thread has stored its own, so each can read its
// column's. Every thread of the block must call it.
__device__ __forceinline__ void rw_col_put(double v, double (*sh)[RW_COL_X + 1]) {
  __syncthreads(); // sh may still be read after a previous call
  sh[threadIdx.y][threadIdx.x] = v;
  __syncthreads();
}

// rw_col_reduce sums v over threadIdx.y of a RW_COL_X × RW_COL_Y block, per threadIdx.x, and
// returns the column's sum in every thread of that column (fixed order: deterministic).
// Every thread of the block must call it.
__device__ __forceinline__ double rw_col_reduce(double v, double (*sh)[RW_COL_X + 1]) {
  rw_col_put(v, sh);
  double s = 0.0;
  for (int y = 0; y < RW_COL_Y; y++) s += sh[y][threadIdx.x];
  return s;
}

// rw_chunk_rows sets [*r0, *r1) to the rows of this block's chunk: blockIdx.y·rpc onwards,
// rpc rows, clipped to rows.
__device__ __forceinline__ void rw_chunk_rows(int rows, int rpc, int* r0, int* r1) {
  long long a = (long long)blockIdx.y * rpc;
  long long b = a + rpc;
  *r0 = (int)(a < rows ? a : rows);
  *r1 = (int)(b < rows ? b : rows);
}

// rw_col_sum_rows returns Σ x[r, c] over the rows [r0, r1) of column c (0 for c ≥ d), summed
// over the block's column (rw_col_reduce: every thread of the block must call it). Kernels
// pass their block's chunk (rw_chunk_rows: every row when there is one chunk).
__device__ __forceinline__ double rw_col_sum_rows(const float* x, int r0, int r1, int d, int c,
                                                  double (*sh)[RW_COL_X + 1]) {
  double s = 0.0;
  if (c < d) {
    int r = r0 + threadIdx.y;
    for (; r + (RW_UNROLL - 1) * RW_COL_Y < r1; r += RW_UNROLL * RW_COL_Y) {
      float xs[RW_UNROLL];
      for (int u = 0; u < RW_UNROLL; u++) xs[u] = x[(long long)(r + u * RW_COL_Y) * d + c];
      for (int u = 0; u < RW_UNROLL; u++) s += xs[u];
    }
    for (; r < r1; r += RW_COL_Y) s += x[(long long)r * d + c];
  }
  return rw_col_reduce(s, sh);
}

// rw_bn_xhat is a batch norm's normalised value (x − mean)·invstd, in double and rounded once:
// bn_apply's x̂, which the backward kernels recompute from x where they read it instead of the
// forward pass storing it (the same expression, so the same bits).
__device__ __forceinline__ float rw_bn_xhat(float x, float mean, float invstd) {
  return (float)(((double)x - mean) * invstd);
}

// The x̂ a column reduction reads at element e (column c): XhatStored reads a stored x̂ (layer
// norm keeps its own), XhatOfX recomputes a batch norm's from its input x and its column
// statistics (rw_bn_xhat). A dropped row's x̂ is stored as 0 but recomputed as whatever its x
// gives; every reader skips dropped rows, so it is never used.
struct XhatStored {
  const float* xhat;
  __device__ __forceinline__ float at(long long e, int) const { return xhat[e]; }
};
struct XhatOfX {
  const float *x, *mean, *invstd;
  int bf; // x is stored in bf16
  __device__ __forceinline__ float at(long long e, int c) const { return rw_bn_xhat(rw_ld(x, bf, e), mean[c], invstd[c]); }
};

// rw_relu_dy is element e (column c) of the output gradient of a batch norm whose x̂ there is
// xh: dy[e], or, when beta is given (a batch norm followed by a ReLU, nn.BatchNormRelu), the
// ReLU's output gradient dy[e] where the normalised output gamma·xh + beta is positive and 0
// elsewhere (CPU twin: nn.BatchNormRelu's backward). Dropped rows get no gradient anyway.
__device__ __forceinline__ float rw_relu_dy(const float* dy, float xh, const float* gamma,
                                            const float* beta, long long e, int c) {
  if (!beta) return dy[e];
  return gamma[c] * xh + beta[c] > 0.0f ? dy[e] : 0.0f;
}

// rw_bn_dx is one element of a batch norm's dx, from its output gradient dy (through the ReLU:
// rw_relu_dy), its x̂ and the column sums s1 = Σ dy, s2 = Σ dy·x̂ over n kept rows:
// γ·1/σ·(dy − s1/n − x̂·s2/n) in training (scale = γ·1/σ), scale·dy in evaluation.
__device__ __forceinline__ float rw_bn_dx(double scale, float dy, float xh, double s1, double s2,
                                          double n, int training) {
  if (training) return (float)(scale * (dy - s1 / n - xh * s2 / n));
  return (float)(scale * dy);
}

// rw_bn_dx_at is element e (row r, column c) of a batch norm's dx from the column sums tot
// that bn_backward left ([3][d] doubles: Σ dy, Σ dy·x̂ and the count of kept rows), with x̂
// recomputed from x (bf16 where xbf): 0 on a dropped row. bn_backward_dx's element, and gated_backward's first
// term where the executor folded the batch norm's dx pass into it.
__device__ __forceinline__ float rw_bn_dx_at(const float* dy, const float* x, int xbf, const float* mean,
                                             const float* invstd, const float* gamma,
                                             const float* beta, const int* keep,
                                             const double* tot, int r, long long e, int c, int d,
                                             int training) {
  if (!keep[r]) return 0.0f;
  double scale = (double)gamma[c] * invstd[c];
  double n = tot[2 * d + c] > 0.0 ? tot[2 * d + c] : 1.0;
  float xh = rw_bn_xhat(rw_ld(x, xbf, e), mean[c], invstd[c]);
  return rw_bn_dx(scale, rw_relu_dy(dy, xh, gamma, beta, e, c), xh, tot[c], tot[d + c], n, training);
}

// rw_col_dy_sums sets *s1 = Σ dy and *s2 = Σ dy·x̂ over the kept rows in [r0, r1) of column c
// (0 for c ≥ d), and *cnt = their count unless cnt is null, each summed over the block's column
// (every thread of the block must call it): the parameter gradients of batch and layer norm.
// x̂ is read through xsrc (XhatStored or XhatOfX), dy through rw_relu_dy (beta null: as it is).
template <class X>
__device__ __forceinline__ void rw_col_dy_sums(const float* dy, X xsrc, const float* gamma,
                                               const float* beta, const int* keep, int r0, int r1,
                                               int d, int c, double (*sh)[RW_COL_X + 1],
                                               double* s1, double* s2, double* cnt) {
  double a = 0.0, b = 0.0, n = 0.0;
  if (c < d) {
    int r = r0 + threadIdx.y;
    // RW_UNROLL rows at a time: every row's values are loaded (a dropped row's too: it lies in
    // the buffer, and only its keep decides), then the kept ones added in row order.
    for (; r + (RW_UNROLL - 1) * RW_COL_Y < r1; r += RW_UNROLL * RW_COL_Y) {
      int ks[RW_UNROLL];
      float gs[RW_UNROLL], xs[RW_UNROLL];
      for (int u = 0; u < RW_UNROLL; u++) {
        int ru = r + u * RW_COL_Y;
        long long e = (long long)ru * d + c;
        ks[u] = keep[ru];
        xs[u] = xsrc.at(e, c);
        gs[u] = rw_relu_dy(dy, xs[u], gamma, beta, e, c);
      }
      for (int u = 0; u < RW_UNROLL; u++)
        if (ks[u]) {
          a += gs[u];
          b += (double)gs[u] * xs[u];
          n += 1.0;
        }
    }
    for (; r < r1; r += RW_COL_Y)
      if (keep[r]) {
        long long e = (long long)r * d + c;
        float xh = xsrc.at(e, c);
        float g = rw_relu_dy(dy, xh, gamma, beta, e, c);
        a += g;
        b += (double)g * xh;
        n += 1.0;
      }
  }
  *s1 = rw_col_reduce(a, sh);
  *s2 = rw_col_reduce(b, sh);
  if (cnt) *cnt = rw_col_reduce(n, sh);
}

// rw_part returns where this block's chunk keeps quantity 0 of column c in a chunked
// reduction's scratch of q quantities; quantity j lies j·d further on.
__device__ __forceinline__ double* rw_part(double* part, int q, int d, int c) {
  return part + (long long)blockIdx.y * q * d + c;
}

// rw_last_chunk is the hand-over of a one-launch chunked column reduction. Every block of a
// column tile (blockIdx.x) has written its chunk's partials; this makes them visible
// device-wide, counts the block in count[blockIdx.x] and returns true, in every thread, in
// the block that arrives last (the classic threadFenceReduction pattern), false in the
// others, which then have nothing left to do. The last block resets the counter to 0, so the
// counters are ready for the next launch without a fill (and a captured CUDA graph can be
// replayed). With one chunk it returns true at once and does not touch count. Every thread of
// the block must call it; flag is a __shared__ int of the kernel.
__device__ __forceinline__ bool rw_last_chunk(unsigned* count, int* flag) {
  if (gridDim.y == 1) return true;
  __threadfence(); // release: this thread's partials before the block's count
  __syncthreads(); // every thread of the block has written and fenced
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    unsigned before = atomicAdd(&count[blockIdx.x], 1u);
    *flag = before == gridDim.y - 1;
    if (*flag) count[blockIdx.x] = 0; // every chunk has arrived: nobody counts here any more
  }
  __syncthreads();
  if (!*flag) return false;
  __threadfence(); // acquire: the other blocks' partials are read after their counts were seen
  return true;
}

// rw_chunk_sum returns Σ_k part[(k·q + j)·d + c] over the chunks k = 0, 1, …, chunks−1 in a
// fixed order (deterministic), in every thread of column c: thread row y adds the chunks
// y, y + RW_COL_Y, y + 2·RW_COL_Y, … in that order, and the rows' sums are added in order
// y = 0, 1, … (rw_col_reduce). With at most RW_COL_Y chunks that is chunk order. The loads are
// volatile: the partials of other blocks of the same launch must come from the device-wide
// memory, not from a stale line of this SM's (non-coherent) L1. Every thread of the block must
// call it.
__device__ __forceinline__ double rw_chunk_sum(const double* part, int chunks, int q, int j,
                                               int d, int c, double (*sh)[RW_COL_X + 1]) {
  const volatile double* p = part;
  double s = 0.0;
  if (c < d) {
    int k = threadIdx.y;
    for (; k + (RW_UNROLL - 1) * RW_COL_Y < chunks; k += RW_UNROLL * RW_COL_Y) {
      double ps[RW_UNROLL];
      for (int u = 0; u < RW_UNROLL; u++) ps[u] = p[((long long)(k + u * RW_COL_Y) * q + j) * d + c];
      for (int u = 0; u < RW_UNROLL; u++) s += ps[u];
    }
    for (; k < chunks; k += RW_COL_Y) s += p[((long long)k * q + j) * d + c];
  }
  return rw_col_reduce(s, sh);
}

// rw_chunk_combine finishes a one-launch column reduction of Q sums per column, v (each as
// rw_col_reduce returns it). With one chunk v stays as it is. With several, thread y = 0 of
// column c < d writes v as this block's partials, and in the last block to arrive
// (rw_last_chunk) v becomes the sums over all chunks (rw_chunk_sum's order). It returns true
// in the threads that hold column c's final sums and should write the outputs: y = 0,
// c < d, and the last block (or the only one). Every thread of the block must call it; sh is
// the kernel's shared scratch of rw_col_reduce.
template <int Q>
__device__ __forceinline__ bool rw_chunk_combine(double (&v)[Q], double* part, unsigned* count,
                                                 int d, int c, int* flag,
                                                 double (*sh)[RW_COL_X + 1]) {
  bool mine = c < d && threadIdx.y == 0;
  if (gridDim.y == 1) return mine;
  if (mine) {
    double* p = rw_part(part, Q, d, c);
    for (int j = 0; j < Q; j++) p[(long long)j * d] = v[j];
  }
  if (!rw_last_chunk(count, flag)) return false; // the same in every thread of the block
  for (int j = 0; j < Q; j++) v[j] = rw_chunk_sum(part, gridDim.y, Q, j, d, c, sh);
  return mine;
}
