// Tiled attention backward (contract in ops/attention.h). With P = exp(S − lse) recomputed from
// the saved log-sum-exp and Δ = rowsum(dO ⊙ O) (equal to rowsum(P ⊙ dP)):
//   dV = Pᵀ dO,  dP = dO Vᵀ,  dS = P ⊙ (dP − Δ) · scale,  dK = dSᵀ Q,  dQ = dS K
// (with a soft-cap, dS also ⊙ (1 − tanh²) of the capped scores, kept beside P).
//
// Work item = (segment, kv head): the query heads of its group and the key rows of its kv head
// are this item's alone. It walks key tiles in ascending order (outer) and, for each, the
// group's heads in order and the query tiles that see the tile (inner), so dK and dV of the key
// tile accumulate in place over the whole group (no per-head partials, no second pass), while
// dQ rows accumulate in place across key tiles in ascending order: five tile products per
// (query, key) tile pair and no races. Splitting by key tile instead would need a second pass
// recomputing S and dP for dQ (seven products). Parallelism is segments × Hkv items (8 per
// document for Qwen3-0.6B): enough for a few cores; wider machines want items split by key tile
// too. The item body is compiled twice for float: with library GEMMs per tile (the baseline)
// and, on AVX-512, with the register-blocked microkernels, Kᵀ and Vᵀ of each key tile packed once
// for every head and query tile that sees it (flash_attention_products.h).
#include <type_traits>
#include <utility>

#include "ops/cpu/cpu_features.h"
#include "ops/cpu/flash_attention_products.h"
#include "ops/cpu/flash_attention_tiles.h"

namespace sft::ops {

namespace {

using flash::padded;

template <typename T>
struct BackwardScratch {  // one per slot
  T* p;                   // (q_tile, tile_ld) scores, then probabilities
  T* ds;                  // (q_tile, tile_ld) dP, then dS
  T* dcap;                // (q_tile, tile_ld) the soft-cap's 1 − tanh² (only with one)
  T* kt;                  // (D, tile_ld) the key tile transposed (Avx512Products)
  T* vt;                  // (D, tile_ld) the value tile transposed (Avx512Products)
  T* kp;                  // (k_tile, row_ld) the key tile packed (Avx512Products)
  T* qp;                  // (q_tile, row_ld) the query tile packed (Avx512Products)
  T* dop;                 // (q_tile, row_ld) the output gradient's tile packed (Avx512Products)
};

// The five products of query tile [i0, i0 + nq) of head h against key tile [j0, j0 + nk):
// dV, dK (rows of the key tile; = for the key tile's first pair, else +=) and dQ += in place.
template <typename T, typename Products>
[[gnu::always_inline]] inline void backward_tile_pair(
    bool accumulate_dkv, T* dq, flash::Rows<T> dk, flash::Rows<T> dv, const T* delta, const T* dout,
    const T* lse, const T* q, flash::Rows<const T> k_rows, flash::Rows<const T> k_op,
    flash::Rows<const T> v_op, const AttentionSegment& s, const AttentionDims& d, int64_t h,
    int64_t i0, int64_t nq, int64_t j0, int64_t nk, const AttentionWorkspace& ws,
    const BackwardScratch<T>& sc, const Products& mm) {
  constexpr int64_t Lanes = Products::kLanes;
  const int64_t HD = d.H * d.D, Ls = flash::tile_ld(ws);
  const T scale = flash::score_scale<T>(d), cap = static_cast<T>(d.softcap);
  const int64_t qrow = (s.q_begin + i0) * HD + h * d.D;
  const flash::Rows<const T> qi{q + qrow, HD}, dout_i{dout + qrow, HD};
  const flash::Rows<const T> q_op = mm.rows(sc.qp, qi, nq, d.D);
  const flash::Rows<const T> dout_op = mm.rows(sc.dop, dout_i, nq, d.D);
  const int64_t diagonal = s.q_offset + i0 + 1 - j0;
  mm.scores({sc.p, Ls}, qi, k_op, nq, nk, d.D, diagonal);
  for (int64_t r = 0; r < nq; ++r) {
    const flash::TileKeys keys =
        flash::visible_keys(s.q_offset + i0 + r, j0, nk, d.window, s.k_len);
    const auto [a, b] = keys;
    const T m = lse[(s.q_begin + i0 + r) * d.H + h];
    T* row = sc.p + r * Ls;
    if (cap > T(0) && a < b) {
      flash::soft_cap(row + a, b - a, scale, cap, sc.dcap + r * Ls + a);
      flash::for_lanes<Lanes>(keys, [&](int64_t j) { row[j] = flash::exp_score(row[j] - m); });
    } else if (a < b) {
      flash::for_lanes<Lanes>(keys,
                              [&](int64_t j) { row[j] = flash::exp_score(row[j] * scale - m); });
    }
    for (int64_t j = 0; j < a; ++j) row[j] = T(0);
    for (int64_t j = std::max(a, b); j < nk; ++j) row[j] = T(0);
  }
  mm.product_at(dv, {sc.p, Ls}, dout_op, nk, d.D, nq, diagonal, accumulate_dkv);
  mm.scores({sc.ds, Ls}, dout_i, v_op, nq, nk, d.D, diagonal);
  // dS is 0 where P is: outside the visible keys, where dP may be unwritten (past the diagonal)
  // and dcap is.
  for (int64_t r = 0; r < nq; ++r) {
    const flash::TileKeys keys =
        flash::visible_keys(s.q_offset + i0 + r, j0, nk, d.window, s.k_len);
    const auto [a, b] = keys;
    const T dl = delta[(s.q_begin + i0 + r) * d.H + h];
    const T* p = sc.p + r * Ls;
    T* ds = sc.ds + r * Ls;
    if (cap > T(0) && a < b) {
      const T* dc = sc.dcap + r * Ls;
      flash::for_lanes<Lanes>(keys,
                              [&](int64_t j) { ds[j] = p[j] * (ds[j] - dl) * dc[j] * scale; });
    } else if (a < b) {
      flash::for_lanes<Lanes>(keys, [&](int64_t j) { ds[j] = p[j] * (ds[j] - dl) * scale; });
    }
    for (int64_t j = 0; j < a; ++j) ds[j] = T(0);
    for (int64_t j = std::max(a, b); j < nk; ++j) ds[j] = T(0);
  }
  mm.product_at(dk, {sc.ds, Ls}, q_op, nk, d.D, nq, diagonal, accumulate_dkv);
  mm.add({dq + qrow, HD}, {sc.ds, Ls}, k_rows, nq, d.D, nk, diagonal, nullptr);
}

// One work item: segment s, kv head g and its group's query heads.
template <typename T, typename Products>
[[gnu::always_inline]] inline void backward_group(
    T* dq, T* dk, T* dv, T* delta, const T* dout, const T* out, const T* lse, const T* q,
    const T* k, const T* v, const AttentionSegment& s, const AttentionDims& d, int64_t g,
    const AttentionWorkspace& ws, const BackwardScratch<T>& sc, const Products& mm) {
  const int64_t HD = d.H * d.D, KD = d.Hkv * d.D, group = d.H / d.Hkv, h0 = g * group;
  const int64_t Bq = ws.q_tile, Bk = ws.k_tile;

  for (int64_t i = 0; i < s.q_len; ++i)
    for (int64_t h = h0; h < h0 + group; ++h) {
      const int64_t row = (s.q_begin + i) * HD + h * d.D;
      delta[(s.q_begin + i) * d.H + h] = flash::lane_dot(dout + row, out + row, d.D);
      for (int64_t x = 0; x < d.D; ++x) dq[row + x] = T(0);
    }

  for (int64_t j0 = 0; j0 < s.k_len; j0 += Bk) {
    const int64_t nk = std::min(Bk, s.k_len - j0);
    const int64_t krow = (s.k_begin + j0) * KD + g * d.D;
    const flash::Rows<T> dk_rows{dk + krow, KD}, dv_rows{dv + krow, KD};
    const flash::Rows<const T> k_rows{k + krow, KD}, v_rows{v + krow, KD};
    const flash::Rows<const T> k_op = mm.keys(sc.kt, k_rows, nk, d.D);
    const flash::Rows<const T> v_op = mm.keys(sc.vt, v_rows, nk, d.D);
    const flash::Rows<const T> k_packed = mm.rows(sc.kp, k_rows, nk, d.D);
    // Queries that see a key of [j0, j0 + nk): position ≥ j0 and, with a window,
    // position − (j0 + nk − 1) < window.
    const int64_t ilo = std::max<int64_t>(0, j0 - s.q_offset);
    const int64_t ihi =
        d.window > 0 ? std::min(s.q_len, j0 + nk - 1 + d.window - s.q_offset) : s.q_len;
    if (ilo >= ihi) {  // keys no query sees (left of every window)
      for (int64_t j = 0; j < nk; ++j)
        for (int64_t x = 0; x < d.D; ++x) dk_rows.p[j * KD + x] = dv_rows.p[j * KD + x] = T(0);
      continue;
    }
    for (int64_t h = h0; h < h0 + group; ++h)
      for (int64_t i0 = ilo; i0 < ihi; i0 += Bq)
        backward_tile_pair(h > h0 || i0 > ilo, dq, dk_rows, dv_rows, delta, dout, lse, q, k_packed,
                           k_op, v_op, s, d, h, i0, std::min(Bq, ihi - i0), j0, nk, ws, sc, mm);
  }
}

template <typename T>
void backward_group_blas(T* dq, T* dk, T* dv, T* delta, const T* dout, const T* out, const T* lse,
                         const T* q, const T* k, const T* v, const AttentionSegment& s,
                         const AttentionDims& d, int64_t g, const AttentionWorkspace& ws,
                         const BackwardScratch<T>& sc) {
  backward_group(dq, dk, dv, delta, dout, out, lse, q, k, v, s, d, g, ws, sc,
                 flash::BlasProducts<T>{});
}

[[gnu::target("avx512f,avx512dq,avx512bw,avx512vl")]] void backward_group_avx512(
    float* dq, float* dk, float* dv, float* delta, const float* dout, const float* out,
    const float* lse, const float* q, const float* k, const float* v, const AttentionSegment& s,
    const AttentionDims& d, int64_t g, const AttentionWorkspace& ws,
    const BackwardScratch<float>& sc) {
  backward_group(dq, dk, dv, delta, dout, out, lse, q, k, v, s, d, g, ws, sc,
                 flash::Avx512Products{flash::tile_ld(ws)});
}

// Workspace: Δ (q_rows, H), then one scratch block per slot (sizes in elements of T).
template <typename T>
int64_t delta_elems(const flash::Plan& p, const AttentionDims& d) {
  return padded<T>(p.q_rows * d.H);
}

// One slot's scratch as element offsets; the packs exist for float only (Avx512Products).
struct SlotLayout {
  int64_t p, ds, dcap = -1, kt = -1, vt = -1, kp = -1, qp = -1, dop = -1, elems = 0;
};
template <typename T>
SlotLayout slot_layout(const AttentionWorkspace& ws, const AttentionDims& d) {
  SlotLayout o;
  auto take = [&](int64_t n) { return std::exchange(o.elems, o.elems + padded<T>(n)); };
  const int64_t tile = ws.q_tile * flash::tile_ld(ws);
  o.p = take(tile);
  o.ds = take(tile);
  if (d.softcap > 0) o.dcap = take(tile);
  if constexpr (std::is_same_v<T, float>) {
    o.kt = take(d.D * flash::tile_ld(ws));
    o.vt = take(d.D * flash::tile_ld(ws));
    o.kp = take(ws.k_tile * flash::row_ld(d.D));
    o.qp = take(ws.q_tile * flash::row_ld(d.D));
    o.dop = take(ws.q_tile * flash::row_ld(d.D));
  }
  return o;
}
template <typename T>
BackwardScratch<T> carve(T* p, const SlotLayout& o) {
  auto at = [&](int64_t offset) { return offset >= 0 ? p + offset : nullptr; };
  return {at(o.p), at(o.ds), at(o.dcap), at(o.kt), at(o.vt), at(o.kp), at(o.qp), at(o.dop)};
}

}  // namespace

namespace flash {
template <typename T>
size_t backward_bytes(const Plan& p, const AttentionDims& dims, const AttentionWorkspace& ws) {
  const int64_t elems = delta_elems<T>(p, dims) + p.slots * slot_layout<T>(ws, dims).elems;
  return static_cast<size_t>(elems * static_cast<int64_t>(sizeof(T)));
}
template size_t backward_bytes<float>(const Plan&, const AttentionDims&, const AttentionWorkspace&);
template size_t backward_bytes<double>(const Plan&, const AttentionDims&,
                                       const AttentionWorkspace&);
}  // namespace flash

template <typename T>
void attention_backward(T* dq, T* dk, T* dv, const T* dout, const T* out, const T* lse, const T* q,
                        const T* k, const T* v, std::span<const AttentionSegment> segments,
                        const AttentionDims& dims, AttentionWorkspace& ws) {
  const flash::Extent e = flash::check_segments(segments, dims, true);
  if (ws.q_tile <= 0 || ws.k_tile <= 0) fail("attention", "tile sizes must be positive");
  const int64_t items = static_cast<int64_t>(segments.size()) * dims.Hkv;
  if (items == 0) return;
  const flash::Plan plan = flash::plan_of(segments, e, ws, items);
  const SlotLayout layout = slot_layout<T>(ws, dims);
  T* delta = reinterpret_cast<T*>(
      flash::take_bytes(ws, "attention_backward", flash::backward_bytes<T>(plan, dims, ws)));
  T* scratch = delta + delta_elems<T>(plan, dims);
  const bool avx512 = cpu::use_avx512();
  flash::run_items(items, plan.slots, [&](int64_t item, int64_t slot) {
    const AttentionSegment& s = segments[static_cast<size_t>(item / dims.Hkv)];
    const int64_t g = item % dims.Hkv;
    const BackwardScratch<T> sc = carve(scratch + slot * layout.elems, layout);
    if constexpr (std::is_same_v<T, float>)
      if (avx512)
        return backward_group_avx512(dq, dk, dv, delta, dout, out, lse, q, k, v, s, dims, g, ws,
                                     sc);
    backward_group_blas(dq, dk, dv, delta, dout, out, lse, q, k, v, s, dims, g, ws, sc);
  });
}

template void attention_backward<float>(float*, float*, float*, const float*, const float*,
                                        const float*, const float*, const float*, const float*,
                                        std::span<const AttentionSegment>, const AttentionDims&,
                                        AttentionWorkspace&);
template void attention_backward<double>(double*, double*, double*, const double*, const double*,
                                         const double*, const double*, const double*, const double*,
                                         std::span<const AttentionSegment>, const AttentionDims&,
                                         AttentionWorkspace&);

}  // namespace sft::ops
