// Shared pieces of the tiled attention kernels (flash_attention_forward/backward.cpp): the
// segment checks, the mask as key/query ranges, the work-item scheduler, the row exponential and
// the rows of a score tile (their stride, whole-vector loops over them).
//
// Scheduling: `slots` pool chunks pull work items from one atomic counter. Which thread runs an
// item varies from run to run, but every output element is written by exactly one item, in an
// order fixed inside the item, and a slot's scratch is fully rewritten before each use, so the
// results never depend on the thread count or on the schedule.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <span>

#include "core/error.h"
#include "core/thread_pool.h"
#include "ops/attention.h"
#include "ops/cpu/fast_exp.h"
#include "ops/ops.h"

namespace sft::ops::flash {

using cpu::exp_score;

// Throws unless every segment is in bounds for Tq/Tk rows we can infer, heads group evenly and
// every query sees at least its own key. Returns the number of q rows and k rows spanned.
struct Extent {
  int64_t q_rows = 0, k_rows = 0;
};
Extent check_segments(std::span<const AttentionSegment> segments, const AttentionDims& dims,
                      bool backward);

// Slots (threads) to use for `items` work items.
int64_t slot_count(const AttentionWorkspace& ws, int64_t items);

// What a kernel's workspace layout depends on: exact for a call (plan_of), or the bounds of an
// AttentionShape (attention_workspace_bytes). Every byte count grows with every field.
struct Plan {
  int64_t segments = 0;   // segments of the call
  int64_t slots = 1;      // threads with their own scratch block
  int64_t k_tiles = 0;    // Σ ceil(k_len / k_tile) over segments (the bf16 kernels' packed keys)
  int64_t max_q_len = 0;  // the longest segment's queries
  int64_t q_rows = 0, k_rows = 0;  // rows of q and k spanned
};
Plan plan_of(std::span<const AttentionSegment> segments, const Extent& e,
             const AttentionWorkspace& ws, int64_t items);

// Each kernel's workspace bytes for a plan (T = float or double; the bf16 kernels' Out type
// does not change them).
template <typename T>
size_t forward_bytes(const Plan& p, const AttentionDims& dims, const AttentionWorkspace& ws);
template <typename T>
size_t backward_bytes(const Plan& p, const AttentionDims& dims, const AttentionWorkspace& ws);
size_t forward_bf16_bytes(const Plan& p, const AttentionDims& dims, const AttentionWorkspace& ws);
size_t backward_bf16_bytes(const Plan& p, const AttentionDims& dims, const AttentionWorkspace& ws);

// The start of `bytes` of ws.memory; fails with the workspace error when it holds fewer.
inline std::byte* take_bytes(const AttentionWorkspace& ws, const char* op, size_t bytes) {
  Workspace mem = ws.memory;
  return mem.take<std::byte>(static_cast<int64_t>(bytes), op);
}

// fn(item, slot) for every item in [0, items), on up to `slots` pool threads.
template <typename F>
void run_items(int64_t items, int64_t slots, F&& fn) {
  std::atomic<int64_t> next{0};
  parallel_for_rows(slots, 1, [&](int64_t begin, int64_t end) {
    for (int64_t slot = begin; slot < end; ++slot)
      for (int64_t it = next.fetch_add(1, std::memory_order_relaxed); it < items;
           it = next.fetch_add(1, std::memory_order_relaxed))
        fn(it, slot);
  });
}

// Keys [lo, hi) of a segment visible from the query at absolute position pos.
inline int64_t key_lo(int64_t pos, int64_t window) {
  return window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;
}
inline int64_t key_hi(int64_t pos, int64_t k_len) {
  return std::min(pos + 1, k_len);
}

// The keys [a, b) of a tile's keys [j0, j0 + nk) visible from the query at position pos, as
// offsets into the tile (a ≥ b: none).
struct TileKeys {
  int64_t a, b;
};
inline TileKeys visible_keys(int64_t pos, int64_t j0, int64_t nk, int64_t window, int64_t k_len) {
  return {std::clamp(key_lo(pos, window) - j0, int64_t{0}, nk),
          std::clamp(key_hi(pos, k_len) - j0, int64_t{0}, nk)};
}

// Elements of T rounded up to a whole 64-byte line, so every scratch array starts aligned.
template <typename T>
constexpr int64_t padded(int64_t n) {
  constexpr int64_t line = 64 / static_cast<int64_t>(sizeof(T));
  return (n + line - 1) / line * line;
}

// The score map of ops/attention.h: scale (exactly 1/sqrt(D) in T when dims.scale is 0, as
// before it could be set) and the soft-cap, 0 when off.
template <typename T>
T score_scale(const AttentionDims& d) {
  return d.scale > 0 ? static_cast<T>(d.scale) : T(1) / std::sqrt(static_cast<T>(d.D));
}

// x[0..n) ← cap · tanh(x · scale / cap): the soft-capped scores, in transformers' order of
// operations; the softmax then runs on them with scale 1 (a multiplication by 1 is exact). With
// dcap, also the derivative of the map divided by scale, 1 − tanh², for backward.
template <typename T>
void soft_cap(T* x, int64_t n, T scale, T cap, T* dcap = nullptr) {
  for (int64_t j = 0; j < n; ++j) {
    const T t = std::tanh(x[j] * scale / cap);
    x[j] = t * cap;
    if (dcap) dcap[j] = T(1) - t * t;
  }
}

// max(x[0..n) · scale), Σ x·y and Σ x over 8 interleaved lanes combined in a fixed order, so clang
// vectorises them without -ffast-math (max is exact in any order; the sum order is fixed).
template <typename T>
T scaled_max(const T* x, int64_t n, T scale, T init) {
  T lane[8] = {init, init, init, init, init, init, init, init};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int64_t l = 0; l < 8; ++l) lane[l] = std::max(lane[l], x[j + l] * scale);
  for (; j < n; ++j) lane[0] = std::max(lane[0], x[j] * scale);
  for (int64_t l = 1; l < 8; ++l) lane[0] = std::max(lane[0], lane[l]);
  return lane[0];
}

template <typename T>
T lane_dot(const T* x, const T* y, int64_t n) {
  T lane[8] = {};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int64_t l = 0; l < 8; ++l) lane[l] += x[j + l] * y[j + l];
  for (int64_t l = 0; j < n; ++j, ++l) lane[l] += x[j] * y[j];
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

template <typename T>
T lane_sum(const T* x, int64_t n) {
  T lane[8] = {};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int64_t l = 0; l < 8; ++l) lane[l] += x[j + l];
  for (int64_t l = 0; j < n; ++j, ++l) lane[l] += x[j];
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

// Row stride of the tiles a key tile wide (S, P, dS, the soft-cap's derivative) and of a packed
// Kᵀ: the key tile rounded up to 16, so rows start on 64-byte lines and hold whole AVX-512
// vectors (for_lanes below).
inline int64_t tile_ld(const AttentionWorkspace& ws) {
  return (ws.k_tile + 15) / 16 * 16;
}

// f(j) for j of [a, b) widened to whole groups of Lanes from the row's start (a rounded down, b
// rounded up; within a row of tile_ld), so a body compiled for AVX-512 runs whole vectors and no
// scalar tail. The extra j compute on whatever the row holds there: callers overwrite them.
template <int64_t Lanes, typename F>
[[gnu::always_inline]] inline void for_lanes(TileKeys keys, F&& f) {
  const int64_t hi = (keys.b + Lanes - 1) / Lanes * Lanes;
  for (int64_t j = keys.a / Lanes * Lanes; j < hi; j += Lanes)
    for (int64_t l = 0; l < Lanes; ++l) f(j + l);
}

}  // namespace sft::ops::flash
