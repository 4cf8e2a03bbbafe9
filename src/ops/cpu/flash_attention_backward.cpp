// Tiled attention backward (contract in ops/attention.h). With P = exp(S − lse) recomputed from
// the saved log-sum-exp and Δ = rowsum(dO ⊙ O) (equal to rowsum(P ⊙ dP)):
//   dV = Pᵀ dO,  dP = dO Vᵀ,  dS = P ⊙ (dP − Δ) · scale,  dK = dSᵀ Q,  dQ = dS K
// (with a soft-cap, dS also ⊙ (1 − tanh²) of the capped scores, kept beside P).
//
// Work item = (segment, query head). It walks key tiles in ascending order (outer) and, for
// each, the query tiles that can see it (inner), so dK and dV of the key tile accumulate in
// scratch and are written once, while dQ rows, owned by this item alone, accumulate in place
// across key tiles in ascending order: five tile matmuls per (query, key) tile pair and no
// races. Splitting by key tile instead would need a second pass recomputing S and dP for dQ
// (seven matmuls); with H items per document the pool stays busy on these 2-core machines.
// A kv head shared by a group of query heads gets one partial dK, dV per query head (in
// workspace: 2 · Tk · H · D values, transient, not saved across layers); a last pass sums them
// over the group in head order. Parallelism is segments × H items (16 per document for
// Qwen3-0.6B): enough for a few cores; wider machines want items split by key tile too.
// The item body is compiled twice for float: with library GEMMs per tile (the baseline) and, on
// AVX-512, with the register-blocked microkernels, Kᵀ and Vᵀ of each key tile packed once for
// all the query tiles that see it (flash_attention_tiles.h, "Tile products").
#include <type_traits>

#include "ops/cpu/cpu_features.h"
#include "ops/cpu/flash_attention_tiles.h"

namespace sft::ops {

namespace {

using flash::padded;

constexpr int64_t kReduceRows = 64;  // key rows per work item of the group sum

template <typename T>
struct BackwardScratch {  // one per slot
  T* p;                   // (q_tile, tile_ld) scores, then probabilities
  T* ds;                  // (q_tile, tile_ld) dP, then dS
  T* dk;                  // (k_tile, D)
  T* dv;                  // (k_tile, D)
  T* dcap;                // (q_tile, tile_ld) the soft-cap's 1 − tanh² (only with one)
  T* kt;                  // (D, tile_ld) the key tile transposed (Avx512Products)
  T* vt;                  // (D, tile_ld) the value tile transposed (Avx512Products)
};

template <typename T, typename Products>
[[gnu::always_inline]] inline void backward_head(T* dq, T* dk_dst, T* dv_dst, int64_t dst_stride,
                                                 T* delta, const T* dout, const T* out,
                                                 const T* lse, const T* q, const T* k, const T* v,
                                                 const AttentionSegment& s, const AttentionDims& d,
                                                 int64_t h, const AttentionWorkspace& ws,
                                                 const BackwardScratch<T>& sc, const Products& mm) {
  const int64_t HD = d.H * d.D, KD = d.Hkv * d.D, g = h / (d.H / d.Hkv);
  const int64_t Bq = ws.q_tile, Bk = ws.k_tile, Ls = flash::tile_ld(ws);
  constexpr int64_t Lanes = Products::kLanes;
  const T scale = flash::score_scale<T>(d), cap = static_cast<T>(d.softcap);

  for (int64_t i = 0; i < s.q_len; ++i) {
    const int64_t row = (s.q_begin + i) * HD + h * d.D;
    delta[(s.q_begin + i) * d.H + h] = flash::lane_dot(dout + row, out + row, d.D);
    for (int64_t x = 0; x < d.D; ++x) dq[row + x] = T(0);
  }

  for (int64_t j0 = 0; j0 < s.k_len; j0 += Bk) {
    const int64_t nk = std::min(Bk, s.k_len - j0);
    const T* kt = k + (s.k_begin + j0) * KD + g * d.D;
    const T* vt = v + (s.k_begin + j0) * KD + g * d.D;
    for (int64_t x = 0; x < nk * d.D; ++x) sc.dk[x] = sc.dv[x] = T(0);
    const flash::Rows<const T> k_rows{kt, KD}, v_rows{vt, KD};
    const flash::Rows<const T> k_op = mm.keys(sc.kt, k_rows, nk, d.D);
    const flash::Rows<const T> v_op = mm.keys(sc.vt, v_rows, nk, d.D);
    // Queries that see a key of [j0, j0 + nk): position ≥ j0 and, with a window,
    // position − (j0 + nk − 1) < window.
    const int64_t ilo = std::max<int64_t>(0, j0 - s.q_offset);
    const int64_t ihi =
        d.window > 0 ? std::min(s.q_len, j0 + nk - 1 + d.window - s.q_offset) : s.q_len;
    for (int64_t i0 = ilo; i0 < ihi; i0 += Bq) {
      const int64_t nq = std::min(Bq, ihi - i0);
      const int64_t qrow = (s.q_begin + i0) * HD + h * d.D;
      const flash::Rows<const T> qi{q + qrow, HD}, dout_i{dout + qrow, HD};
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
          flash::for_lanes<Lanes>(
              keys, [&](int64_t j) { row[j] = flash::exp_score(row[j] * scale - m); });
        }
        for (int64_t j = 0; j < a; ++j) row[j] = T(0);
        for (int64_t j = std::max(a, b); j < nk; ++j) row[j] = T(0);
      }
      mm.add_at({sc.dv, d.D}, {sc.p, Ls}, dout_i, nk, d.D, nq, diagonal);
      mm.scores({sc.ds, Ls}, dout_i, v_op, nq, nk, d.D, diagonal);
      // dS is 0 where P is: outside the visible keys, where dP may be unwritten (past the
      // diagonal) and dcap is.
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
      mm.add_at({sc.dk, d.D}, {sc.ds, Ls}, qi, nk, d.D, nq, diagonal);
      mm.add({dq + qrow, HD}, {sc.ds, Ls}, k_rows, nq, d.D, nk, diagonal, nullptr);
    }
    for (int64_t j = 0; j < nk; ++j) {
      T* dkr = dk_dst + (s.k_begin + j0 + j) * dst_stride;
      T* dvr = dv_dst + (s.k_begin + j0 + j) * dst_stride;
      for (int64_t x = 0; x < d.D; ++x) {
        dkr[x] = sc.dk[j * d.D + x];
        dvr[x] = sc.dv[j * d.D + x];
      }
    }
  }
}

template <typename T>
void backward_head_blas(T* dq, T* dk_dst, T* dv_dst, int64_t dst_stride, T* delta, const T* dout,
                        const T* out, const T* lse, const T* q, const T* k, const T* v,
                        const AttentionSegment& s, const AttentionDims& d, int64_t h,
                        const AttentionWorkspace& ws, const BackwardScratch<T>& sc) {
  backward_head(dq, dk_dst, dv_dst, dst_stride, delta, dout, out, lse, q, k, v, s, d, h, ws, sc,
                flash::BlasProducts<T>{});
}

[[gnu::target("avx512f,avx512dq,avx512bw,avx512vl")]] void backward_head_avx512(
    float* dq, float* dk_dst, float* dv_dst, int64_t dst_stride, float* delta, const float* dout,
    const float* out, const float* lse, const float* q, const float* k, const float* v,
    const AttentionSegment& s, const AttentionDims& d, int64_t h, const AttentionWorkspace& ws,
    const BackwardScratch<float>& sc) {
  backward_head(dq, dk_dst, dv_dst, dst_stride, delta, dout, out, lse, q, k, v, s, d, h, ws, sc,
                flash::Avx512Products{flash::tile_ld(ws)});
}

// dk[row, g] = Σ over the group's heads, in head order, of the partials part[row, h].
template <typename T>
void sum_group(T* dst, const T* part, int64_t row0, int64_t rows, const AttentionDims& d) {
  const int64_t group = d.H / d.Hkv;
  for (int64_t row = row0; row < row0 + rows; ++row)
    for (int64_t g = 0; g < d.Hkv; ++g) {
      T* o = dst + (row * d.Hkv + g) * d.D;
      const T* p = part + (row * d.H + g * group) * d.D;
      for (int64_t x = 0; x < d.D; ++x) o[x] = p[x];
      for (int64_t hl = 1; hl < group; ++hl)
        for (int64_t x = 0; x < d.D; ++x) o[x] += p[hl * d.D + x];
    }
}

// Workspace: reduce-item prefix, Δ (q_rows, H), partial dK/dV (k_rows, H, D) when heads share
// a kv head, then one scratch block per slot (sizes in elements of T, the prefix in bytes).
struct Layout {
  int64_t prefix_bytes, n_delta, n_part, per_slot;
};
template <typename T>
Layout layout(const flash::Plan& p, const AttentionDims& d, const AttentionWorkspace& ws) {
  const int64_t group = d.H / d.Hkv, Bq = ws.q_tile, Bk = ws.k_tile;
  Layout l;
  l.prefix_bytes = padded<int64_t>(p.segments + 1) * 8;
  l.n_delta = padded<T>(p.q_rows * d.H);
  l.n_part = group > 1 ? padded<T>(p.k_rows * d.H * d.D) : 0;
  const int64_t packs = std::is_same_v<T, float> ? 2 * padded<T>(d.D * flash::tile_ld(ws)) : 0;
  l.per_slot = (d.softcap > 0 ? 3 : 2) * padded<T>(Bq * flash::tile_ld(ws)) +
               2 * padded<T>(Bk * d.D) + packs;
  return l;
}

}  // namespace

namespace flash {
template <typename T>
size_t backward_bytes(const Plan& p, const AttentionDims& dims, const AttentionWorkspace& ws) {
  const Layout l = layout<T>(p, dims, ws);
  const int64_t elems = l.n_delta + 2 * l.n_part + p.slots * l.per_slot;
  return static_cast<size_t>(l.prefix_bytes + elems * static_cast<int64_t>(sizeof(T)));
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
  const int64_t Bq = ws.q_tile, Bk = ws.k_tile, nseg = static_cast<int64_t>(segments.size());
  const int64_t group = dims.H / dims.Hkv, items = nseg * dims.H;
  if (items == 0) return;
  const flash::Plan plan = flash::plan_of(segments, e, ws, items);
  const int64_t slots = plan.slots;
  const Layout l = layout<T>(plan, dims, ws);
  const int64_t prefix_bytes = l.prefix_bytes, n_delta = l.n_delta, n_part = l.n_part,
                per_slot = l.per_slot;
  std::byte* base =
      flash::take_bytes(ws, "attention_backward", flash::backward_bytes<T>(plan, dims, ws));
  auto* prefix = reinterpret_cast<int64_t*>(base);
  T* delta = reinterpret_cast<T*>(base + prefix_bytes);
  T* dk_part = delta + n_delta;
  T* dv_part = dk_part + n_part;
  T* scratch = dv_part + n_part;

  T* dk_dst = group > 1 ? dk_part : dk;
  T* dv_dst = group > 1 ? dv_part : dv;
  const int64_t dst_stride = (group > 1 ? dims.H : dims.Hkv) * dims.D;
  const bool avx512 = cpu::use_avx512();
  flash::run_items(items, slots, [&](int64_t item, int64_t slot) {
    const AttentionSegment& s = segments[static_cast<size_t>(item / dims.H)];
    const int64_t h = item % dims.H;
    T* p = scratch + slot * per_slot;
    BackwardScratch<T> sc;
    sc.p = p;
    sc.ds = sc.p + padded<T>(Bq * flash::tile_ld(ws));
    sc.dk = sc.ds + padded<T>(Bq * flash::tile_ld(ws));
    sc.dv = sc.dk + padded<T>(Bk * dims.D);
    sc.dcap = sc.dv + padded<T>(Bk * dims.D);
    sc.kt = sc.dcap + (dims.softcap > 0 ? padded<T>(Bq * flash::tile_ld(ws)) : 0);
    sc.vt = sc.kt + padded<T>(dims.D * flash::tile_ld(ws));
    // Partials are indexed by the query head: row stride H·D, offset h·D; direct writes by the
    // kv head (= h when group is 1).
    const int64_t off = h * dims.D;
    if constexpr (std::is_same_v<T, float>)
      if (avx512)
        return backward_head_avx512(dq, dk_dst + off, dv_dst + off, dst_stride, delta, dout, out,
                                    lse, q, k, v, s, dims, h, ws, sc);
    backward_head_blas(dq, dk_dst + off, dv_dst + off, dst_stride, delta, dout, out, lse, q, k, v,
                       s, dims, h, ws, sc);
  });
  if (group == 1) return;

  prefix[0] = 0;
  for (int64_t i = 0; i < nseg; ++i)
    prefix[i + 1] = prefix[i] + (segments[i].k_len + kReduceRows - 1) / kReduceRows;
  const int64_t blocks = prefix[nseg];
  flash::run_items(blocks, flash::slot_count(ws, blocks), [&](int64_t item, int64_t) {
    const int64_t si = std::upper_bound(prefix, prefix + nseg + 1, item) - prefix - 1;
    const AttentionSegment& s = segments[static_cast<size_t>(si)];
    const int64_t r0 = (item - prefix[si]) * kReduceRows;
    const int64_t rows = std::min(kReduceRows, s.k_len - r0);
    sum_group(dk, dk_part, s.k_begin + r0, rows, dims);
    sum_group(dv, dv_part, s.k_begin + r0, rows, dims);
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
