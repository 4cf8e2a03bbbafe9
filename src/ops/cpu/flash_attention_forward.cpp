// Tiled attention forward with an online softmax (contract in ops/attention.h).
//
// Work item = (segment, kv head, query tile), heaviest (last) tiles of a segment first: the query
// heads of the kv head's group share each key tile the item walks. For its tile of nq queries
// the item walks the key tiles that any of them can see, in ascending order, keeping per query
// and head a running max m, a running sum l and an unnormalised accumulator:
//   S = Q Kᵀ · scale (then soft-capped, when set);  m' = max(m, rowmax S);  P = exp(S − m');  l =
//   l·e^(m−m') + rowsum P; acc = acc·e^(m−m') + P V.   Finally out = acc / l and lse = m + log l.
// Keys outside the window or after the query get P = 0, row by row, so partial tiles need no
// −inf scores; key tiles left of the window or right of the diagonal are never visited.
// The item body is compiled twice for float: with library GEMMs per tile (the baseline) and, on
// AVX-512, with the register-blocked microkernels, each key tile's Kᵀ transposed and V copied
// once per item for the group's heads (flash_attention_products.h).
#include <limits>
#include <type_traits>
#include <utility>

#include "ops/cpu/cpu_features.h"
#include "ops/cpu/flash_attention_products.h"
#include "ops/cpu/flash_attention_tiles.h"

namespace sft::ops {

namespace {

using flash::padded;

template <typename T>
struct ForwardScratch {  // one per slot; `group` = H / Hkv query heads per item
  T* s;                  // (q_tile, tile_ld) scores, then probabilities
  T* acc;                // (group, q_tile, D)
  T* m;                  // (group, q_tile) running max of the scaled scores
  T* l;                  // (group, q_tile) running sum of exp(score − m)
  T* alpha;              // (q_tile) the key tile's rescale of acc's rows, e^(m − m')
  T* kt;                 // (D, tile_ld) the key tile transposed (Avx512Products)
  T* vp;                 // (k_tile, row_ld) the value tile packed (Avx512Products)
};

// Scales row r of the score tile (soft-capping it when cap > 0), turns its visible keys [a, b)
// into exp(s − m') and zeroes the rest; returns the rescale factor e^(m − m') for the
// accumulator and updates m and l. The exponentials run in whole groups of Lanes (for_lanes).
template <int64_t Lanes, typename T>
[[gnu::always_inline]] inline T softmax_row(T* row, int64_t nk, flash::TileKeys keys, T scale,
                                            T cap, T* m, T* l) {
  const auto [a, b] = keys;
  if (a >= b) {  // no visible key in this tile for this query
    for (int64_t j = 0; j < nk; ++j) row[j] = T(0);
    return T(1);
  }
  if (cap > T(0)) {
    flash::soft_cap(row + a, b - a, scale, cap);
    scale = T(1);
  }
  const T mx = flash::scaled_max(row + a, b - a, scale, *m);
  const T alpha = *m == -std::numeric_limits<T>::infinity() ? T(0) : flash::exp_score(*m - mx);
  flash::for_lanes<Lanes>(keys, [&](int64_t j) { row[j] = flash::exp_score(row[j] * scale - mx); });
  const T sum = flash::lane_sum(row + a, b - a);
  for (int64_t j = 0; j < a; ++j) row[j] = T(0);
  for (int64_t j = b; j < nk; ++j) row[j] = T(0);
  *l = *l * alpha + sum;
  *m = mx;
  return alpha;
}

template <typename T, typename Products>
[[gnu::always_inline]] inline void forward_item(T* out, T* lse, const T* q, const T* k, const T* v,
                                                const AttentionSegment& s, const AttentionDims& d,
                                                int64_t g, int64_t i0, const AttentionWorkspace& ws,
                                                const ForwardScratch<T>& sc, const Products& mm) {
  const int64_t HD = d.H * d.D, KD = d.Hkv * d.D, group = d.H / d.Hkv, Bq = ws.q_tile;
  const int64_t nq = std::min(Bq, s.q_len - i0), Bk = ws.k_tile, Ls = flash::tile_ld(ws);
  const int64_t pos0 = s.q_offset + i0, pos1 = pos0 + nq - 1;
  const int64_t klo = flash::key_lo(pos0, d.window), khi = flash::key_hi(pos1, s.k_len);
  const T scale = flash::score_scale<T>(d), cap = static_cast<T>(d.softcap);

  for (int64_t r = 0; r < group * Bq; ++r) {
    sc.m[r] = -std::numeric_limits<T>::infinity();
    sc.l[r] = T(0);
  }

  for (int64_t j0 = klo; j0 < khi; j0 += Bk) {
    const int64_t nk = std::min(Bk, khi - j0);
    const int64_t krow = (s.k_begin + j0) * KD + (g * d.D);
    const flash::Rows<const T> kt = mm.keys(sc.kt, {k + krow, KD}, nk, d.D);
    const flash::Rows<const T> vt = mm.rows(sc.vp, {v + krow, KD}, nk, d.D);
    const int64_t diagonal = pos0 + 1 - j0;
    for (int64_t hl = 0; hl < group; ++hl) {
      const T* qt = q + (s.q_begin + i0) * HD + (g * group + hl) * d.D;
      T* m = sc.m + hl * Bq;
      T* l = sc.l + hl * Bq;
      mm.scores({sc.s, Ls}, {qt, HD}, kt, nq, nk, d.D, diagonal);
      for (int64_t r = 0; r < nq; ++r) {
        const flash::TileKeys keys = flash::visible_keys(pos0 + r, j0, nk, d.window, s.k_len);
        sc.alpha[r] =
            softmax_row<Products::kLanes>(sc.s + r * Ls, nk, keys, scale, cap, m + r, l + r);
      }
      // The first tile's rescale is 0 (m was −∞) or 1 (no key seen yet): acc starts as P V.
      const flash::Rows<T> acc{sc.acc + hl * Bq * d.D, d.D};
      if (j0 == klo)
        mm.assign(acc, {sc.s, Ls}, vt, nq, d.D, nk, diagonal);
      else
        mm.add(acc, {sc.s, Ls}, vt, nq, d.D, nk, diagonal, sc.alpha);
    }
  }

  for (int64_t hl = 0; hl < group; ++hl) {
    const int64_t h = g * group + hl;
    for (int64_t r = 0; r < nq; ++r) {
      const T l = sc.l[hl * Bq + r];
      const T inv = T(1) / l;
      const T* acc = sc.acc + (hl * Bq + r) * d.D;
      T* o = out + (s.q_begin + i0 + r) * HD + h * d.D;
      for (int64_t x = 0; x < d.D; ++x) o[x] = acc[x] * inv;
      lse[(s.q_begin + i0 + r) * d.H + h] = sc.m[hl * Bq + r] + std::log(l);
    }
  }
}

template <typename T>
void forward_item_blas(T* out, T* lse, const T* q, const T* k, const T* v,
                       const AttentionSegment& s, const AttentionDims& d, int64_t g, int64_t i0,
                       const AttentionWorkspace& ws, const ForwardScratch<T>& sc) {
  forward_item(out, lse, q, k, v, s, d, g, i0, ws, sc, flash::BlasProducts<T>{});
}

[[gnu::target("avx512f,avx512dq,avx512bw,avx512vl")]] void forward_item_avx512(
    float* out, float* lse, const float* q, const float* k, const float* v,
    const AttentionSegment& s, const AttentionDims& d, int64_t g, int64_t i0,
    const AttentionWorkspace& ws, const ForwardScratch<float>& sc) {
  forward_item(out, lse, q, k, v, s, d, g, i0, ws, sc, flash::Avx512Products{flash::tile_ld(ws)});
}

// Workspace: item prefix per segment, then one scratch block per slot.
int64_t prefix_size(const flash::Plan& p) {
  return padded<int64_t>(p.segments + 1) * 8;
}

// One slot's scratch as element offsets; the packs exist for float only (Avx512Products).
struct SlotLayout {
  int64_t s, acc, m, l, alpha, kt = -1, vp = -1, elems = 0;
};
template <typename T>
SlotLayout slot_layout(const AttentionWorkspace& ws, const AttentionDims& d) {
  SlotLayout o;
  auto take = [&](int64_t n) { return std::exchange(o.elems, o.elems + padded<T>(n)); };
  const int64_t Bq = ws.q_tile;
  const int64_t group = d.H / d.Hkv;
  o.s = take(Bq * flash::tile_ld(ws));
  o.acc = take(group * Bq * d.D);
  o.m = take(group * Bq);
  o.l = take(group * Bq);
  o.alpha = take(Bq);
  if constexpr (std::is_same_v<T, float>) {
    o.kt = take(d.D * flash::tile_ld(ws));
    o.vp = take(ws.k_tile * flash::row_ld(d.D));
  }
  return o;
}
template <typename T>
ForwardScratch<T> carve(T* p, const SlotLayout& o) {
  return {p + o.s,
          p + o.acc,
          p + o.m,
          p + o.l,
          p + o.alpha,
          o.kt >= 0 ? p + o.kt : nullptr,
          o.vp >= 0 ? p + o.vp : nullptr};
}

}  // namespace

namespace flash {
template <typename T>
size_t forward_bytes(const Plan& p, const AttentionDims& dims, const AttentionWorkspace& ws) {
  return static_cast<size_t>(prefix_size(p) + p.slots * slot_layout<T>(ws, dims).elems *
                                                  static_cast<int64_t>(sizeof(T)));
}
template size_t forward_bytes<float>(const Plan&, const AttentionDims&, const AttentionWorkspace&);
template size_t forward_bytes<double>(const Plan&, const AttentionDims&, const AttentionWorkspace&);
}  // namespace flash

template <typename T>
void attention_forward(T* out, T* lse, const T* q, const T* k, const T* v,
                       std::span<const AttentionSegment> segments, const AttentionDims& dims,
                       AttentionWorkspace& ws) {
  const flash::Extent e = flash::check_segments(segments, dims, false);
  if (ws.q_tile <= 0 || ws.k_tile <= 0) fail("attention", "tile sizes must be positive");
  const int64_t Bq = ws.q_tile, nseg = static_cast<int64_t>(segments.size());

  int64_t items = 0;
  for (const AttentionSegment& s : segments) items += dims.Hkv * ((s.q_len + Bq - 1) / Bq);
  if (items == 0) return;
  const flash::Plan plan = flash::plan_of(segments, e, ws, items);
  const int64_t slots = plan.slots;
  const SlotLayout layout = slot_layout<T>(ws, dims);
  const int64_t prefix_bytes = prefix_size(plan);
  std::byte* base =
      flash::take_bytes(ws, "attention_forward", flash::forward_bytes<T>(plan, dims, ws));
  auto* prefix = reinterpret_cast<int64_t*>(base);
  prefix[0] = 0;
  for (int64_t i = 0; i < nseg; ++i)
    prefix[i + 1] = prefix[i] + dims.Hkv * ((segments[i].q_len + Bq - 1) / Bq);
  T* scratch = reinterpret_cast<T*>(base + prefix_bytes);
  const bool avx512 = cpu::use_avx512();

  flash::run_items(items, slots, [&](int64_t item, int64_t slot) {
    const int64_t si = std::upper_bound(prefix, prefix + nseg + 1, item) - prefix - 1;
    const AttentionSegment& s = segments[static_cast<size_t>(si)];
    const int64_t r = item - prefix[si], tiles = (s.q_len + Bq - 1) / Bq;
    const int64_t tile = tiles - 1 - r / dims.Hkv, g = r % dims.Hkv;
    const ForwardScratch<T> sc = carve(scratch + slot * layout.elems, layout);
    if constexpr (std::is_same_v<T, float>)
      if (avx512) return forward_item_avx512(out, lse, q, k, v, s, dims, g, tile * Bq, ws, sc);
    forward_item_blas(out, lse, q, k, v, s, dims, g, tile * Bq, ws, sc);
  });
}

template void attention_forward<float>(float*, float*, const float*, const float*, const float*,
                                       std::span<const AttentionSegment>, const AttentionDims&,
                                       AttentionWorkspace&);
template void attention_forward<double>(double*, double*, const double*, const double*,
                                        const double*, std::span<const AttentionSegment>,
                                        const AttentionDims&, AttentionWorkspace&);

}  // namespace sft::ops
