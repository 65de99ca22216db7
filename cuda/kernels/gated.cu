// gated.cu: GatedGCN's edge-gated mean aggregation, the edge gate fused with the aggregation,
// forward and backward.
//
// CPU twin: ops.GatedAggregate in ops/gated.go (gatedForward, gatedBackward);
// docs/protocol.md §"GatedGCN layer". With η = σ(ê) per edge and feature,
//   out[i] = Σ_{m: dst[m]=i} η_m ⊙ bh[src[m]]  ⊘  (Σ_{m: dst[m]=i} η_m + 1e-6).
// Padding edges (src or dst -1) are skipped; a node without in-edges gets 0.
//
// Shapes: ehat, de [m, d]; bh, dbh [nbh, d]; out, den, g [nodes, d]; src, dst [m] int32.
// The forward keeps den and out for the backward; η is not kept but recomputed from ê by the
// same rw_sigmoid (as the CPU twin does).
//
// Forward on one stream:
//   fill2        out = 0, den = 1e-6 (one launch for both fills; elementwise.cu)
//   gated_edges  one thread per (edge, feature): η, out[t] += η·bh[s], den[t] += η
//   gated_div    out /= den
// Backward (the Go side zero-fills dbh):
//   gated_backward  η = σ(ê); de = g[t]·(bh[s] − out[t])/den[t]·η(1−η);  dbh[s] += g[t]·η/den[t]
// With raw, the forward leaves out undivided (no gated_div: the executor folded the division
// into the addition reading it, add_biased), and the backward divides out[t] by den[t] where it
// reads it (the bits of gated_div's quotient).
// bb, where not null, is a bias [d] the executor folded in: bh's rows are read as bh + bb (the
// bits of an add_bias before). With acc, gated_backward adds de into the buffer instead (the
// last term of a gradient sum the executor folded in: the bits of the ew_add it replaces).
// ds and dt, where not null, are the gradients [srows, d] of the edge sum whose output ê is
// (GatedGCN's Ce + Dh_src + Eh_dst): gated_backward then also adds each edge's final dê row
// into ds at row src and into dt at row dst (an index of -1 adds nothing), as scatter_add_pair
// would in a pass of its own over dê; the executor folds that pass in (into buffers a fill step
// zeroed). Each buffer receives its atomic additions in the order scatter_add_pair's
// would, on the same grid: the emulator's schedule gives the same bits.
// bdy, where not null, makes dê's first term the dx of the batch norm that reads ê
// (rw_bn_dx_at over bdy, bx, …, btot: the column sums bn_backward left with sums_only), in
// place of bn_backward_dx storing it and acc adding v to it: the same float addition, so the
// same bits, and one pass over dê less (the executor's Plan.foldBNDx).
// ebf (both passes) and bxbf: ê (ehat) and the batch norm's x (bx) are stored in bf16 (common.cuh; the
// executor's train.precision bf16); the gradients stay float32.
#include "common.cuh"
#include "gate.cuh"
#include "sums.cuh"

extern "C" __global__ void gated_edges(float* out, float* den, const float* ehat, const float* bh,
                                       const float* bb, const int* src, const int* dst, int m, int d,
                                       int nbh, int nodes, int ebf) {
  RwGate gate{out, den, bh, bb, src, dst, d, nbh, nodes};
  RW_FOR(e, (long long)m * d) {
    int k = (int)(e / d);
    int c = (int)(e - (long long)k * d);
    gate.add(k, c, rw_ld(ehat, ebf, e));
  }
}

extern "C" __global__ void gated_div(float* out, const float* den, int nodes, int d) {
  RW_FOR(e, (long long)nodes * d) out[e] = out[e] / den[e];
}

extern "C" __global__ void gated_backward(float* de, float* dbh, float* ds, float* dt,
                                          const float* g, const float* bh, const float* bb,
                                          const float* out, const float* den, const float* ehat,
                                          const int* src, const int* dst, const float* bdy,
                                          const float* bx, const float* bmean, const float* binv,
                                          const float* bgamma, const float* bbeta,
                                          const int* bkeep, const double* btot, int m, int d,
                                          int nbh, int nodes, int srows, int acc, int raw,
                                          int btrain, int ebf, int bxbf) {
  RW_FOR(e, (long long)m * d) {
    int k = (int)(e / d);
    int c = (int)(e - (long long)k * d);
    int s = rw_valid(src[k], nbh);
    int t = rw_valid(dst[k], nodes);
    float v = 0.0f;
    if (s >= 0 && t >= 0) {
      long long te = (long long)t * d + c;
      long long se = (long long)s * d + c;
      float h = rw_sigmoid(rw_ld(ehat, ebf, e));
      float gd = g[te] / den[te];
      float o = raw ? out[te] / den[te] : out[te];
      v = gd * (rw_bh(bh, bb, se, c) - o) * h * (1.0f - h);
      atomicAdd(&dbh[se], gd * h);
    }
    float w;
    if (bdy)
      w = rw_bn_dx_at(bdy, bx, bxbf, bmean, binv, bgamma, bbeta, bkeep, btot, k, e, c, d, btrain) + v;
    else
      w = acc ? de[e] + v : v;
    de[e] = w;
    if (ds) rw_edge_sum_grad_add(ds, dt, src, dst, k, c, srows, d, w);
  }
}
