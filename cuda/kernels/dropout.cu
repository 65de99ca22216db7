// dropout.cu: inverted dropout whose mask is a pure function of (seed, element index), so the
// backward pass recomputes it instead of storing it, and forward and backward are one kernel.
//
// CPU twin: cuda.DropoutKeep in cuda/dropout.go (the nn package has no dropout: the paper's
// settings use none; this is here for the configurations that do).
//   keep(i) = u(seed, i) ≥ p with u = (splitmix64(seed ⊕ i·0x9E3779B97F4A7C15) >> 40)·2⁻²⁴
//   out[i]  = keep(i) ? x[i]·scale : 0,  scale = 1/(1 − p)
// The backward pass is the same kernel on the output gradient with the same seed.
#include "common.cuh"

__device__ __forceinline__ float rw_uniform(unsigned long long seed, unsigned long long i) {
  unsigned long long z = seed ^ (i * 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z = z ^ (z >> 31);
  return (float)(z >> 40) * (1.0f / 16777216.0f);
}

extern "C" __global__ void dropout(float* out, const float* x, int n, float p, float scale,
                                   unsigned long long seed) {
  RW_FOR(i, n) out[i] = rw_uniform(seed, (unsigned long long)i) >= p ? x[i] * scale : 0.0f;
}
