// bf16 tiled attention backward (contract in ops/attention.h, attention_backward_bf16).
//
// Item = (segment, kv head): key tiles ascending (outer), then each query head of the kv
// group in head order and the query tiles that see the key tile (inner). dK, dV of the key tile
// accumulate in fp32 scratch over the whole group and are written once; each head's dQ rows
// accumulate in the item's scratch in ascending key tiles and are written at its end. (The fp32
// kernel splits by query head and sums per-head partials of dK, dV afterwards; here a group
// shares its key tiles while they are hot and the (Tk, H, D) partials, written and read back,
// are not needed.) K and V are packed once per call (pack_kv: Kᵀ, Vᵀ pairs and K row pairs per
// key tile). Per item each head's Q and dO rows (dO rounded to bf16 once) are packed as rows
// (A of S, dP) and transposed (A of dKᵀ, dVᵀ), and Δ = rowsum(dO ⊙ O) is taken in fp32. Per
// (key tile, head, query tile) five tile products:
//   S = Q Kᵀ, P = exp(S·scale − lse);  dP = dO Vᵀ;  dS = P ⊙ (dP − Δ);
//   dVᵀ += dOᵀ bf16(P);  dKᵀ += Qᵀ bf16(dS);  dQ += bf16(dS) K   (dQ, dK · scale on write).
// With a soft-cap, S·scale is capped before the exponential and dS gains the factor 1 − tanh².
// dK and dV accumulate transposed so that P and dS only need row-pair interleaving (B of the
// products), never a transpose; the key tile's dKᵀ, dVᵀ are transposed once when written.
// Query tiles start at even rows (B holds row pairs); a row that sees no key of the tile gets
// P = 0.
#include <type_traits>

#include "ops/cpu/flash_attention_bf16.h"
#include "ops/cpu/flash_attention_tiles.h"

namespace sft::ops {

namespace {

using flash_bf16::bf16;
using flash_bf16::round_up;
using Skip = cpu::attention_microkernel::Skip;

struct Shape {  // the padded sizes of one call
  int64_t Bq, Bk, Dk, Dn, Bq32, Bk32, QL;
  Shape(const AttentionWorkspace& ws, const AttentionDims& d, int64_t max_q_len)
      : Bq(ws.q_tile + (ws.q_tile & 1)),  // even, so query tiles start at even rows
        Bk(ws.k_tile),
        Dk(round_up(d.D, 32)),
        Dn(round_up(d.D, 16)),
        Bq32(round_up(Bq, 32)),
        Bk32(round_up(ws.k_tile, 32)),
        QL(round_up(max_q_len, 2) + 32) {}
};

struct Scratch {  // one per slot
  // Per query head of the group (group copies each, head-major):
  bf16 *qa, *doa;  // (QL, Dk) the segment's Q and dO rows of the head (zero past q_len)
  bf16 *qT, *doT;  // (Dn, QL) their transposes
  float* dq;       // (QL, Dn) the head's dQ / scale, written to dq at the end
  float* delta;    // (QL) Δ per query row
  // Shared:
  bf16* dsb;         // (Bq32, Bk32) bf16(dS), rows
  bf16 *pv, *dsv;    // (Bq32 / 2, 2 Bk32) bf16(P), bf16(dS) as query row pairs
  float *s, *dp;     // (Bq32, Bk32) scores then P; dP then dS
  float *dkT, *dvT;  // (Dn, Bk32) the key tile's accumulators
};

int64_t bytes(int64_t n, int64_t size) {
  return round_up(n * size, 64);
}

int64_t scratch_bytes(const Shape& z, int64_t group) {
  return group * (4 * bytes(z.QL * z.Dk, 2) + bytes(z.QL * z.Dn, 4) + bytes(z.QL, 4)) +
         3 * bytes(z.Bq32 * z.Bk32, 2) + 2 * bytes(z.Bq32 * z.Bk32, 4) +
         2 * bytes(z.Dn * z.Bk32, 4);
}

Scratch carve(std::byte* p, const Shape& z, int64_t group) {
  Scratch sc;
  auto take = [&](auto*& dst, int64_t n, int64_t size) {
    dst = reinterpret_cast<std::remove_reference_t<decltype(dst)>>(p);
    p += bytes(n, size);
  };
  take(sc.qa, group * round_up(z.QL * z.Dk, 32), 2);
  take(sc.doa, group * round_up(z.QL * z.Dk, 32), 2);
  take(sc.qT, group * round_up(z.QL * z.Dk, 32), 2);  // Dn ≤ Dk rows of QL
  take(sc.doT, group * round_up(z.QL * z.Dk, 32), 2);
  take(sc.dq, group * round_up(z.QL * z.Dn, 16), 4);
  take(sc.delta, group * round_up(z.QL, 16), 4);
  take(sc.dsb, z.Bq32 * z.Bk32, 2);
  take(sc.pv, z.Bq32 * z.Bk32, 2);
  take(sc.dsv, z.Bq32 * z.Bk32, 2);
  take(sc.s, z.Bq32 * z.Bk32, 4);
  take(sc.dp, z.Bq32 * z.Bk32, 4);
  take(sc.dkT, z.Dn * z.Bk32, 4);
  take(sc.dvT, z.Dn * z.Bk32, 4);
  return sc;
}

template <typename Out>
[[gnu::always_inline]] inline float row_delta(const bf16* dout, const Out* out, int64_t D) {
  float lane[8] = {};
  int64_t x = 0;
  auto o = [&](int64_t i) {
    if constexpr (std::is_same_v<Out, float>)
      return out[i];
    else
      return flash_bf16::widen(out[i]);
  };
  for (; x + 8 <= D; x += 8)
    for (int64_t l = 0; l < 8; ++l) lane[l] += flash_bf16::widen(dout[x + l]) * o(x + l);
  for (int64_t l = 0; x < D; ++x, ++l) lane[l] += flash_bf16::widen(dout[x]) * o(x);
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

// Rows 2r, 2r + 1 of x (rows of ld floats) as bf16 pairs: dst[r · 2 n + 2 j + t] = x[2r + t][j].
[[gnu::always_inline]] inline void interleave_rows(bf16* dst, const float* x, int64_t ld,
                                                   int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows / 2; ++r) {
    const float* x0 = x + 2 * r * ld;
    const float* x1 = x0 + ld;
    bf16* d = dst + r * 2 * n;
    for (int64_t j = 0; j < n; ++j) {
      d[2 * j] = flash_bf16::narrow(x0[j]);
      d[2 * j + 1] = flash_bf16::narrow(x1[j]);
    }
  }
}

// Where an item finds its segment's packed key tiles.
struct Keys {
  const bf16* base;
  const int64_t* first_tile;
  int64_t seg;
  const flash_bf16::KvLayout* layout;
};

// One head's arrays inside the item's scratch.
struct HeadScratch {
  bf16 *qa, *doa, *qT, *doT;
  float *dq, *delta;
};
HeadScratch head_scratch(const Scratch& sc, const Shape& z, int64_t hl) {
  const int64_t nb = hl * round_up(z.QL * z.Dk, 32);
  return {sc.qa + nb,
          sc.doa + nb,
          sc.qT + nb,
          sc.doT + nb,
          sc.dq + hl * round_up(z.QL * z.Dn, 16),
          sc.delta + hl * round_up(z.QL, 16)};
}

template <typename Out>
[[gnu::always_inline]] inline void backward_item(float* dq, float* dk, float* dv, const float* dout,
                                                 const Out* out, const float* lse, const bf16* q,
                                                 const Keys& keys, const AttentionSegment& s,
                                                 const AttentionDims& d, int64_t g, const Shape& z,
                                                 const Scratch& sc, flash_bf16::GemmFn gemm) {
  const int64_t HD = d.H * d.D, KD = d.Hkv * d.D, group = d.H / d.Hkv;
  const flash_bf16::KvLayout& kl = *keys.layout;
  const float scale = flash::score_scale<float>(d), cap = static_cast<float>(d.softcap);

  // Each head's rows of the segment, packed once (rows past q_len are zeros).
  for (int64_t hl = 0; hl < group; ++hl) {
    const HeadScratch hs = head_scratch(sc, z, hl);
    const int64_t row0 = s.q_begin * HD + (g * group + hl) * d.D;
    flash_bf16::pack_rows(hs.qa, q + row0, HD, s.q_len, d.D, z.QL, z.Dk);
    flash_bf16::pack_rows(hs.doa, dout + row0, HD, s.q_len, d.D, z.QL, z.Dk);
    flash_bf16::transpose(hs.qT, z.QL, hs.qa, z.Dk, z.QL, z.Dn);
    flash_bf16::transpose(hs.doT, z.QL, hs.doa, z.Dk, z.QL, z.Dn);
    for (int64_t i = 0; i < s.q_len; ++i)
      hs.delta[i] = row_delta(hs.doa + i * z.Dk, out + row0 + i * HD, d.D);
    for (int64_t x = 0; x < z.QL * z.Dn; ++x) hs.dq[x] = 0.0f;
  }

  for (int64_t t = 0; t * z.Bk < s.k_len; ++t) {
    const int64_t j0 = t * z.Bk, nk = std::min(z.Bk, s.k_len - j0), nk32 = round_up(nk, 32);
    const bf16* block = flash_bf16::kv_block(keys.base, keys.first_tile, keys.seg, t, g, d.Hkv, kl);
    for (int64_t x = 0; x < z.Dn * nk32; ++x) sc.dkT[x] = sc.dvT[x] = 0.0f;
    // Queries that see a key of [j0, j0 + nk), from an even row.
    const int64_t ilo = std::max<int64_t>(0, j0 - s.q_offset) & ~int64_t{1};
    const int64_t ihi =
        d.window > 0 ? std::min(s.q_len, j0 + nk - 1 + d.window - s.q_offset) : s.q_len;
    for (int64_t hl = 0; hl < group; ++hl) {
      const HeadScratch hs = head_scratch(sc, z, hl);
      const int64_t h = g * group + hl;
      for (int64_t i0 = ilo; i0 < ihi; i0 += z.Bq) {
        const int64_t nq = std::min(z.Bq, ihi - i0), nq16 = round_up(nq, 16),
                      nq32 = round_up(nq, 32);
        // Keys the tile's first query row sees: the products may skip what lies past them.
        const flash_bf16::Causal past_columns{Skip::kColumnsPastDiagonal, s.q_offset + i0 + 1 - j0};
        gemm(sc.s, nk32, hs.qa + i0 * z.Dk, z.Dk, block + kl.kt, 2 * kl.Bk32, nq16, nk32, z.Dk,
             false, past_columns);
        gemm(sc.dp, nk32, hs.doa + i0 * z.Dk, z.Dk, block + kl.vt, 2 * kl.Bk32, nq16, nk32, z.Dk,
             false, past_columns);
        // P into s, dS into dp, row by row; rows past nq (padding) zero.
        for (int64_t r = 0; r < nq32; ++r) {
          float* pr = sc.s + r * nk32;
          float* dsr = sc.dp + r * nk32;
          int64_t a = 0, b = 0;
          if (r < nq) {
            const int64_t pos = s.q_offset + i0 + r;
            a = std::clamp(flash::key_lo(pos, d.window) - j0, int64_t{0}, nk);
            b = std::max(a, std::clamp(flash::key_hi(pos, s.k_len) - j0, int64_t{0}, nk));
          }
          for (int64_t j = 0; j < a; ++j) pr[j] = dsr[j] = 0.0f;
          if (a < b) {
            const float m = lse[(s.q_begin + i0 + r) * d.H + h], dl = hs.delta[i0 + r];
            if (cap > 0.0f) {  // the soft-cap's derivative 1 − tanh² joins dS
              for (int64_t j = a; j < b; ++j) {
                const float t = std::tanh(pr[j] * scale / cap);
                const float p = flash::exp_score(t * cap - m);
                pr[j] = p;
                dsr[j] = p * (dsr[j] - dl) * (1.0f - t * t);
              }
            } else {
              for (int64_t j = a; j < b; ++j) {
                const float p = flash::exp_score(pr[j] * scale - m);
                pr[j] = p;
                dsr[j] = p * (dsr[j] - dl);
              }
            }
          }
          for (int64_t j = b; j < nk32; ++j) pr[j] = dsr[j] = 0.0f;
        }
        for (int64_t x = 0; x < nq16 * nk32; ++x) sc.dsb[x] = flash_bf16::narrow(sc.dp[x]);
        interleave_rows(sc.pv, sc.s, nk32, nq32, nk32);
        interleave_rows(sc.dsv, sc.dp, nk32, nq32, nk32);
        gemm(sc.dvT, nk32, hs.doT + i0, z.QL, sc.pv, 2 * nk32, z.Dn, nk32, nq32, true, {});
        gemm(sc.dkT, nk32, hs.qT + i0, z.QL, sc.dsv, 2 * nk32, z.Dn, nk32, nq32, true, {});
        gemm(hs.dq + i0 * z.Dn, z.Dn, sc.dsb, nk32, block + kl.kb, 2 * z.Dn, nq16, z.Dn, nk32, true,
             {Skip::kDepthPastDiagonal, past_columns.diagonal});
      }
    }
    for (int64_t j = 0; j < nk; ++j) {
      float* dkr = dk + (s.k_begin + j0 + j) * KD + g * d.D;
      float* dvr = dv + (s.k_begin + j0 + j) * KD + g * d.D;
      for (int64_t x = 0; x < d.D; ++x) {
        dkr[x] = sc.dkT[x * nk32 + j] * scale;
        dvr[x] = sc.dvT[x * nk32 + j];
      }
    }
  }
  // dQ accumulated in contiguous scratch (rows of dq lie H·D apart, which L1 maps to few sets).
  for (int64_t hl = 0; hl < group; ++hl) {
    const HeadScratch hs = head_scratch(sc, z, hl);
    const int64_t row0 = s.q_begin * HD + (g * group + hl) * d.D;
    for (int64_t i = 0; i < s.q_len; ++i) {
      float* dqr = dq + row0 + i * HD;
      const float* acc = hs.dq + i * z.Dn;
      for (int64_t x = 0; x < d.D; ++x) dqr[x] = acc[x] * scale;
    }
  }
}

template <typename Out>
void item_generic(float* dq, float* dk, float* dv, const float* dout, const Out* out,
                  const float* lse, const bf16* q, const Keys& keys, const AttentionSegment& s,
                  const AttentionDims& d, int64_t g, const Shape& z, const Scratch& sc,
                  flash_bf16::GemmFn gemm) {
  backward_item(dq, dk, dv, dout, out, lse, q, keys, s, d, g, z, sc, gemm);
}

template <typename Out>
[[gnu::target("avx512f,avx512dq,avx512bw,avx512vl")]] void item_avx512(
    float* dq, float* dk, float* dv, const float* dout, const Out* out, const float* lse,
    const bf16* q, const Keys& keys, const AttentionSegment& s, const AttentionDims& d, int64_t g,
    const Shape& z, const Scratch& sc, flash_bf16::GemmFn gemm) {
  backward_item(dq, dk, dv, dout, out, lse, q, keys, s, d, g, z, sc, gemm);
}

// Workspace: first key tile per segment, the packed keys, then one scratch block per slot.
struct Layout {
  int64_t prefix_bytes, kv_bytes, per_slot;
};
Layout layout(const flash::Plan& p, const AttentionDims& d, const Shape& z,
              const flash_bf16::KvLayout& kl) {
  return {bytes(p.segments + 1, 8), bytes(p.k_tiles * d.Hkv * kl.elems, 2),
          scratch_bytes(z, d.H / d.Hkv)};
}

}  // namespace

namespace flash {
size_t backward_bf16_bytes(const Plan& p, const AttentionDims& dims, const AttentionWorkspace& ws) {
  const Shape z(ws, dims, p.max_q_len);
  const Layout l = layout(p, dims, z, flash_bf16::KvLayout::make(z.Bk, dims.D, true));
  return static_cast<size_t>(l.prefix_bytes + l.kv_bytes + p.slots * l.per_slot);
}
}  // namespace flash

template <typename Out>
void attention_backward_bf16(float* dq, float* dk, float* dv, const float* dout, const Out* out,
                             const float* lse, const uint16_t* q, const uint16_t* k,
                             const uint16_t* v, std::span<const AttentionSegment> segments,
                             const AttentionDims& dims, AttentionWorkspace& ws) {
  const flash::Extent e = flash::check_segments(segments, dims, true);
  if (ws.q_tile <= 0 || ws.k_tile <= 0) fail("attention", "tile sizes must be positive");
  const int64_t nseg = static_cast<int64_t>(segments.size());
  const int64_t group = dims.H / dims.Hkv, items = nseg * dims.Hkv;
  if (items == 0) return;
  const flash::Plan plan = flash::plan_of(segments, e, ws, items);
  const Shape z(ws, dims, plan.max_q_len);
  const int64_t slots = plan.slots, tiles = plan.k_tiles;
  const flash_bf16::KvLayout kl = flash_bf16::KvLayout::make(z.Bk, dims.D, true);
  const Layout l = layout(plan, dims, z, kl);
  const int64_t prefix_bytes = l.prefix_bytes, kv_bytes = l.kv_bytes, per_slot = l.per_slot;
  std::byte* base =
      flash::take_bytes(ws, "attention_backward", flash::backward_bf16_bytes(plan, dims, ws));
  auto* first_tile = reinterpret_cast<int64_t*>(base);
  auto* packed = reinterpret_cast<bf16*>(base + prefix_bytes);
  std::byte* scratch = base + prefix_bytes + kv_bytes;
  flash_bf16::count_kv_tiles(segments, z.Bk, first_tile);
  flash_bf16::pack_kv(packed, first_tile, k, v, segments, dims, kl,
                      flash::slot_count(ws, tiles * dims.Hkv));

  const flash_bf16::TileGemm& tg = flash_bf16::tile_gemm();
  flash::run_items(items, slots, [&](int64_t item, int64_t slot) {
    const int64_t si = item / dims.Hkv, g = item % dims.Hkv;
    const AttentionSegment& s = segments[static_cast<size_t>(si)];
    const Scratch sc = carve(scratch + slot * per_slot, z, group);
    const Keys keys{packed, first_tile, si, &kl};
    tg.begin();
    if (tg.avx512)
      item_avx512(dq, dk, dv, dout, out, lse, q, keys, s, dims, g, z, sc, tg.gemm);
    else
      item_generic(dq, dk, dv, dout, out, lse, q, keys, s, dims, g, z, sc, tg.gemm);
    tg.end();
  });
}

template void attention_backward_bf16<uint16_t>(float*, float*, float*, const float*,
                                                const uint16_t*, const float*, const uint16_t*,
                                                const uint16_t*, const uint16_t*,
                                                std::span<const AttentionSegment>,
                                                const AttentionDims&, AttentionWorkspace&);
template void attention_backward_bf16<float>(float*, float*, float*, const float*, const float*,
                                             const float*, const uint16_t*, const uint16_t*,
                                             const uint16_t*, std::span<const AttentionSegment>,
                                             const AttentionDims&, AttentionWorkspace&);

}  // namespace sft::ops
