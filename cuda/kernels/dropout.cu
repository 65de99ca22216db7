// dropout.cu: inverted dropout whose mask is a pure function of (seed, element index), so the
// backward pass recomputes it instead of storing it, and forward and backward are one kernel.
//
// CPU twin: ops.Dropout (ops/dropout.go, its mask ops.DropKeep), bit for bit. With
// seed = DropState.Seed ⊕ splitmix64(step) (ops.DropState.StepSeed, computed on the host):
//   z       = splitmix64(seed ⊕ i·0x9E3779B97F4A7C15)   (increment, then the finaliser)
//   keep(i) = (z >> 11) ≥ threshold,  threshold = ⌈rate·2⁵³⌉
// which is nn's unitFloat(z) = (z >> 11)·2⁻⁵³ ≥ rate in exact integer form.
//   out[i]  = keep(i) ? x[i]·scale : 0,  scale = float32(1/(1 − rate))
// The backward pass is the same kernel on the output gradient with the same seed. The step's
// part of the seed is read from the device (the 64-bit word at sc + 4, cuda.StepScalars), so
// that a captured step replays with each step's masks: seed = base ⊕ mix, base = DropState.Seed.
#include "common.cuh"

__device__ __forceinline__ unsigned long long rw_splitmix64(unsigned long long z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

extern "C" __global__ void dropout(float* out, const float* x, int n, float scale,
                                   unsigned long long base, const unsigned* sc,
                                   unsigned long long threshold) {
  const unsigned long long seed = base ^ ((unsigned long long)sc[4] | (unsigned long long)sc[5] << 32);
  RW_FOR(i, n) {
    unsigned long long z = rw_splitmix64(seed ^ ((unsigned long long)i * 0x9E3779B97F4A7C15ull));
    out[i] = (z >> 11) >= threshold ? x[i] * scale : 0.0f;
  }
}
