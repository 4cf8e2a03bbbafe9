// Device-side helpers shared by the kernels of ops/cuda/: bf16 bits ↔ f32 exactly as
// core/half.h, and the one block reduction every sum uses (a fixed tree, so deterministic).
#pragma once

#include <cstdint>

namespace sft::ops::cuda {

// Threads per block of every reduction kernel (a power of two: the tree below halves it).
inline constexpr int kReduceThreads = 256;

__device__ inline float bf16_to_f32(uint16_t h) {
  return __uint_as_float(static_cast<uint32_t>(h) << 16);
}

// Round to nearest, ties to even; NaN stays NaN (quieted, sign kept): core/half.h bit for bit.
__device__ inline uint16_t f32_to_bf16(float f) {
  const uint32_t bits = __float_as_uint(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  const uint32_t lsb = (bits >> 16) & 1u;
  return static_cast<uint16_t>((bits + 0x7fffu + lsb) >> 16);
}

__device__ inline float widen(float x) {
  return x;
}
__device__ inline float widen(uint16_t bits) {
  return bf16_to_f32(bits);
}

// An f32 result stored as f32, or rounded to bf16 bits (the fused forms of the bf16 outputs).
__device__ inline void store(float* out, int64_t i, float v) {
  out[i] = v;
}
__device__ inline void store(uint16_t* out, int64_t i, float v) {
  out[i] = f32_to_bf16(v);
}

// The sum of every thread's `value` over a block of kReduceThreads threads, returned to all of
// them. A fixed pairwise tree in shared memory: the same bits for the same inputs on every run.
// Every thread of the block must call it (it synchronizes).
template <typename T>
__device__ T block_sum(T value) {
  __shared__ T partial[kReduceThreads];
  const int tid = static_cast<int>(threadIdx.x);
  partial[tid] = value;
  __syncthreads();
  for (int half = kReduceThreads / 2; half > 0; half /= 2) {
    if (tid < half) partial[tid] += partial[tid + half];
    __syncthreads();
  }
  const T total = partial[0];
  __syncthreads();  // the array may be reused by the next call
  return total;
}

}  // namespace sft::ops::cuda
