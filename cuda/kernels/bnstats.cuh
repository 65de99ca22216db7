// bnstats.cuh: batch normalisation's training statistics as a pass any column kernel can make
// (batchnorm.cu's bn_train_stats over a stored x; fused.cu's producers over the values they
// compute and store). NVRTC receives it as a named header.
#pragma once
#include "common.cuh"

// bn_stats_store writes column c's statistics from the mean mu, the count cnt and the centred
// sum of squares q of its kept rows, and updates its running statistics.
__device__ __forceinline__ void bn_stats_store(int c, double mu, double cnt, double q,
                                               float* mean, float* invstd, float* run_mean,
                                               float* run_var, float eps, float momentum) {
  double var = cnt > 0.0 ? q / cnt : 0.0;
  double unbiased = cnt > 1.0 ? q / (cnt - 1.0) : var;
  double m = momentum;
  mean[c] = (float)mu;
  invstd[c] = (float)(1.0 / sqrt(var + (double)eps));
  run_mean[c] = (float)((1.0 - m) * run_mean[c] + m * mu);
  run_var[c] = (float)((1.0 - m) * run_var[c] + m * unbiased);
}

// bn_merge adds a group of nb rows with mean mb and centred sum of squares qb to the group
// (n, mu, m2): Chan et al.'s parallel formula, exact in exact arithmetic and free of the
// cancellation of Σx² − n·mean². An empty group changes nothing.
__device__ __forceinline__ void bn_merge(double* n, double* mu, double* m2, double nb, double mb,
                                         double qb) {
  if (nb == 0.0) return;
  double nab = *n + nb;
  double delta = mb - *mu;
  *mu += delta * (nb / nab);
  *m2 += qb + delta * delta * (*n * (nb / nab));
  *n = nab;
}

// bn_moments_add adds a kept row's value x to a thread's sums: v − k and (v − k)² with k the
// first kept value (bn_chunk_moments).
__device__ __forceinline__ void bn_moments_add(float x, double* k, double* a, double* q, double* cnt) {
  double v = x;
  if (*cnt == 0.0) *k = v;
  v -= *k;
  *a += v;
  *q += v * v;
  *cnt += 1.0;
}

// bn_chunk_moments sets *n, *mu, *m2 to the count, mean and centred sum of squares of the kept
// rows in [r0, r1) of column c (zeros for c ≥ d or no kept rows), in one pass over the values
// src.at(r, c) gives, in the threads with threadIdx.y = 0 (every thread of the block must call
// it; sh is __shared__). With kAll, src is a producer: src.put(r, c, v) stores every row's value
// (kept or not). Each thread takes RW_UNROLL rows at a time (RW_UNROLL in common.cuh): their
// values first (a dropped row's too, which lies in the buffers), then the stores, then the
// kept rows' sums in row order.
// Each thread sums v − k and (v − k)² over its rows, k its own first kept value (so the sums
// do not cancel when the mean is far from 0, and dropped rows, whatever they hold, play no
// part), and turns them into its rows' mean and centred sum of squares; thread y = 0 then
// merges the RW_COL_Y threads of its column in order y = 0, 1, … (bn_merge: deterministic).
template <bool kAll, class Src>
__device__ __forceinline__ void bn_chunk_moments(const Src& src, const int* keep, int r0, int r1,
                                                 int d, int c,
                                                 double (*sh)[RW_COL_Y][RW_COL_X + 1],
                                                 double* n, double* mu, double* m2) {
  double k = 0.0, a = 0.0, q = 0.0, cnt = 0.0;
  if (c < d) {
    int r = r0 + threadIdx.y;
    for (; r + (RW_UNROLL - 1) * RW_COL_Y < r1; r += RW_UNROLL * RW_COL_Y) {
      int ks[RW_UNROLL];
      float xs[RW_UNROLL];
      for (int u = 0; u < RW_UNROLL; u++) {
        ks[u] = keep[r + u * RW_COL_Y];
        xs[u] = src.at(r + u * RW_COL_Y, c);
      }
      if (kAll)
        for (int u = 0; u < RW_UNROLL; u++) src.put(r + u * RW_COL_Y, c, xs[u]);
      for (int u = 0; u < RW_UNROLL; u++)
        if (ks[u]) bn_moments_add(xs[u], &k, &a, &q, &cnt);
    }
    for (; r < r1; r += RW_COL_Y) {
      float x = 0.0f;
      if (kAll) {
        x = src.at(r, c);
        src.put(r, c, x);
      }
      if (keep[r]) bn_moments_add(kAll ? x : src.at(r, c), &k, &a, &q, &cnt);
    }
  }
  double ss = cnt > 0.0 ? q - a * (a / cnt) : 0.0;
  rw_col_put(cnt, sh[0]);
  rw_col_put(cnt > 0.0 ? k + a / cnt : 0.0, sh[1]);
  rw_col_put(ss > 0.0 ? ss : 0.0, sh[2]); // rounding may leave −ε
  *n = *mu = *m2 = 0.0;
  if (threadIdx.y == 0)
    for (int y = 0; y < RW_COL_Y; y++)
      bn_merge(n, mu, m2, sh[0][y][threadIdx.x], sh[1][y][threadIdx.x], sh[2][y][threadIdx.x]);
}

// bn_chunks_merge sets *n, *mu, *m2, in thread y = 0 of column c, to the merge of the chunks'
// partials part[(k·3 + j)·d + c] (j = 0 count, 1 mean, 2 centred sum of squares) in
// rw_chunk_sum's order: thread row y merges the chunks y, y + RW_COL_Y, … in order, then
// thread y = 0 merges the rows' groups in order y = 0, 1, … (an empty group changes nothing, so
// with at most RW_COL_Y chunks that is chunk order). Every thread of the (last) block must
// call it.
__device__ __forceinline__ void bn_chunks_merge(const double* part, int d, int c,
                                                double (*sh)[RW_COL_Y][RW_COL_X + 1], double* n,
                                                double* mu, double* m2) {
  const volatile double* p = part; // other blocks' partials: see rw_chunk_sum
  double gn = 0.0, gmu = 0.0, gm2 = 0.0;
  if (c < d) {
    int k = threadIdx.y, chunks = (int)gridDim.y;
    for (; k + (RW_UNROLL - 1) * RW_COL_Y < chunks; k += RW_UNROLL * RW_COL_Y) { // loads first
      double ps[RW_UNROLL][3];
      for (int u = 0; u < RW_UNROLL; u++) {
        long long at = (long long)(k + u * RW_COL_Y) * 3 * d + c;
        ps[u][0] = p[at];
        ps[u][1] = p[at + d];
        ps[u][2] = p[at + 2 * d];
      }
      for (int u = 0; u < RW_UNROLL; u++) bn_merge(&gn, &gmu, &gm2, ps[u][0], ps[u][1], ps[u][2]);
    }
    for (; k < chunks; k += RW_COL_Y) {
      long long at = (long long)k * 3 * d + c;
      bn_merge(&gn, &gmu, &gm2, p[at], p[at + d], p[at + 2 * d]);
    }
  }
  rw_col_put(gn, sh[0]);
  rw_col_put(gmu, sh[1]);
  rw_col_put(gm2, sh[2]);
  *n = *mu = *m2 = 0.0;
  if (threadIdx.y == 0)
    for (int y = 0; y < RW_COL_Y; y++)
      bn_merge(n, mu, m2, sh[0][y][threadIdx.x], sh[1][y][threadIdx.x], sh[2][y][threadIdx.x]);
}

// BnLoad reads x [rows, d] (stored in bf16 where bf): bn_train_stats's source (nothing to
// store).
struct BnLoad {
  const float* x;
  int d, bf;
  __device__ __forceinline__ float at(int r, int c) const { return rw_ld(x, bf, (long long)r * d + c); }
  __device__ __forceinline__ void put(int, int, float) const {}
};

// BnStats are a training batch norm's statistics outputs: mean and 1/σ, the running statistics
// it updates, the chunks' partials and the column tiles' arrival counters, the kept rows.
struct BnStats {
  float *mean, *invstd, *run_mean, *run_var;
  double* part;
  unsigned* count;
  const int* keep;
  float eps, momentum;
};

// bn_stats_pass: per column, over the kept rows, mean and 1/sqrt(biased var + eps), and the
// running statistics updated in place (they are the op's state, not an input), from the values
// src gives (with kAll for every row: see bn_chunk_moments). Grid: column tiles × row chunks
// of rpc rows; blocks of RW_COL_X × RW_COL_Y. Each block takes its chunk's count, mean and
// centred sum of squares in one pass (bn_chunk_moments). With several chunks it writes them
// to part[(chunk·3 + j)·d + c] (j = 0 count, 1 mean, 2 centred sum of squares), and the last
// block of a column tile (rw_last_chunk) merges the chunks (bn_chunks_merge: a fixed order)
// and stores the statistics. Every thread of the block must call it.
template <bool kAll, class Src>
__device__ __forceinline__ void bn_stats_pass(const Src& src, const BnStats& st, int rows, int d,
                                              int rpc) {
  __shared__ double sh[3][RW_COL_Y][RW_COL_X + 1];
  __shared__ int last;
  int c = blockIdx.x * RW_COL_X + threadIdx.x;
  int r0, r1;
  rw_chunk_rows(rows, rpc, &r0, &r1);
  double n, mu, m2;
  bn_chunk_moments<kAll>(src, st.keep, r0, r1, d, c, sh, &n, &mu, &m2);
  bool mine = c < d && threadIdx.y == 0;
  if (gridDim.y > 1) {
    if (mine) {
      double* p = rw_part(st.part, 3, d, c);
      p[0] = n;
      p[d] = mu;
      p[2 * d] = m2;
    }
    if (!rw_last_chunk(st.count, &last)) return; // the same in every thread of the block
    bn_chunks_merge(st.part, d, c, sh, &n, &mu, &m2);
  }
  if (mine) bn_stats_store(c, mu, n, m2, st.mean, st.invstd, st.run_mean, st.run_var, st.eps, st.momentum);
}
