// adam.cu: one Adam step on a parameter tensor, in place (the optimiser's state is the
// parameter and its two moments; the gradient is an input and is not written).
//
// CPU twin: nn.Adam in nn/adam.go (adamUpdate); docs/protocol.md §"Optimiser" (PyTorch Adam,
// no weight decay, β₁ = 0.9, β₂ = 0.999, ε = 1e-8). c1 = 1 − β₁ᵗ and c2 = 1 − β₂ᵗ are the bias
// corrections of step t, computed on the host in float64 as nn.Adam does. The step's values
// (lr, c1, c2) are read from the device (sc, cuda.StepScalars), so that a captured training
// step replays with each step's own; one launch updates every parameter of an arena.
//   m = β₁m + (1 − β₁)g;  v = β₂v + (1 − β₂)g²;  x −= lr·(m/c1)/(√(v/c2) + ε)
#include "common.cuh"

extern "C" __global__ void adam_step(float* x, float* m, float* v, const float* g, int n,
                                     const float* sc, float beta1, float beta2, float eps) {
  const float lr = sc[0], c1 = sc[1], c2 = sc[2];
  RW_FOR(i, n) {
    double gi = g[i];
    double mi = (double)beta1 * m[i] + (1.0 - (double)beta1) * gi;
    double vi = (double)beta2 * v[i] + (1.0 - (double)beta2) * gi * gi;
    m[i] = (float)mi;
    v[i] = (float)vi;
    x[i] = (float)(x[i] - (double)lr * (mi / c1) / (sqrt(vi / c2) + (double)eps));
  }
}
