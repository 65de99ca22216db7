// cuda_emu.h: the CUDA features the kernels in cuda/kernels use, for the system C++ compiler.
//
// Every kernel file compiles unchanged as C++17 after this header. The threads of a block are
// real OS threads that run concurrently (runtime.cc): __syncthreads is a barrier of the block's
// threads, __shfl_xor_sync a lock-step exchange among the 32 lanes of a warp (two barriers of
// the warp), atomicAdd, atomicCAS, atomicMax and atomicMin are the compiler's atomic builtins,
// __threadfence its fence.
// A missing barrier or a plain add where an atomic one is needed therefore gives wrong results,
// and data races that ThreadSanitizer reports when the emulator is built with -fsanitize=thread.
//
// Blocks of one launch run one after another, so __shared__ arrays are static locals: one
// instance, reused by each block in turn. Dynamic shared memory, clusters, cooperative groups
// and every intrinsic not defined here are not emulated: a kernel that uses one fails to
// compile, and the Go side names the missing feature (cuda/emu/build.go).
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cmath>
#include <type_traits>
#include <utility>

// Function and memory qualifiers.
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __shared__ static
#define __restrict__ __restrict

namespace rwemu {

struct uint3 {
  unsigned int x, y, z;
};
struct dim3 {
  unsigned int x, y, z;
};

struct Block;
struct Warp;

// Ctx is what one emulated GPU thread knows about itself: its indices, its block and warp.
struct Ctx {
  uint3 thread_idx, block_idx;
  dim3 block_dim, grid_dim;
  Block* block;
  Warp* warp;
  int lane;
  int linear;  // threadIdx.x + blockDim.x·(threadIdx.y + blockDim.y·threadIdx.z)
};

extern thread_local Ctx* ctx;

void syncthreads();
uint64_t shfl_xor_bits(unsigned mask, uint64_t bits, int lane_mask, int width);

template <class T>
T shfl_xor(unsigned mask, T v, int lane_mask, int width) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "__shfl_xor_sync: 8-byte or smaller values");
  uint64_t bits = 0;
  memcpy(&bits, &v, sizeof(T));
  bits = shfl_xor_bits(mask, bits, lane_mask, width);
  T out;
  memcpy(&out, &bits, sizeof(T));
  return out;
}

template <class T>
T bits_atomic_add(T* addr, T v) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "atomicAdd: 4- or 8-byte values");
  using U = typename std::conditional<sizeof(T) == 4, uint32_t, uint64_t>::type;
  U* a = reinterpret_cast<U*>(addr);
  U old = __atomic_load_n(a, __ATOMIC_RELAXED);
  for (;;) {
    T cur;
    memcpy(&cur, &old, sizeof(T));
    T next = cur + v;
    U nb;
    memcpy(&nb, &next, sizeof(T));
    if (__atomic_compare_exchange_n(a, &old, nb, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return cur;
  }
}

// Kernel registration: RWEMU_KERNEL(name), appended to each kernel file by the Go side, makes
// the kernel callable by name with its arguments as 8-byte slots (as cuLaunchKernel gets them).
typedef void (*Thunk)(const uint64_t* slots);

extern intptr_t delta;  // this process's arena address minus the Go process's

template <class T>
struct Arg;
template <class T>
struct Arg<T*> {
  static constexpr char kind = 'p';
  static T* get(uint64_t s) { return s == 0 ? nullptr : reinterpret_cast<T*>((intptr_t)s + delta); }
};
template <>
struct Arg<int> {
  static constexpr char kind = 'i';
  static int get(uint64_t s) { return (int)(uint32_t)s; }
};
template <>
struct Arg<float> {
  static constexpr char kind = 'f';
  static float get(uint64_t s) {
    uint32_t b = (uint32_t)s;
    float f;
    memcpy(&f, &b, 4);
    return f;
  }
};
template <>
struct Arg<unsigned long long> {
  static constexpr char kind = 'u';
  static unsigned long long get(uint64_t s) { return s; }
};

template <class F>
struct Sig;
template <class... A>
struct Sig<void (*)(A...)> {
  static const char* kinds() {
    static const char k[] = {Arg<A>::kind..., 0};
    return k;
  }
  template <void (*F)(A...), size_t... I>
  static void call(const uint64_t* s, std::index_sequence<I...>) {
    F(Arg<A>::get(s[I])...);
  }
  template <void (*F)(A...)>
  static void thunk(const uint64_t* s) {
    call<F>(s, std::index_sequence_for<A...>{});
  }
};

struct Registrar {
  Registrar(const char* name, Thunk fn, const char* kinds);
};

}  // namespace rwemu

// RW_EMU tells the kernels' common header that they run on the emulated GPU. rw_addr turns a
// device address that a kernel reads from device memory (an operand of a pointer table) into a
// pointer of this process, which maps the device memory elsewhere (Arg<T*> does the same for
// pointer arguments).
#define RW_EMU 1
template <class T>
inline T* rw_addr(unsigned long long a) {
  return a == 0 ? nullptr : reinterpret_cast<T*>((intptr_t)a + rwemu::delta);
}

#define RWEMU_KERNEL(name)                                                                     \
  static rwemu::Registrar rwemu_reg_##name(#name, &rwemu::Sig<decltype(&name)>::thunk<&name>, \
                                           rwemu::Sig<decltype(&name)>::kinds())

// Built-in variables.
#define threadIdx (rwemu::ctx->thread_idx)
#define blockIdx (rwemu::ctx->block_idx)
#define blockDim (rwemu::ctx->block_dim)
#define gridDim (rwemu::ctx->grid_dim)
#define warpSize 32

// Synchronisation and warp exchange.
inline void __syncthreads() { rwemu::syncthreads(); }

template <class T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  return rwemu::shfl_xor(mask, v, lane_mask, width);
}

// __threadfence orders the calling thread's memory accesses for the whole device (the
// column reductions' hand-over from every block to the last one, rw_last_chunk): a
// sequentially consistent fence. Blocks run one after another here, so nothing depends on
// it; under ThreadSanitizer, which does not model standalone fences (GCC warns), it is a
// compiler barrier only.
inline void __threadfence() {
#if defined(__SANITIZE_THREAD__)
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

// Atomics (relaxed, as on the GPU; each is one indivisible read-modify-write).
inline float atomicAdd(float* a, float v) { return rwemu::bits_atomic_add(a, v); }
inline double atomicAdd(double* a, double v) { return rwemu::bits_atomic_add(a, v); }
inline int atomicAdd(int* a, int v) { return __atomic_fetch_add(a, v, __ATOMIC_RELAXED); }
inline unsigned atomicAdd(unsigned* a, unsigned v) { return __atomic_fetch_add(a, v, __ATOMIC_RELAXED); }
inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) {
  return __atomic_fetch_add(a, v, __ATOMIC_RELAXED);
}

template <class T>
inline T rwemu_cas(T* a, T compare, T val) {
  __atomic_compare_exchange_n(a, &compare, val, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return compare;  // the old value, whether or not it was swapped
}
inline int atomicCAS(int* a, int compare, int val) { return rwemu_cas(a, compare, val); }
inline unsigned atomicCAS(unsigned* a, unsigned compare, unsigned val) { return rwemu_cas(a, compare, val); }
inline unsigned long long atomicCAS(unsigned long long* a, unsigned long long compare, unsigned long long val) {
  return rwemu_cas(a, compare, val);
}

// atomicMax and atomicMin on int: a compare-and-swap loop (the result is the same in any order).
inline int atomicMax(int* a, int v) {
  int old = __atomic_load_n(a, __ATOMIC_RELAXED);
  while (old < v && !__atomic_compare_exchange_n(a, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
inline int atomicMin(int* a, int v) {
  int old = __atomic_load_n(a, __ATOMIC_RELAXED);
  while (old > v && !__atomic_compare_exchange_n(a, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}

// Bit casts.
inline float __int_as_float(int i) {
  float f;
  memcpy(&f, &i, 4);
  return f;
}
inline int __float_as_int(float f) {
  int i;
  memcpy(&i, &f, 4);
  return i;
}

// Math: <math.h> provides expf, exp, logf, log, sqrtf, sqrt, tanhf, fabsf, fabs, fmaxf, fminf.
