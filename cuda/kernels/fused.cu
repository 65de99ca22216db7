// fused.cu: producers that also take the training statistics of the batch norm reading their
// output, in the same pass (the executor's Plan.foldStats): GatedGCN's edge sum ê, read by the
// edges' batch norm, and its residual sum A h + aggregate, read by the nodes'. Each stores its
// values as its plain kernel does (sums.cuh: the same bits) and the statistics as
// bn_train_stats computes them from the stored values (bnstats.cuh: the same bits), on
// bn_train_stats's grid (column tiles × row chunks of rpc rows, blocks of RW_COL_X ×
// RW_COL_Y), so the batch norm only normalises (bn_apply) and nothing reads ê twice.
//
// CPU twins: ops.EdgeSum and nn.Add (the sums), then ops.BatchNorm's statistics.
#include "common.cuh"
#include "bnstats.cuh"
#include "sums.cuh"
#include "gate.cuh"

// EdgeSumSrc computes edge_sum's element (r, c) (at; it reads only row r of e) and stores it
// (put). With bf the output is stored in bf16, and at gives the rounded value, so that the
// statistics are those of the stored values, as bn_train_stats would take them. With gate.out
// not null, put also adds the stored value into the gated aggregation's sums (edge_sum's
// gout: gate.cuh), in this grid's order.
struct EdgeSumSrc {
  float* out;
  const float *e, *be, *hs, *bs, *ht, *bt;
  const int *src, *dst;
  int rows, d, bf;
  RwGate gate;
  __device__ __forceinline__ float at(int r, int c) const {
    float v = rw_edge_sum_at(e, be, hs, bs, ht, bt, src, dst, r, c, rows, d);
    return bf ? rw_round_bf16(v) : v;
  }
  __device__ __forceinline__ void put(int r, int c, float v) const {
    rw_st(out, bf, (long long)r * d + c, v);
    if (gate.out) gate.add(r, c, v);
  }
};

// AddBiasedSrc computes add_biased's element (r, c) (at; it reads only element (r, c) of a and
// b) and stores it (put).
struct AddBiasedSrc {
  float* out;
  const float *a, *ba, *b, *bb, *db;
  int d;
  __device__ __forceinline__ float at(int r, int c) const {
    return rw_add_biased_at(a, ba, b, bb, db, (long long)r * d + c, c);
  }
  __device__ __forceinline__ void put(int r, int c, float v) const { out[(long long)r * d + c] = v; }
};

// edge_sum_stats: edge_sum over m edges, then bn_train_stats of its output over the kept edges;
// with obf the output is stored in bf16, and with gout the gated aggregation is folded in
// (edge_sum's obf and gout … nodes).
extern "C" __global__ void edge_sum_stats(float* out, const float* e, const float* be,
                                          const float* hs, const float* bs, const float* ht,
                                          const float* bt, const int* src, const int* dst, int m,
                                          int rows, int d, int obf, float* gout, float* gden,
                                          const float* gbh, const float* gbb, int nbh, int nodes,
                                          float* mean, float* invstd, float* run_mean,
                                          float* run_var, double* part, unsigned* count,
                                          const int* keep, int rpc, float eps, float momentum) {
  RwGate gate{gout, gden, gbh, gbb, src, dst, d, nbh, nodes};
  bn_stats_pass<true>(EdgeSumSrc{out, e, be, hs, bs, ht, bt, src, dst, rows, d, obf, gate},
                      BnStats{mean, invstd, run_mean, run_var, part, count, keep, eps, momentum}, m, d, rpc);
}

// add_biased_stats: add_biased over rows, then bn_train_stats of its output over the kept rows.
extern "C" __global__ void add_biased_stats(float* out, const float* a, const float* ba,
                                            const float* b, const float* bb, const float* db,
                                            int rows, int d, float* mean, float* invstd,
                                            float* run_mean, float* run_var, double* part,
                                            unsigned* count, const int* keep, int rpc, float eps,
                                            float momentum) {
  bn_stats_pass<true>(AddBiasedSrc{out, a, ba, b, bb, db, d},
                      BnStats{mean, invstd, run_mean, run_var, part, count, keep, eps, momentum}, rows, d, rpc);
}
