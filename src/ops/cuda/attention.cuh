// Shared pieces of the CUDA tiled attention (attention_forward.cu, attention_backward.cu): the
// tile shape per head-dim bucket, the mask, the score map, the tile loaders and the host-side
// plan (the call's checks and the work items uploaded to the backend's scratch).
//
// Tiles: a query tile and a key tile both have Tile<kD>::kRows rows; kD is the head dim padded
// to 32, 64, 128 or 256 (zeros past D in shared memory, so an odd D needs no special case). The
// rows shrink as kD grows so that the four (rows × kD) fp32 tiles of backward (Q, dO, K, V) fit
// in the 48 KiB of static shared memory a block may use without opting in. kThreads threads per
// block; in the accumulating phases thread t owns row t / kLanes and the columns
// t % kLanes + kLanes · i of it (kD / kLanes fp32 registers per accumulator).
//
// Simple, obviously correct form (fp32 FMA loops over shared memory, no warp shuffles): the
// reference the tensor-core kernel will be checked against. That one would keep the same work
// split, mask and fixed reduction orders but (1) stage K/V (and Q, dO) as bf16 in shared memory
// with cp.async double buffering, (2) compute S = Q Kᵀ, O += P V, dP = dO Vᵀ, dV += Pᵀ dO,
// dK += dSᵀ Q and dQ += dS K with mma.sync m16n8k16 bf16 (fp32 accumulators in registers,
// one warp per 16 query rows, 64–128-row tiles), (3) do the row max / sum of the online softmax
// with warp shuffles inside the mma fragment layout, and (4) use dynamic shared memory above
// 48 KiB. The bf16 roundings of P and dS stay where they are here (they feed the bf16 mma).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <utility>
#include <vector>

#include "ops/attention.h"
#include "ops/cuda/cuda_device.cuh"
#include "ops/view.h"

namespace sft::ops::cuda::attention {

template <int kD>
struct Tile {
  static_assert(kD == 32 || kD == 64 || kD == 128 || kD == 256);
  static constexpr int kRows = kD <= 64 ? 32 : kD == 128 ? 16 : 8;  // query rows = key rows
  static constexpr int kLanes = kD <= 64 ? 4 : kD == 128 ? 8 : 16;  // threads per owned row
  static constexpr int kThreads = kRows * kLanes;                   // 128
  static constexpr int kStride = kD + 1;     // shared row stride: threads reading one column of
                                             // consecutive rows hit different banks
  static constexpr int kCols = kD / kLanes;  // accumulator columns per thread
};

// The largest head dim the kernels take (Gemma's 256).
inline constexpr int64_t kMaxHeadDim = 256;

// The head dim's bucket: D padded to the next of 32, 64, 128, 256.
inline int padded_head_dim(int64_t D) {
  return D <= 32 ? 32 : D <= 64 ? 64 : D <= 128 ? 128 : 256;
}

// The call's scalars, passed by value to every kernel.
struct Params {
  int64_t H = 0, Hkv = 0, D = 0, window = 0, group = 1;
  float scale = 0, cap = 0;  // the score map (cap 0: no soft-cap)
};

// One block's work: segment `seg`, tile rows [start, start + kRows) of its queries (forward,
// dQ) or keys (dK, dV), segment-relative.
struct WorkItem {
  int64_t seg = 0, start = 0;
};

__device__ inline float negative_infinity() {
  return __uint_as_float(0xff800000u);
}

// Whether the query at absolute position pos sees key j (segment-relative; j < k_len is the
// caller's bound): causal, and inside the window when there is one.
__device__ inline bool visible(int64_t pos, int64_t j, int64_t window) {
  return j <= pos && (window <= 0 || pos - j < window);
}

// The score of q·k (ops/attention.h): · scale, then cap · tanh(· / cap) with a soft-cap; dcap
// gets the map's derivative divided by scale (1 − tanh², or 1).
__device__ inline float score_of(float dot, const Params& p, float* dcap) {
  const float z = dot * p.scale;
  if (p.cap > 0.0f) {
    const float t = tanhf(z / p.cap);
    *dcap = 1.0f - t * t;
    return t * p.cap;
  }
  *dcap = 1.0f;
  return z;
}

// With bf16 operands (In = uint16_t) x rounded to bf16, else x: P and dS before their products,
// and dout as the kernels read it (autocast's bf16 gradient), as ops/attention.h says.
template <typename In>
__device__ inline float rounded(float x) {
  if constexpr (sizeof(In) == 2)
    return bf16_to_f32(f32_to_bf16(x));
  else
    return x;
}

// tile[r][x] (row stride kStride) = src row r's elements [0, D) widened to fp32 for r < n rows,
// src rows `ld` elements apart; zeros elsewhere (r < kRows, x < kD). All threads of the block
// call it; the caller synchronizes before reading.
template <int kD, typename S, typename Map>
__device__ void load_tile(float* tile, const S* src, int64_t ld, int n, int64_t D, Map map) {
  using T = Tile<kD>;
  for (int e = static_cast<int>(threadIdx.x); e < T::kRows * kD; e += T::kThreads) {
    const int r = e / kD, x = e % kD;
    tile[r * T::kStride + x] = r < n && x < D ? map(widen(src[r * ld + x])) : 0.0f;
  }
}

struct Identity {
  __device__ float operator()(float x) const { return x; }
};
template <typename In>
struct GradientRounding {
  __device__ float operator()(float x) const { return rounded<In>(x); }
};

// ---- host side (attention_plan.cu) ----

// The dtypes of a call: "f32" (every view f32) or bf16 q/k/v with out bf16 or f32.
enum class Kind { kF32, kBf16OutBf16, kBf16OutF32 };

// Checks the views (device, dtypes, shapes: the CPU dispatcher's rules and messages), the dims
// (H a multiple of Hkv, D ≤ kMaxHeadDim) and the segments (ops/cpu's check_segments: bounds,
// overlaps, every query sees its own position); returns the call's dtypes.
Kind check_call(const char* op, const View& out, const View& lse, const View& q, const View& k,
                const View& v, std::span<const AttentionSegment> segments, const AttentionDims& d,
                bool backward, std::initializer_list<std::pair<const View*, const View*>> same,
                std::initializer_list<View> f32_views);

Params params_of(const AttentionDims& d);

// Tiles of `rows` rows over each segment's queries (by_keys false) or keys (true), in segment
// order; empty segments give none.
std::vector<WorkItem> tiles_of(std::span<const AttentionSegment> segments, int rows, bool by_keys);

// The segments, then each item list, copied into the backend's scratch (one copy); `floats`
// more fp32 after them (Δ). Returns the device pointers in the same order.
struct Uploaded {
  const AttentionSegment* segments = nullptr;
  const WorkItem* items[2] = {nullptr, nullptr};
  float* floats = nullptr;
};
Uploaded upload_plan(std::span<const AttentionSegment> segments,
                     std::initializer_list<const std::vector<WorkItem>*> items, int64_t floats);

}  // namespace sft::ops::cuda::attention
