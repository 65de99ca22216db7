// elementwise.cu: element-wise maps, row bias and column sums.
//
// CPU twins: ops.Add, ops.Relu (reluKernel, reluGrad) in ops/elementwise.go; ops.AddBias and
// ops.ColSum (kern.AddBias, kern.ColSum in kern/rows.go); gorgonia.Sigmoid, gorgonia.Tanh, gorgonia.Exp,
// gorgonia.Abs and gorgonia.Sqrt with their gorgonia gradients (nn.Builder's Sigmoid, Tanh, Exp,
// Abs, Sqrt; kern.Unary).
//
// Element-wise kernels take n elements; gradients of maps whose derivative is a function of
// the output take y = f(x), as the CPU ops do:
//   relu' = [y > 0], sigmoid' = y(1 − y), tanh' = 1 − y², exp' = y (ew_mul), abs' = sign(x),
//   sqrt' = 1/(2y): gorgonia's g ÷ (2 ⊙ y) (ew_scalar, then ew_div).
// sqrtf is correctly rounded (NVRTC's default -prec-sqrt=true, no fast-math), so ew_sqrt has
// the bits of the CPU's float32 sqrt (math32.Sqrt); a NaN for x < 0.
#include "common.cuh"
#include "sums.cuh"

extern "C" __global__ void ew_add(float* out, const float* a, const float* b, int n) {
  RW_FOR(i, n) out[i] = a[i] + b[i];
}

// fill2: a[i] = va and b[i] = vb for i < n: two fills in one launch (the accumulators of an
// atomic pass: the gated aggregation's sums, the edge sum's two gradients).
extern "C" __global__ void fill2(float* a, float va, float* b, float vb, int n) {
  RW_FOR(i, n) {
    a[i] = va;
    b[i] = vb;
  }
}

// fill_batch: gridDim.y fills in one launch (the executor's prologue fills of a step's
// accumulators): fill z sets the tab[3z+1] 4-byte words from device address tab[3z] to the
// bits tab[3z+2] (a pointer table in device memory).
extern "C" __global__ void fill_batch(const unsigned long long* tab) {
  int z = blockIdx.y;
  unsigned* p = rw_addr<unsigned>(tab[3 * z]);
  long long n = (long long)tab[3 * z + 1];
  unsigned v = (unsigned)tab[3 * z + 2];
  RW_FOR(i, n) p[i] = v;
}

// add_biased: out [rows, d] = (a + ba) + (b / db), each bias [d] and the divisor db [rows, d]
// optional (null): an ew_add whose first operand is a product the executor did not add its
// bias to (add_bias's sums), and whose second is such a product or a gated aggregation's
// undivided sums (its gated_div's quotients).
extern "C" __global__ void add_biased(float* out, const float* a, const float* ba, const float* b,
                                      const float* bb, const float* db, int rows, int d) {
  RW_FOR(e, (long long)rows * d) out[e] = rw_add_biased_at(a, ba, b, bb, db, e, (int)(e % d));
}

extern "C" __global__ void ew_mul(float* out, const float* a, const float* b, int n) {
  RW_FOR(i, n) out[i] = a[i] * b[i];
}

extern "C" __global__ void ew_sub(float* out, const float* a, const float* b, int n) {
  RW_FOR(i, n) out[i] = a[i] - b[i];
}

extern "C" __global__ void ew_div(float* out, const float* a, const float* b, int n) {
  RW_FOR(i, n) out[i] = a[i] / b[i];
}

// ew_scalar: out = x ∘ s (left = 0) or s ∘ x (left = 1), s = *sp a device scalar, ∘ by op:
// 0 add, 1 sub, 2 mul, 3 div (cuda.ScalarAdd …). CPU twin: gorgonia's element-wise operators
// with a scalar operand.
extern "C" __global__ void ew_scalar(float* out, const float* x, const float* sp, int n, int op, int left) {
  float s = sp[0];
  RW_FOR(i, n) {
    float a = left ? s : x[i], b = left ? x[i] : s;
    float r;
    switch (op) {
      case 0: r = a + b; break;
      case 1: r = a - b; break;
      case 2: r = a * b; break;
      default: r = a / b; break;
    }
    out[i] = r;
  }
}

extern "C" __global__ void ew_relu(float* out, const float* x, int n) {
  RW_FOR(i, n) out[i] = fmaxf(x[i], 0.0f);
}

// relu_biased: out [rows, d] = relu(x + b) for a bias b [d] the executor folded in (the bits of
// add_bias, then ew_relu).
extern "C" __global__ void relu_biased(float* out, const float* x, const float* b, int rows, int d) {
  RW_FOR(e, (long long)rows * d) out[e] = fmaxf(x[e] + b[e % d], 0.0f);
}

extern "C" __global__ void ew_relu_grad(float* dx, const float* y, const float* g, int n) {
  RW_FOR(i, n) dx[i] = y[i] > 0.0f ? g[i] : 0.0f;
}

// ew_gelu, ew_gelu_grad: GELU in its tanh form and its gradient from x (CPU twin: kern.Gelu,
// kern.GeluGrad in kern/gelu.go, in float64 there: equal to rounding).
//   gelu(x) = x/2·(1 + tanh(u)), u = √(2/π)(x + 0.044715x³);
//   gelu'(x) = (1 + t)/2 + x/2·(1 − t²)·√(2/π)(1 + 3·0.044715x²), t = tanh(u).
extern "C" __global__ void ew_gelu(float* out, const float* x, int n) {
  RW_FOR(i, n) {
    float v = x[i];
    out[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
}

extern "C" __global__ void ew_gelu_grad(float* dx, const float* x, const float* g, int n) {
  RW_FOR(i, n) {
    float v = x[i];
    float t = tanhf(0.7978845608f * (v + 0.044715f * v * v * v));
    dx[i] = g[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * 0.7978845608f * (1.0f + 3.0f * 0.044715f * v * v));
  }
}

extern "C" __global__ void ew_sigmoid(float* out, const float* x, int n) {
  RW_FOR(i, n) out[i] = rw_sigmoid(x[i]);
}

extern "C" __global__ void ew_sigmoid_grad(float* dx, const float* y, const float* g, int n) {
  RW_FOR(i, n) dx[i] = g[i] * y[i] * (1.0f - y[i]);
}

extern "C" __global__ void ew_tanh(float* out, const float* x, int n) {
  RW_FOR(i, n) out[i] = tanhf(x[i]);
}

extern "C" __global__ void ew_tanh_grad(float* dx, const float* y, const float* g, int n) {
  RW_FOR(i, n) dx[i] = g[i] * (1.0f - y[i] * y[i]);
}

extern "C" __global__ void ew_exp(float* out, const float* x, int n) {
  RW_FOR(i, n) out[i] = expf(x[i]);
}

extern "C" __global__ void ew_abs(float* out, const float* x, int n) {
  RW_FOR(i, n) out[i] = fabsf(x[i]);
}

// ew_abs_grad: dx = g·sign(x), with sign(0) = 0.
extern "C" __global__ void ew_abs_grad(float* dx, const float* x, const float* g, int n) {
  RW_FOR(i, n) dx[i] = x[i] > 0.0f ? g[i] : (x[i] < 0.0f ? -g[i] : 0.0f);
}

extern "C" __global__ void ew_sqrt(float* out, const float* x, int n) {
  RW_FOR(i, n) out[i] = sqrtf(x[i]);
}

// add_bias: out [rows, d] = x + b for b [d] on every row. Gradient: dx = g, db = col_sum(g).
extern "C" __global__ void add_bias(float* out, const float* x, const float* b, int rows, int d) {
  RW_FOR(e, (long long)rows * d) out[e] = x[e] + b[e % d];
}

// col_sum_batch: col_sum of gridDim.z matrices [rows, d] at once, matrix z at address xs[z]
// and its sums at outs[z] (pointer tables in device memory), each with col_sum's geometry
// (grid x and y) and its own partials (part + z·chunks·d) and arrival counters
// (count + z·tiles): per matrix, the bits of col_sum.
extern "C" __global__ void col_sum_batch(const unsigned long long* outs, const unsigned long long* xs,
                                         double* part, unsigned* count, int rows, int d, int rpc) {
  __shared__ double sh[RW_COL_Y][RW_COL_X + 1];
  __shared__ int last;
  int z = blockIdx.z;
  const float* x = rw_addr<const float>(xs[z]);
  int c = blockIdx.x * RW_COL_X + threadIdx.x;
  int r0, r1;
  rw_chunk_rows(rows, rpc, &r0, &r1);
  double v[1] = {rw_col_sum_rows(x, r0, r1, d, c, sh)};
  if (rw_chunk_combine(v, part + (long long)z * gridDim.y * d, count + (long long)z * gridDim.x, d, c, &last, sh))
    rw_addr<float>(outs[z])[c] = (float)v[0];
}

// broadcast_rows: out [rows, d] = v [d] on every row (the gradient of col_sum).
extern "C" __global__ void broadcast_rows(float* out, const float* v, int rows, int d) {
  RW_FOR(e, (long long)rows * d) out[e] = v[e % d];
}

// col_sum: out [d] = Σ_r x[r,:], on RW_COL_X × RW_COL_Y blocks, one per RW_COL_X columns and
// row chunk of rpc rows (grid: column tiles × chunks; one chunk: every row). With several
// chunks each block writes its chunk's sums to part[chunk·d + c] and the last block of a
// column tile adds them in a fixed order (rw_chunk_combine; count: the tiles' arrival counters).
extern "C" __global__ void col_sum(float* out, double* part, unsigned* count, const float* x,
                                   int rows, int d, int rpc) {
  __shared__ double sh[RW_COL_Y][RW_COL_X + 1];
  __shared__ int last;
  int c = blockIdx.x * RW_COL_X + threadIdx.x;
  int r0, r1;
  rw_chunk_rows(rows, rpc, &r0, &r1);
  double v[1] = {rw_col_sum_rows(x, r0, r1, d, c, sh)};
  if (rw_chunk_combine(v, part, count, d, c, &last, sh)) out[c] = (float)v[0];
}
