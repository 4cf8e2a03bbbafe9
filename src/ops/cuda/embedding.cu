// Embedding forward/backward on CUDA (ops.h's contract), fp32; ids are device int64. The
// forward also reads a bf16 table into an fp32 out (each element widened, exactly).
//
// The backward is deterministic without atomics by row ownership: the first token of each id
// owns that vocabulary row and adds, per feature, the gradients of all tokens with the id in
// token order — exactly the CPU kernel's sum order, so the bits are the CPU's. Two kernels:
// (1) link: per token t, whether it is its id's first token and the next token with its id
// (a tiled all-pairs scan of the ids through shared memory: O(T²) integer compares, a few
// microseconds at T = 16k); (2) accumulate: one thread per (owning token, feature) walks the
// chain. Ids outside the table are the caller's error, as on the CPU.
//
// A vocabulary shard (ops.h): the table holds the ids [begin, begin + rows). The forward writes
// this rank's rows and −0 for the other ranks' ids, then the group sums out (host memory: the
// ShardGroup runs over MPI; x + −0 = x, so the sum is the one owner's row exactly, the CPU's
// bits); the backward adds only the tokens of this rank's ids, in the same chains.
#include <cuda_runtime.h>

#include <span>
#include <vector>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device.cuh"
#include "ops/cuda/cuda_memory.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/cuda/cuda_views.h"

namespace sft::ops::cuda {

namespace {

constexpr int kThreads = 256;

// Rows outside [begin, begin + rows) give −0 (only a shard has such ids). Table: float, or
// uint16_t bf16 bits.
template <typename Table>
__global__ void embedding_forward_kernel(float* out, const int64_t* ids, const Table* table,
                                         int64_t n, int64_t C, int64_t begin, int64_t rows) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (e >= n) return;
  const int64_t t = e / C, j = e % C, local = ids[t] - begin;
  out[e] = local >= 0 && local < rows ? widen(table[local * C + j]) : -0.0f;
}

// next[t] = the smallest u > t with ids[u] == ids[t], else -1; first[t] = 1 when no u < t has
// the id. Every thread of a block takes part in loading each tile, so none returns early.
__global__ void embedding_link_kernel(int64_t* next, int* first, const int64_t* ids, int64_t Tn) {
  __shared__ int64_t tile[kThreads];
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const int64_t id = t < Tn ? ids[t] : -1;
  int64_t nxt = -1;
  int is_first = 1;
  for (int64_t base = 0; base < Tn; base += kThreads) {
    const int64_t u = base + threadIdx.x;
    tile[threadIdx.x] = u < Tn ? ids[u] : -1;
    __syncthreads();
    const int64_t count = Tn - base < kThreads ? Tn - base : kThreads;
    for (int64_t k = 0; k < count; ++k) {
      const int64_t other = base + k;
      if (tile[k] != id || other == t) continue;
      if (other < t)
        is_first = 0;
      else if (nxt < 0)
        nxt = other;  // tiles and k ascend: the first later match is the next
    }
    __syncthreads();
  }
  if (t < Tn) {
    next[t] = nxt;
    first[t] = is_first;
  }
}

__global__ void embedding_accumulate_kernel(float* dtable, const float* dout, const int64_t* ids,
                                            const int64_t* next, const int* first, int64_t n,
                                            int64_t C, int64_t begin, int64_t rows) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (e >= n) return;
  const int64_t t = e / C, j = e % C, local = ids[t] - begin;
  if (!first[t] || local < 0 || local >= rows) return;  // another rank's id: its chain is there
  float* row = dtable + local * C;
  float acc = row[j];
  for (int64_t u = t; u >= 0; u = next[u]) acc += dout[u * C + j];
  row[j] = acc;
}

}  // namespace

void embedding_forward(View out, const int64_t* ids, View table, VocabShard shard) {
  require_cuda("embedding", {out, table});
  require(out.cols == table.cols, "embedding",
          [&] { return "out " + shape(out) + ", table " + shape(table); });
  require_dtype("embedding", DType::kF32, {out});
  if (table.dtype != DType::kBF16) require_dtype("embedding", DType::kF32, {table});
  const int64_t n = out.numel();
  if (n == 0) return;
  const int64_t begin = shard.group ? shard.begin : 0;
  if (table.dtype == DType::kBF16)
    embedding_forward_kernel<<<blocks_for(n, kThreads), kThreads>>>(
        out.as<float>(), ids, table.as<uint16_t>(), n, out.cols, begin, table.rows);
  else
    embedding_forward_kernel<<<blocks_for(n, kThreads), kThreads>>>(
        out.as<float>(), ids, table.as<float>(), n, out.cols, begin, table.rows);
  SFT_CUDA_CHECK(cudaGetLastError());
  if (!shard.group) return;
  std::vector<float> sum(static_cast<size_t>(n));  // one collective of (T, C), every rank alike
  copy_to_host(sum.data(), out.data, sum.size() * sizeof(float));
  shard.group->sum(std::span<float>(sum));
  copy_to_device(out.data, sum.data(), sum.size() * sizeof(float));
}

void embedding_backward(View dtable, View dout, const int64_t* ids, VocabShard shard) {
  require_cuda("embedding_backward", {dtable, dout});
  require(dout.cols == dtable.cols, "embedding_backward",
          [&] { return "dout " + shape(dout) + ", dtable " + shape(dtable); });
  require_dtype("embedding_backward", DType::kF32, {dtable, dout});
  const int64_t Tn = dout.rows, C = dout.cols, n = dout.numel();
  if (n == 0) return;
  // next and first side by side in the scratch (next first: int64 alignment).
  auto* next =
      static_cast<int64_t*>(scratch(static_cast<size_t>(Tn) * (sizeof(int64_t) + sizeof(int))));
  auto* first = reinterpret_cast<int*>(next + Tn);
  embedding_link_kernel<<<blocks_for(Tn, kThreads), kThreads>>>(next, first, ids, Tn);
  SFT_CUDA_CHECK(cudaGetLastError());
  embedding_accumulate_kernel<<<blocks_for(n, kThreads), kThreads>>>(
      dtable.as<float>(), dout.as<float>(), ids, next, first, n, C, shard.group ? shard.begin : 0,
      dtable.rows);
  SFT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sft::ops::cuda
