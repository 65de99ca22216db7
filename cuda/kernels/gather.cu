// gather.cu: gather rows by index, and its adjoint scatter-add.
//
// CPU twins: kern.GatherRows and kern.ScatterAddRows in kern/rows.go (ops ops.Gather, ops.Embed,
// ops.ScatterAdd). Gather's gradient is ScatterAdd with the same index, and vice versa.
//
// Shapes: x [rows, d]; idx [n] int32 (-1: no row); w [n] optional per-entry weights (null
// pointer: weight 1).
#include "common.cuh"
#include "sums.cuh"
#include "gate.cuh"

// gather_rows: out [n, d], out[i,:] = w[i]·x[idx[i],:], a zero row where idx[i] = -1.
// One thread per output element; fully overwrites out.
extern "C" __global__ void gather_rows(float* out, const float* x, const int* idx, const float* w,
                                       int n, int rows, int d) {
  RW_FOR(e, (long long)n * d) {
    int i = (int)(e / d);
    int c = (int)(e - (long long)i * d);
    int j = rw_valid(idx[i], rows);
    float v = 0.0f;
    if (j >= 0) {
      v = x[(long long)j * d + c];
      if (w) v *= w[i];
    }
    out[e] = v;
  }
}

// scatter_add_rows: out [rows, d] += w[i]·x[i,:] at row idx[i], skipping idx[i] = -1.
// The Go side zero-fills out on the same stream first, so the op as a whole overwrites out.
// One thread per input element, float atomics (summation order is not fixed).
extern "C" __global__ void scatter_add_rows(float* out, const float* x, const int* idx,
                                            const float* w, int n, int rows, int d) {
  RW_FOR(e, (long long)n * d) {
    int i = (int)(e / d);
    int c = (int)(e - (long long)i * d);
    int j = rw_valid(idx[i], rows);
    if (j < 0) continue;
    float v = x[e];
    if (w) v *= w[i];
    atomicAdd(&out[(long long)j * d + c], v);
  }
}

// scatter_add_pair: ds [rows, d] += g[i,:] at row src[i] and dt [rows, d] += g[i,:] at row
// dst[i], skipping -1: the gradients of edge_sum's hs and ht in one pass over g. The Go side
// zero-fills both first (fill2). Float atomics, as scatter_add_rows.
extern "C" __global__ void scatter_add_pair(float* ds, float* dt, const float* g, const int* src,
                                            const int* dst, int m, int rows, int d) {
  RW_FOR(e, (long long)m * d) {
    int i = (int)(e / d);
    int c = (int)(e - (long long)i * d);
    rw_edge_sum_grad_add(ds, dt, src, dst, i, c, rows, d, g[e]);
  }
}

// edge_sum: out [m, d] = e + hs[src] + ht[dst] row by row (GatedGCN's Ce + Dh_src + Eh_dst);
// an index of -1 adds nothing. hs and ht are [rows, d]. CPU twin: nn.EdgeSum (edgeSum). Its
// gradients are the output gradient for e and scatter_add_rows along src and dst. Each operand
// may carry a bias [d] (be, bs, bt; null for none) added to it first, as add_bias would have
// (a row of -1 adds nothing, bias included): the executor folds the products' bias adds here.
// With obf, out is stored in bf16 (common.cuh: the executor's train.precision bf16 for ê).
// With gout not null, the gated aggregation reading ê is folded in (the executor's
// Plan.foldGate): each element, as stored, is also added into the gate's sums gout and
// denominators gden [nodes, d] along the same src and dst, with gbh [nbh, d] (and its bias gbb
// or null) the gated values: gated_edges's additions (gate.cuh), on its grid, in its order.
extern "C" __global__ void edge_sum(float* out, const float* e, const float* be, const float* hs,
                                    const float* bs, const float* ht, const float* bt,
                                    const int* src, const int* dst, int m, int rows, int d,
                                    int obf, float* gout, float* gden, const float* gbh,
                                    const float* gbb, int nbh, int nodes) {
  RwGate gate{gout, gden, gbh, gbb, src, dst, d, nbh, nodes};
  RW_FOR(x, (long long)m * d) {
    int k = (int)(x / d);
    int c = (int)(x - (long long)k * d);
    float v = rw_edge_sum_at(e, be, hs, bs, ht, bt, src, dst, k, c, rows, d);
    rw_st(out, obf, x, v);
    if (gout) gate.add(k, c, obf ? rw_round_bf16(v) : v);
  }
}
