// Attention backward on CUDA (ops.h's attention_backward over packed segments; tiles and plan in
// attention.cuh). Deterministic without floating-point atomics: every gradient element has one
// owner that sums its terms in a fixed order, so a rerun gives the same bits.
//   1. Δ (Tq, H) = rowsum(dO ⊙ O), one thread per (row, head), in column order (into scratch).
//   2. dK, dV: one block per (key tile, kv head). K and V of the tile are staged once; then for
//      each query head of the group in head order and each query tile that sees the tile
//      (ascending), Q, dO, lse and Δ are staged and
//        P = exp(S − lse), dP = dO Vᵀ, dS = P ⊙ (dP − Δ) (· (1 − tanh²) with a soft-cap),
//        dV += Pᵀ dO, dK += dSᵀ Q;   dK · scale on write. Keys no query sees get zeros.
//   3. dQ: one block per (query tile, head), key tiles ascending as forward: dQ += dS K, · scale.
// With bf16 operands dO is rounded to bf16 once as it is read (autocast's gradient), and P and
// dS are rounded to bf16 before their products, as the CPU kernel; all sums are fp32.
#include <cuda_runtime.h>

#include "ops/cuda/attention.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/cuda/cuda_views.h"

namespace sft::ops::cuda {

namespace {

using attention::Params;
using attention::Tile;
using attention::WorkItem;

constexpr int kDeltaThreads = 256;

template <typename In, typename Out>
__global__ void attention_delta_kernel(float* delta, const float* dout, const Out* out, int64_t n,
                                       int64_t D) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kDeltaThreads + threadIdx.x;
  if (i >= n) return;
  float sum = 0.0f;
  for (int64_t x = 0; x < D; ++x)
    sum += attention::rounded<In>(dout[i * D + x]) * widen(out[i * D + x]);
  delta[i] = sum;
}

// dS of query row r against key c of a staged tile pair (q/dO rows, k/v rows), 0 where masked;
// P into *prob. Both backward kernels compute it the same way.
template <int kD>
__device__ float score_gradient(const float* qs, const float* dos, const float* ks, const float* vs,
                                int r, int c, float lse, float delta, const Params& p,
                                float* prob) {
  using T = Tile<kD>;
  float dot = 0.0f, dp = 0.0f;
  for (int x = 0; x < p.D; ++x) dot += qs[r * T::kStride + x] * ks[c * T::kStride + x];
  for (int x = 0; x < p.D; ++x) dp += dos[r * T::kStride + x] * vs[c * T::kStride + x];
  float dcap;
  const float pr = expf(attention::score_of(dot, p, &dcap) - lse);
  *prob = pr;
  return pr * (dp - delta) * dcap;
}

template <int kD, typename In>
__global__ void attention_dkdv_kernel(float* dk, float* dv, const float* dout, const float* lse,
                                      const float* delta, const In* q, const In* k, const In* v,
                                      const AttentionSegment* segments, const WorkItem* items,
                                      Params p) {
  using T = Tile<kD>;
  __shared__ float ks[T::kRows * T::kStride], vs[T::kRows * T::kStride];
  __shared__ float qs[T::kRows * T::kStride], dos[T::kRows * T::kStride];
  __shared__ float ps[T::kRows * (T::kRows + 1)], dss[T::kRows * (T::kRows + 1)];
  __shared__ float lse_s[T::kRows], delta_s[T::kRows];
  constexpr int kSp = T::kRows + 1;

  const int tid = static_cast<int>(threadIdx.x);
  const WorkItem item = items[blockIdx.x];
  const AttentionSegment s = segments[item.seg];
  const int64_t g = blockIdx.y, HD = p.H * p.D, KD = p.Hkv * p.D;
  const int64_t j0 = item.start;
  const int nk = static_cast<int>(s.k_len - j0 < T::kRows ? s.k_len - j0 : T::kRows);
  // The queries that see a key of [j0, j0 + nk): from the first key's position on, and before
  // the last key's window ends.
  const int64_t ilo = j0 - s.q_offset > 0 ? j0 - s.q_offset : 0;
  int64_t ihi = s.q_len;
  if (p.window > 0 && j0 + nk - 1 + p.window - s.q_offset < ihi)
    ihi = j0 + nk - 1 + p.window - s.q_offset;

  attention::load_tile<kD>(ks, k + (s.k_begin + j0) * KD + g * p.D, KD, nk, p.D,
                           attention::Identity{});
  attention::load_tile<kD>(vs, v + (s.k_begin + j0) * KD + g * p.D, KD, nk, p.D,
                           attention::Identity{});
  const int own = tid / T::kLanes, lane = tid % T::kLanes;  // the accumulators' key, columns
  float dk_acc[T::kCols], dv_acc[T::kCols];
  for (int i = 0; i < T::kCols; ++i) dk_acc[i] = dv_acc[i] = 0.0f;

  for (int64_t h = g * p.group; h < (g + 1) * p.group; ++h)
    for (int64_t i0 = ilo; i0 < ihi; i0 += T::kRows) {
      const int nq = static_cast<int>(ihi - i0 < T::kRows ? ihi - i0 : T::kRows);
      const int64_t row0 = s.q_begin + i0;
      __syncthreads();  // the previous accumulation is done with qs, dos, ps, dss
      attention::load_tile<kD>(qs, q + row0 * HD + h * p.D, HD, nq, p.D, attention::Identity{});
      attention::load_tile<kD>(dos, dout + row0 * HD + h * p.D, HD, nq, p.D,
                               attention::GradientRounding<In>{});
      if (tid < nq) {
        lse_s[tid] = lse[(row0 + tid) * p.H + h];
        delta_s[tid] = delta[(row0 + tid) * p.H + h];
      }
      __syncthreads();
      for (int e = tid; e < T::kRows * T::kRows; e += T::kThreads) {
        const int r = e / T::kRows, c = e % T::kRows;
        float pr = 0.0f, ds = 0.0f;
        if (r < nq && c < nk && attention::visible(s.q_offset + i0 + r, j0 + c, p.window))
          ds = score_gradient<kD>(qs, dos, ks, vs, r, c, lse_s[r], delta_s[r], p, &pr);
        ps[r * kSp + c] = attention::rounded<In>(pr);
        dss[r * kSp + c] = attention::rounded<In>(ds);
      }
      __syncthreads();
      for (int i = 0; i < T::kCols; ++i) {
        const int x = lane + T::kLanes * i;
        float sv = 0.0f, sk = 0.0f;
        for (int r = 0; r < nq; ++r) {
          sv += ps[r * kSp + own] * dos[r * T::kStride + x];
          sk += dss[r * kSp + own] * qs[r * T::kStride + x];
        }
        dv_acc[i] += sv;
        dk_acc[i] += sk;
      }
    }
  if (own < nk) {
    const int64_t row = s.k_begin + j0 + own;
    for (int i = 0; i < T::kCols; ++i) {
      const int x = lane + T::kLanes * i;
      if (x >= p.D) continue;
      dk[row * KD + g * p.D + x] = dk_acc[i] * p.scale;
      dv[row * KD + g * p.D + x] = dv_acc[i];
    }
  }
}

template <int kD, typename In>
__global__ void attention_dq_kernel(float* dq, const float* dout, const float* lse,
                                    const float* delta, const In* q, const In* k, const In* v,
                                    const AttentionSegment* segments, const WorkItem* items,
                                    Params p) {
  using T = Tile<kD>;
  __shared__ float ks[T::kRows * T::kStride], vs[T::kRows * T::kStride];
  __shared__ float qs[T::kRows * T::kStride], dos[T::kRows * T::kStride];
  __shared__ float dss[T::kRows * (T::kRows + 1)];
  __shared__ float lse_s[T::kRows], delta_s[T::kRows];
  constexpr int kSp = T::kRows + 1;

  const int tid = static_cast<int>(threadIdx.x);
  const WorkItem item = items[blockIdx.x];
  const AttentionSegment s = segments[item.seg];
  const int64_t h = blockIdx.y, g = h / p.group, HD = p.H * p.D, KD = p.Hkv * p.D;
  const int64_t i0 = item.start, row0 = s.q_begin + i0;
  const int nq = static_cast<int>(s.q_len - i0 < T::kRows ? s.q_len - i0 : T::kRows);
  const int64_t pos0 = s.q_offset + i0, pos1 = pos0 + nq - 1;
  const int64_t klo = p.window > 0 && pos0 - p.window + 1 > 0 ? pos0 - p.window + 1 : 0;
  const int64_t khi = pos1 + 1 < s.k_len ? pos1 + 1 : s.k_len;

  attention::load_tile<kD>(qs, q + row0 * HD + h * p.D, HD, nq, p.D, attention::Identity{});
  attention::load_tile<kD>(dos, dout + row0 * HD + h * p.D, HD, nq, p.D,
                           attention::GradientRounding<In>{});
  if (tid < nq) {
    lse_s[tid] = lse[(row0 + tid) * p.H + h];
    delta_s[tid] = delta[(row0 + tid) * p.H + h];
  }
  const int own = tid / T::kLanes, lane = tid % T::kLanes;  // the accumulator's row, columns
  float acc[T::kCols];
  for (int i = 0; i < T::kCols; ++i) acc[i] = 0.0f;

  for (int64_t j0 = klo / T::kRows * T::kRows; j0 < khi; j0 += T::kRows) {
    const int nk = static_cast<int>(khi - j0 < T::kRows ? khi - j0 : T::kRows);
    __syncthreads();  // the previous tile's dS K is done with ks (the first: Q, dO are staged)
    attention::load_tile<kD>(ks, k + (s.k_begin + j0) * KD + g * p.D, KD, nk, p.D,
                             attention::Identity{});
    attention::load_tile<kD>(vs, v + (s.k_begin + j0) * KD + g * p.D, KD, nk, p.D,
                             attention::Identity{});
    __syncthreads();
    for (int e = tid; e < T::kRows * T::kRows; e += T::kThreads) {
      const int r = e / T::kRows, c = e % T::kRows;
      float pr = 0.0f, ds = 0.0f;
      if (r < nq && c < nk && attention::visible(pos0 + r, j0 + c, p.window))
        ds = score_gradient<kD>(qs, dos, ks, vs, r, c, lse_s[r], delta_s[r], p, &pr);
      dss[r * kSp + c] = attention::rounded<In>(ds);
    }
    __syncthreads();
    for (int i = 0; i < T::kCols; ++i) {
      const int x = lane + T::kLanes * i;
      float sum = 0.0f;
      for (int c = 0; c < nk; ++c) sum += dss[own * kSp + c] * ks[c * T::kStride + x];
      acc[i] += sum;
    }
  }
  if (own < nq) {
    const int64_t row = row0 + own;
    for (int i = 0; i < T::kCols; ++i) {
      const int x = lane + T::kLanes * i;
      if (x < p.D) dq[row * HD + h * p.D + x] = acc[i] * p.scale;
    }
  }
}

template <int kD, typename In>
void backward_of(View dq, View dk, View dv, View dout, View lse, View q, View k, View v,
                 const float* delta, const attention::Uploaded& plan, int64_t key_items,
                 int64_t query_items, const Params& p) {
  using T = Tile<kD>;
  if (key_items > 0) {
    const dim3 grid(static_cast<unsigned>(key_items), static_cast<unsigned>(p.Hkv));
    attention_dkdv_kernel<kD, In><<<grid, T::kThreads>>>(
        dk.as<float>(), dv.as<float>(), dout.as<float>(), lse.as<float>(), delta, q.as<In>(),
        k.as<In>(), v.as<In>(), plan.segments, plan.items[0], p);
    SFT_CUDA_CHECK(cudaGetLastError());
  }
  if (query_items > 0) {
    const dim3 grid(static_cast<unsigned>(query_items), static_cast<unsigned>(p.H));
    attention_dq_kernel<kD, In><<<grid, T::kThreads>>>(
        dq.as<float>(), dout.as<float>(), lse.as<float>(), delta, q.as<In>(), k.as<In>(),
        v.as<In>(), plan.segments, plan.items[1], p);
    SFT_CUDA_CHECK(cudaGetLastError());
  }
}

template <typename In, typename Out>
void launch_delta(float* delta, View dout, const Out* out, int64_t n, int64_t D) {
  const unsigned blocks = blocks_for(n, kDeltaThreads);
  attention_delta_kernel<In, Out><<<blocks, kDeltaThreads>>>(delta, dout.as<float>(), out, n, D);
  SFT_CUDA_CHECK(cudaGetLastError());
}

template <int kD>
void backward_of_kind(attention::Kind kind, View dq, View dk, View dv, View dout, View out,
                      View lse, View q, View k, View v, std::span<const AttentionSegment> segments,
                      const Params& p) {
  const int rows = Tile<kD>::kRows;
  const std::vector<WorkItem> key_items = attention::tiles_of(segments, rows, true);
  const std::vector<WorkItem> query_items = attention::tiles_of(segments, rows, false);
  if (key_items.empty() && query_items.empty()) return;
  const int64_t n = q.rows * p.H;  // Δ for every row of q (rows outside segments unused)
  const attention::Uploaded plan = attention::upload_plan(segments, {&key_items, &query_items}, n);
  if (n > 0) {
    if (kind == attention::Kind::kF32)
      launch_delta<float>(plan.floats, dout, out.as<float>(), n, p.D);
    else if (kind == attention::Kind::kBf16OutBf16)
      launch_delta<uint16_t>(plan.floats, dout, out.as<uint16_t>(), n, p.D);
    else
      launch_delta<uint16_t>(plan.floats, dout, out.as<float>(), n, p.D);
  }
  const int64_t nk = static_cast<int64_t>(key_items.size());
  const int64_t nq = static_cast<int64_t>(query_items.size());
  if (kind == attention::Kind::kF32)
    backward_of<kD, float>(dq, dk, dv, dout, lse, q, k, v, plan.floats, plan, nk, nq, p);
  else
    backward_of<kD, uint16_t>(dq, dk, dv, dout, lse, q, k, v, plan.floats, plan, nk, nq, p);
}

}  // namespace

void attention_backward(View dq, View dk, View dv, View dout, View out, View lse, View q, View k,
                        View v, std::span<const AttentionSegment> segments,
                        const AttentionDims& dims,
                        Workspace /*workspace: the few bytes needed live in scratch()*/) {
  const attention::Kind kind = attention::check_call(
      "attention_backward", out, lse, q, k, v, segments, dims, true,
      {{&dq, &q}, {&dout, &q}, {&dk, &k}, {&dv, &v}}, {lse, dout, dq, dk, dv});
  const Params p = attention::params_of(dims);
  switch (attention::padded_head_dim(dims.D)) {
    case 32:
      return backward_of_kind<32>(kind, dq, dk, dv, dout, out, lse, q, k, v, segments, p);
    case 64:
      return backward_of_kind<64>(kind, dq, dk, dv, dout, out, lse, q, k, v, segments, p);
    case 128:
      return backward_of_kind<128>(kind, dq, dk, dv, dout, out, lse, q, k, v, segments, p);
    default:
      return backward_of_kind<256>(kind, dq, dk, dv, dout, out, lse, q, k, v, segments, p);
  }
}

}  // namespace sft::ops::cuda
