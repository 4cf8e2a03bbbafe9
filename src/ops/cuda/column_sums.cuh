// Column sums in a fixed order, the pattern of every "Σ over rows" gradient (dw of rmsnorm, db of
// a bias): dst[j] += Σ_i term(i, j). Two passes with no atomics: (1) thread j of chunk c sums
// rows [c·64, c·64 + 64) in row order into scratch; (2) thread j adds the chunk sums in chunk
// order, then adds the total to dst[j]. The chunk size is fixed, so the order (and the bits)
// never depend on the device or the launch; reads are coalesced along j.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_memory.h"
#include "ops/cuda/cuda_views.h"

namespace sft::ops::cuda {

inline constexpr int64_t kColumnChunkRows = 64;
inline constexpr int kColumnThreads = 256;

// Term: a device functor `float operator()(int64_t i, int64_t j) const`.
template <typename Term>
__global__ void column_chunk_sums(float* partial, Term term, int64_t N, int64_t C) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kColumnThreads + threadIdx.x;
  if (j >= C) return;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * kColumnChunkRows;
  const int64_t end = begin + kColumnChunkRows < N ? begin + kColumnChunkRows : N;
  float acc = 0.0f;
  for (int64_t i = begin; i < end; ++i) acc += term(i, j);
  partial[static_cast<int64_t>(blockIdx.y) * C + j] = acc;
}

// A template only so that every file including this header shares one definition.
template <int Threads = kColumnThreads>
__global__ void add_column_totals(float* dst, const float* partial, int64_t chunks, int64_t C) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * Threads + threadIdx.x;
  if (j >= C) return;
  float acc = 0.0f;
  for (int64_t c = 0; c < chunks; ++c) acc += partial[c * C + j];
  dst[j] += acc;
}

template <typename Term>
void add_column_sums(float* dst, Term term, int64_t N, int64_t C) {
  if (N == 0 || C == 0) return;
  const int64_t chunks = (N + kColumnChunkRows - 1) / kColumnChunkRows;
  if (chunks > 65535)
    fail("ops", "column sums over " + std::to_string(N) + " rows: more than 65535 chunks of " +
                    std::to_string(kColumnChunkRows) + " rows (split the call)");
  float* partial = static_cast<float*>(scratch(static_cast<size_t>(chunks * C) * sizeof(float)));
  const dim3 grid(blocks_for(C, kColumnThreads), static_cast<unsigned>(chunks));
  column_chunk_sums<<<grid, kColumnThreads>>>(partial, term, N, C);
  SFT_CUDA_CHECK(cudaGetLastError());
  add_column_totals<><<<blocks_for(C, kColumnThreads), kColumnThreads>>>(dst, partial, chunks, C);
  SFT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sft::ops::cuda
