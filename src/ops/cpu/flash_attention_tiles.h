// Shared pieces of the tiled attention kernels (flash_attention_forward/backward.cpp): the
// segment checks, the mask as key/query ranges, the work-item scheduler, the row exponential and
// the two ways of multiplying tiles.
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
#include "ops/cpu/attention_microkernel.h"
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

// ---- Tile products -------------------------------------------------------------------------
// The item bodies are templates over how they multiply tiles, compiled once per way: BlasProducts
// (ops::matmul on the caller's thread: the baseline, double's only way, and float's under
// SFT_CPU_ISA=generic or without AVX-512) and Avx512Products (the register-blocked microkernels
// of attention_microkernel.h, in a body compiled for AVX-512, so the softmax rows around them
// vectorise 16 wide too). Both give each output element one fixed summation order, so either is
// bit-stable per thread count; they differ from each other by rounding only.
//
// Operands are Rows: a matrix by its first element and its row stride. `diagonal` is where the
// causal mask crosses the tile: the number of the tile's keys its first query sees (pos0 + 1 − j0,
// any sign); Avx512Products skips the blocks of terms beyond it (their P and dS are 0),
// BlasProducts multiplies whole tiles.
//   kLanes                       the row loops' for_lanes width (16 where AVX-512 runs them)
//   keys(pack, k, nk, D)         the operand Kᵀ of a score product for a key tile of nk rows of
//                                D: Avx512Products transposes it into pack (D rows of
//                                tile_ld), BlasProducts reads k in place
//   rows(pack, x, n, D)          the operand B of add / add_at for n rows of D (a tile of V, K,
//                                Q or dO): Avx512Products copies them into pack (n rows of
//                                row_ld(D), away from the power-of-two strides of the heads
//                                that map every row to the same L1 sets), BlasProducts reads x
//   scores(s, a, kt, M, N, D, diagonal)   S (M, N) = A (M, D) · Kᵀ; S's columns past the
//                                         diagonal may be left unwritten
//   assign(c, a, b, M, N, K, diagonal)   C (M, N) = A (M, K) · B (K, N); A's rows are queries
//   add(c, a, b, M, N, K, diagonal, c_row_scale)   C (M, N) = diag(c_row_scale) C + A (M, K) ·
//                                  B (K, N) (no scale when null); A's rows are queries
//   product_at(c, a, b, M, N, K, diagonal, accumulate)   C (M, N) = (or += with accumulate)
//                                  Aᵀ · B, A stored as (K, M) with rows of queries (C's rows
//                                  are keys)

template <typename T>
struct Rows {
  T* p;
  int64_t ld;
};

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

// Row stride of a packed row operand: D rounded up to 16.
inline int64_t row_ld(int64_t D) {
  return (D + 15) / 16 * 16;
}

template <typename T>
struct BlasProducts {
  static constexpr int64_t kLanes = 1;
  Rows<const T> keys(T*, Rows<const T> k, int64_t, int64_t) const { return k; }
  Rows<const T> rows(T*, Rows<const T> x, int64_t, int64_t) const { return x; }
  void scores(Rows<T> s, Rows<const T> a, Rows<const T> kt, int64_t M, int64_t N, int64_t D,
              int64_t) const {
    matmul(s.p, a.p, kt.p, M, N, D, false, true, false, a.ld, kt.ld, s.ld, false);
  }
  void assign(Rows<T> c, Rows<const T> a, Rows<const T> b, int64_t M, int64_t N, int64_t K,
              int64_t) const {
    matmul(c.p, a.p, b.p, M, N, K, false, false, false, a.ld, b.ld, c.ld, false);
  }
  void add(Rows<T> c, Rows<const T> a, Rows<const T> b, int64_t M, int64_t N, int64_t K, int64_t,
           const T* c_row_scale) const {
    for (int64_t r = 0; c_row_scale && r < M; ++r)
      if (c_row_scale[r] != T(1))
        for (int64_t x = 0; x < N; ++x) c.p[r * c.ld + x] *= c_row_scale[r];
    matmul(c.p, a.p, b.p, M, N, K, false, false, true, a.ld, b.ld, c.ld, false);
  }
  void product_at(Rows<T> c, Rows<const T> a, Rows<const T> b, int64_t M, int64_t N, int64_t K,
                  int64_t, bool accumulate) const {
    matmul(c.p, a.p, b.p, M, N, K, true, false, accumulate, a.ld, b.ld, c.ld, false);
  }
};

struct Avx512Products {
  using Product = cpu::attention_microkernel::Product;
  using ALayout = cpu::attention_microkernel::ALayout;
  using Skip = cpu::attention_microkernel::Skip;
  static constexpr int64_t kLanes = 16;
  int64_t pack_ld;

  Rows<const float> keys(float* pack, Rows<const float> k, int64_t nk, int64_t D) const {
    cpu::attention_microkernel::transpose(pack, pack_ld, k.p, k.ld, nk, D);
    return {pack, pack_ld};
  }
  Rows<const float> rows(float* pack, Rows<const float> x, int64_t n, int64_t D) const {
    const int64_t ld = row_ld(D);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < D; ++c) pack[r * ld + c] = x.p[r * x.ld + c];
    return {pack, ld};
  }
  void scores(Rows<float> s, Rows<const float> a, Rows<const float> kt, int64_t M, int64_t N,
              int64_t D, int64_t diagonal) const {
    cpu::attention_microkernel::gemm({.c = s.p,
                                      .ldc = s.ld,
                                      .a = a.p,
                                      .lda = a.ld,
                                      .b = kt.p,
                                      .ldb = kt.ld,
                                      .M = M,
                                      .N = N,
                                      .K = D,
                                      .skip = Skip::kColumnsPastDiagonal,
                                      .diagonal = diagonal});
  }
  void assign(Rows<float> c, Rows<const float> a, Rows<const float> b, int64_t M, int64_t N,
              int64_t K, int64_t diagonal) const {
    cpu::attention_microkernel::gemm({.c = c.p,
                                      .ldc = c.ld,
                                      .a = a.p,
                                      .lda = a.ld,
                                      .b = b.p,
                                      .ldb = b.ld,
                                      .M = M,
                                      .N = N,
                                      .K = K,
                                      .skip = Skip::kDepthPastDiagonal,
                                      .diagonal = diagonal});
  }
  void add(Rows<float> c, Rows<const float> a, Rows<const float> b, int64_t M, int64_t N, int64_t K,
           int64_t diagonal, const float* c_row_scale) const {
    cpu::attention_microkernel::gemm({.c = c.p,
                                      .ldc = c.ld,
                                      .a = a.p,
                                      .lda = a.ld,
                                      .b = b.p,
                                      .ldb = b.ld,
                                      .M = M,
                                      .N = N,
                                      .K = K,
                                      .accumulate = true,
                                      .c_row_scale = c_row_scale,
                                      .skip = Skip::kDepthPastDiagonal,
                                      .diagonal = diagonal});
  }
  void product_at(Rows<float> c, Rows<const float> a, Rows<const float> b, int64_t M, int64_t N,
                  int64_t K, int64_t diagonal, bool accumulate) const {
    cpu::attention_microkernel::gemm({.c = c.p,
                                      .ldc = c.ld,
                                      .a = a.p,
                                      .lda = a.ld,
                                      .a_layout = ALayout::kColumns,
                                      .b = b.p,
                                      .ldb = b.ld,
                                      .M = M,
                                      .N = N,
                                      .K = K,
                                      .accumulate = accumulate,
                                      .skip = Skip::kDepthBeforeDiagonal,
                                      .diagonal = diagonal});
  }
};

}  // namespace sft::ops::flash
