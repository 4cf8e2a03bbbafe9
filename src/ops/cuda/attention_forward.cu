// Attention forward on CUDA (ops.h's attention_forward over packed segments; tiles and plan in
// attention.cuh). One block per (query tile, head): the query tile is staged once in shared
// memory (bf16 widened to fp32), then each key tile the mask does not hide entirely (from the
// window's first key of the tile's first query to the last query's own position) is staged,
// K then V in the same buffer, for the online softmax in fp32:
//   S = Q Kᵀ · scale (soft-capped), masked;  m' = max(m, rowmax S);  P = exp(S − m');
//   l = l · e^(m − m') + rowsum P;  acc = acc · e^(m − m') + P V   (P rounded to bf16 for P V
//   with bf16 operands; the row sum takes the fp32 P, as the CPU and PyTorch).
//   out = acc / l (rounded once to bf16 for a bf16 out), lse = m + log l.
// One thread per query row does the row's max and sum in key order; every sum has a fixed order,
// so a rerun gives the same bits. expf / tanhf / logf (not the fast intrinsics).
#include <cuda_runtime.h>

#include "ops/cuda/attention.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_ops.h"

namespace sft::ops::cuda {

namespace {

using attention::Params;
using attention::Tile;
using attention::WorkItem;

template <int kD, typename In, typename Out>
__global__ void attention_forward_kernel(Out* out, float* lse, const In* q, const In* k,
                                         const In* v, const AttentionSegment* segments,
                                         const WorkItem* items, Params p) {
  using T = Tile<kD>;
  __shared__ float qs[T::kRows * T::kStride];
  __shared__ float kv[T::kRows * T::kStride];      // K of the tile, then its V
  __shared__ float sp[T::kRows * (T::kRows + 1)];  // scores, then P
  __shared__ float row_m[T::kRows], row_l[T::kRows], row_alpha[T::kRows];
  constexpr int kSp = T::kRows + 1;

  const int tid = static_cast<int>(threadIdx.x);
  const WorkItem item = items[blockIdx.x];
  const AttentionSegment s = segments[item.seg];
  const int64_t h = blockIdx.y, g = h / p.group, HD = p.H * p.D, KD = p.Hkv * p.D;
  const int64_t i0 = item.start;
  const int nq = static_cast<int>(s.q_len - i0 < T::kRows ? s.q_len - i0 : T::kRows);
  const int64_t pos0 = s.q_offset + i0, pos1 = pos0 + nq - 1;
  const int64_t klo = p.window > 0 && pos0 - p.window + 1 > 0 ? pos0 - p.window + 1 : 0;
  const int64_t khi = pos1 + 1 < s.k_len ? pos1 + 1 : s.k_len;

  attention::load_tile<kD>(qs, q + (s.q_begin + i0) * HD + h * p.D, HD, nq, p.D,
                           attention::Identity{});
  if (tid < T::kRows) {
    row_m[tid] = attention::negative_infinity();
    row_l[tid] = 0.0f;
  }
  const int own = tid / T::kLanes, lane = tid % T::kLanes;  // the accumulator's row, columns
  float acc[T::kCols];
  for (int i = 0; i < T::kCols; ++i) acc[i] = 0.0f;

  for (int64_t j0 = klo / T::kRows * T::kRows; j0 < khi; j0 += T::kRows) {
    const int nk = static_cast<int>(khi - j0 < T::kRows ? khi - j0 : T::kRows);
    __syncthreads();  // the previous tile's P V is done with kv (the first: Q is staged)
    attention::load_tile<kD>(kv, k + (s.k_begin + j0) * KD + g * p.D, KD, nk, p.D,
                             attention::Identity{});
    __syncthreads();
    for (int e = tid; e < T::kRows * T::kRows; e += T::kThreads) {
      const int r = e / T::kRows, c = e % T::kRows;
      float score = attention::negative_infinity();
      if (r < nq && c < nk && attention::visible(pos0 + r, j0 + c, p.window)) {
        float dot = 0.0f;
        for (int x = 0; x < p.D; ++x) dot += qs[r * T::kStride + x] * kv[c * T::kStride + x];
        float dcap;
        score = attention::score_of(dot, p, &dcap);
      }
      sp[r * kSp + c] = score;
    }
    __syncthreads();
    attention::load_tile<kD>(kv, v + (s.k_begin + j0) * KD + g * p.D, KD, nk, p.D,
                             attention::Identity{});
    if (tid < T::kRows) {  // the row's online softmax, keys in order
      float* row = sp + tid * kSp;
      const float m = row_m[tid];
      float mx = m;
      for (int c = 0; c < nk; ++c) mx = fmaxf(mx, row[c]);
      float alpha = 1.0f;
      if (mx == attention::negative_infinity()) {  // no key of this tile for this row
        for (int c = 0; c < nk; ++c) row[c] = 0.0f;
      } else {
        alpha = m == attention::negative_infinity() ? 0.0f : expf(m - mx);
        float sum = 0.0f;
        for (int c = 0; c < nk; ++c) {
          const float pr = row[c] == attention::negative_infinity() ? 0.0f : expf(row[c] - mx);
          sum += pr;
          row[c] = attention::rounded<In>(pr);
        }
        row_l[tid] = row_l[tid] * alpha + sum;
        row_m[tid] = mx;
      }
      row_alpha[tid] = alpha;
    }
    __syncthreads();
    const float alpha = row_alpha[own];
    const float* prow = sp + own * kSp;
    for (int i = 0; i < T::kCols; ++i) {
      const int x = lane + T::kLanes * i;
      float sum = 0.0f;
      for (int c = 0; c < nk; ++c) sum += prow[c] * kv[c * T::kStride + x];
      acc[i] = acc[i] * alpha + sum;
    }
  }
  __syncthreads();
  if (own < nq) {
    const float inv = 1.0f / row_l[own];
    const int64_t row = s.q_begin + i0 + own;
    for (int i = 0; i < T::kCols; ++i) {
      const int x = lane + T::kLanes * i;
      if (x < p.D) store(out, row * HD + h * p.D + x, acc[i] * inv);
    }
    if (lane == 0) lse[row * p.H + h] = row_m[own] + logf(row_l[own]);
  }
}

template <int kD, typename In, typename Out>
void launch_forward(View out, View lse, View q, View k, View v, const attention::Uploaded& plan,
                    int64_t items, const Params& p) {
  using T = Tile<kD>;
  const dim3 grid(static_cast<unsigned>(items), static_cast<unsigned>(p.H));
  attention_forward_kernel<kD, In, Out><<<grid, T::kThreads>>>(out.as<Out>(), lse.as<float>(),
                                                               q.as<In>(), k.as<In>(), v.as<In>(),
                                                               plan.segments, plan.items[0], p);
  SFT_CUDA_CHECK(cudaGetLastError());
}

template <int kD>
void forward_of_kind(attention::Kind kind, View out, View lse, View q, View k, View v,
                     std::span<const AttentionSegment> segments, const Params& p) {
  const std::vector<WorkItem> items = attention::tiles_of(segments, Tile<kD>::kRows, false);
  if (items.empty()) return;
  const attention::Uploaded plan = attention::upload_plan(segments, {&items}, 0);
  const int64_t n = static_cast<int64_t>(items.size());
  if (kind == attention::Kind::kF32)
    launch_forward<kD, float, float>(out, lse, q, k, v, plan, n, p);
  else if (kind == attention::Kind::kBf16OutBf16)
    launch_forward<kD, uint16_t, uint16_t>(out, lse, q, k, v, plan, n, p);
  else
    launch_forward<kD, uint16_t, float>(out, lse, q, k, v, plan, n, p);
}

}  // namespace

void attention_forward(View out, View lse, View q, View k, View v,
                       std::span<const AttentionSegment> segments, const AttentionDims& dims,
                       Workspace /*workspace: the few bytes needed live in scratch()*/) {
  const attention::Kind kind = attention::check_call("attention_forward", out, lse, q, k, v,
                                                     segments, dims, false, {}, {lse});
  const Params p = attention::params_of(dims);
  switch (attention::padded_head_dim(dims.D)) {
    case 32:
      return forward_of_kind<32>(kind, out, lse, q, k, v, segments, p);
    case 64:
      return forward_of_kind<64>(kind, out, lse, q, k, v, segments, p);
    case 128:
      return forward_of_kind<128>(kind, out, lse, q, k, v, segments, p);
    default:
      return forward_of_kind<256>(kind, out, lse, q, k, v, segments, p);
  }
}

}  // namespace sft::ops::cuda
