// bf16 tiled attention forward (contract in ops/attention.h, attention_forward_bf16).
//
// The same online softmax and work split as the fp32 kernel (flash_attention_forward.cpp):
// item = (segment, query head, query tile), heaviest tiles first. Per item the query tile is
// copied once into a zero-padded A operand; K is packed as Kᵀ pairs and V as
// interleaved row pairs once per call (pack_kv, before the items), then, per key tile
//   S = Q Kᵀ (fp32);  m' = max(m, rowmax S·scale);  P = exp(S·scale − m') (fp32);
//   l = l·e^(m−m') + rowsum P (fp32 P, as PyTorch sums before rounding);
//   acc = acc·e^(m−m') + bf16(P) V.    out = acc / l, lse = m + log l.
// (With a soft-cap, S·scale is capped first and the softmax runs on the capped scores.)
// Key tiles sit on a grid of Bk keys from the segment's first key (the packed blocks); a window
// that starts inside a tile masks its first keys. The item body is compiled twice (baseline and
// AVX-512, chosen with the tile product).
#include <limits>
#include <type_traits>

#include "ops/cpu/flash_attention_bf16.h"
#include "ops/cpu/flash_attention_tiles.h"

namespace sft::ops {

namespace {

using flash_bf16::bf16;
using flash_bf16::round_up;
using Skip = cpu::attention_microkernel::Skip;

struct Shape {  // the padded sizes of one call
  int64_t Bq, Bk, Dk, Dn, Bq16, Bk32;
  Shape(const AttentionWorkspace& ws, const AttentionDims& d)
      : Bq(ws.q_tile),
        Bk(ws.k_tile),
        Dk(round_up(d.D, 32)),
        Dn(round_up(d.D, 16)),
        Bq16(round_up(ws.q_tile, 16)),
        Bk32(round_up(ws.k_tile, 32)) {}
};

struct Scratch {  // one per slot
  bf16* qa;       // (Bq16, Dk) the query tile
  bf16* p;        // (Bq16, Bk32) bf16(P)
  float* s;       // (Bq16, Bk32) scores
  float* acc;     // (Bq16, Dn)
  float* m;       // (Bq16) running max
  float* l;       // (Bq16) running sum
};

int64_t bytes(int64_t n, int64_t size) {
  return round_up(n * size, 64);
}

int64_t scratch_bytes(const Shape& z) {
  return bytes(z.Bq16 * z.Dk, 2) + bytes(z.Bq16 * z.Bk32, 2) + bytes(z.Bq16 * z.Bk32, 4) +
         bytes(z.Bq16 * z.Dn, 4) + 2 * bytes(z.Bq16, 4);
}

Scratch carve(std::byte* p, const Shape& z) {
  Scratch sc;
  auto take = [&](auto*& dst, int64_t n, int64_t size) {
    dst = reinterpret_cast<std::remove_reference_t<decltype(dst)>>(p);
    p += bytes(n, size);
  };
  take(sc.qa, z.Bq16 * z.Dk, 2);
  take(sc.p, z.Bq16 * z.Bk32, 2);
  take(sc.s, z.Bq16 * z.Bk32, 4);
  take(sc.acc, z.Bq16 * z.Dn, 4);
  take(sc.m, z.Bq16, 4);
  take(sc.l, z.Bq16, 4);
  return sc;
}

// Row r of the scores against its visible keys [a, b) of a tile of nk32 columns: bf16(P) into
// p (zero outside [a, b)), m and l updated; returns the accumulator's rescale e^(m − m').
// Soft-capped first when cap > 0.
[[gnu::always_inline]] inline float softmax_row(float* row, bf16* p, int64_t nk32, int64_t a,
                                                int64_t b, float scale, float cap, float* m,
                                                float* l) {
  if (a >= b) {
    for (int64_t j = 0; j < nk32; ++j) p[j] = 0;
    return 1.0f;
  }
  if (cap > 0.0f) {
    flash::soft_cap(row + a, b - a, scale, cap);
    scale = 1.0f;
  }
  const float mx = flash::scaled_max(row + a, b - a, scale, *m);
  const float alpha =
      *m == -std::numeric_limits<float>::infinity() ? 0.0f : flash::exp_score(*m - mx);
  for (int64_t j = a; j < b; ++j) row[j] = flash::exp_score(row[j] * scale - mx);
  const float sum = flash::lane_sum(row + a, b - a);
  for (int64_t j = 0; j < a; ++j) p[j] = 0;
  for (int64_t j = a; j < b; ++j) p[j] = flash_bf16::narrow(row[j]);
  for (int64_t j = b; j < nk32; ++j) p[j] = 0;
  *l = *l * alpha + sum;
  *m = mx;
  return alpha;
}

// Where an item finds its segment's packed key tiles.
struct Keys {
  const bf16* base;
  const int64_t* first_tile;
  int64_t seg;
  const flash_bf16::KvLayout* layout;
};

template <typename Out>
[[gnu::always_inline]] inline void forward_item(Out* out, float* lse, const bf16* q,
                                                const Keys& keys, const AttentionSegment& s,
                                                const AttentionDims& d, int64_t h, int64_t i0,
                                                const Shape& z, const Scratch& sc,
                                                flash_bf16::GemmFn gemm) {
  const int64_t HD = d.H * d.D, g = h / (d.H / d.Hkv);
  const flash_bf16::KvLayout& kl = *keys.layout;
  const int64_t nq = std::min(z.Bq, s.q_len - i0), nq16 = round_up(nq, 16);
  const int64_t pos0 = s.q_offset + i0, pos1 = pos0 + nq - 1;
  const int64_t klo = flash::key_lo(pos0, d.window), khi = flash::key_hi(pos1, s.k_len);
  const float scale = flash::score_scale<float>(d), cap = static_cast<float>(d.softcap);

  flash_bf16::pack_rows(sc.qa, q + (s.q_begin + i0) * HD + h * d.D, HD, nq, d.D, nq16, z.Dk);
  for (int64_t r = 0; r < nq16; ++r) {
    sc.m[r] = -std::numeric_limits<float>::infinity();
    sc.l[r] = 0.0f;
  }
  for (int64_t x = 0; x < nq16 * z.Dn; ++x) sc.acc[x] = 0.0f;

  for (int64_t t = klo / z.Bk; t * z.Bk < khi; ++t) {
    const int64_t j0 = t * z.Bk, nk = std::min(z.Bk, khi - j0), nk32 = round_up(nk, 32);
    const bf16* block = flash_bf16::kv_block(keys.base, keys.first_tile, keys.seg, t, g, d.Hkv, kl);
    const int64_t diagonal = pos0 + 1 - j0;  // keys the first query row sees
    gemm(sc.s, nk32, sc.qa, z.Dk, block + kl.kt, 2 * kl.Bk32, nq16, nk32, z.Dk, false,
         {Skip::kColumnsPastDiagonal, diagonal});
    for (int64_t r = 0; r < nq16; ++r) {
      bf16* p = sc.p + r * nk32;
      if (r >= nq) {  // padding rows: no keys
        for (int64_t j = 0; j < nk32; ++j) p[j] = 0;
        continue;
      }
      const int64_t pos = pos0 + r;
      const int64_t a = std::clamp(flash::key_lo(pos, d.window) - j0, int64_t{0}, nk);
      const int64_t b = std::clamp(flash::key_hi(pos, s.k_len) - j0, int64_t{0}, nk);
      const float alpha =
          softmax_row(sc.s + r * nk32, p, nk32, a, b, scale, cap, sc.m + r, sc.l + r);
      if (alpha != 1.0f) {
        float* acc = sc.acc + r * z.Dn;
        for (int64_t x = 0; x < z.Dn; ++x) acc[x] *= alpha;
      }
    }
    gemm(sc.acc, z.Dn, sc.p, nk32, block + kl.vb, 2 * z.Dn, nq16, z.Dn, nk32, true,
         {Skip::kDepthPastDiagonal, diagonal});
  }

  for (int64_t r = 0; r < nq; ++r) {
    const float inv = 1.0f / sc.l[r];
    const float* acc = sc.acc + r * z.Dn;
    Out* o = out + (s.q_begin + i0 + r) * HD + h * d.D;
    for (int64_t x = 0; x < d.D; ++x) {
      if constexpr (std::is_same_v<Out, float>)
        o[x] = acc[x] * inv;
      else
        o[x] = flash_bf16::narrow(acc[x] * inv);
    }
    lse[(s.q_begin + i0 + r) * d.H + h] = sc.m[r] + std::log(sc.l[r]);
  }
}

template <typename Out>
void item_generic(Out* out, float* lse, const bf16* q, const Keys& keys, const AttentionSegment& s,
                  const AttentionDims& d, int64_t h, int64_t i0, const Shape& z, const Scratch& sc,
                  flash_bf16::GemmFn gemm) {
  forward_item(out, lse, q, keys, s, d, h, i0, z, sc, gemm);
}

template <typename Out>
[[gnu::target("avx512f,avx512dq,avx512bw,avx512vl")]] void item_avx512(
    Out* out, float* lse, const bf16* q, const Keys& keys, const AttentionSegment& s,
    const AttentionDims& d, int64_t h, int64_t i0, const Shape& z, const Scratch& sc,
    flash_bf16::GemmFn gemm) {
  forward_item(out, lse, q, keys, s, d, h, i0, z, sc, gemm);
}

// Workspace: item prefix, first key tile per segment, the packed keys, per-slot scratch.
struct Layout {
  int64_t prefix_bytes, kv_bytes, per_slot;
};
Layout layout(const flash::Plan& p, const AttentionDims& d, const Shape& z,
              const flash_bf16::KvLayout& kl) {
  return {2 * bytes(p.segments + 1, 8), bytes(p.k_tiles * d.Hkv * kl.elems, 2), scratch_bytes(z)};
}

}  // namespace

namespace flash {
size_t forward_bf16_bytes(const Plan& p, const AttentionDims& dims, const AttentionWorkspace& ws) {
  const Shape z(ws, dims);
  const Layout l = layout(p, dims, z, flash_bf16::KvLayout::make(z.Bk, dims.D, false));
  return static_cast<size_t>(l.prefix_bytes + l.kv_bytes + p.slots * l.per_slot);
}
}  // namespace flash

template <typename Out>
void attention_forward_bf16(Out* out, float* lse, const uint16_t* q, const uint16_t* k,
                            const uint16_t* v, std::span<const AttentionSegment> segments,
                            const AttentionDims& dims, AttentionWorkspace& ws) {
  const flash::Extent e = flash::check_segments(segments, dims, false);
  if (ws.q_tile <= 0 || ws.k_tile <= 0) fail("attention", "tile sizes must be positive");
  const Shape z(ws, dims);
  const int64_t nseg = static_cast<int64_t>(segments.size());
  int64_t items = 0;
  for (const AttentionSegment& s : segments) items += dims.H * ((s.q_len + z.Bq - 1) / z.Bq);
  if (items == 0) return;
  const flash::Plan plan = flash::plan_of(segments, e, ws, items);
  const int64_t slots = plan.slots, tiles = plan.k_tiles;
  const flash_bf16::KvLayout kl = flash_bf16::KvLayout::make(z.Bk, dims.D, false);
  const Layout l = layout(plan, dims, z, kl);
  const int64_t prefix_bytes = l.prefix_bytes, kv_bytes = l.kv_bytes, per_slot = l.per_slot;
  std::byte* base =
      flash::take_bytes(ws, "attention_forward", flash::forward_bf16_bytes(plan, dims, ws));
  auto* prefix = reinterpret_cast<int64_t*>(base);
  auto* first_tile = reinterpret_cast<int64_t*>(base + bytes(nseg + 1, 8));
  auto* packed = reinterpret_cast<bf16*>(base + prefix_bytes);
  flash_bf16::count_kv_tiles(segments, z.Bk, first_tile);
  flash_bf16::pack_kv(packed, first_tile, k, v, segments, dims, kl,
                      flash::slot_count(ws, tiles * dims.Hkv));
  prefix[0] = 0;
  for (int64_t i = 0; i < nseg; ++i)
    prefix[i + 1] = prefix[i] + dims.H * ((segments[i].q_len + z.Bq - 1) / z.Bq);

  const flash_bf16::TileGemm& tg = flash_bf16::tile_gemm();
  flash::run_items(items, slots, [&](int64_t item, int64_t slot) {
    const int64_t si = std::upper_bound(prefix, prefix + nseg + 1, item) - prefix - 1;
    const AttentionSegment& s = segments[static_cast<size_t>(si)];
    const int64_t r = item - prefix[si], tiles = (s.q_len + z.Bq - 1) / z.Bq;
    const int64_t tile = tiles - 1 - r / dims.H, h = r % dims.H;
    const Scratch sc = carve(base + prefix_bytes + kv_bytes + slot * per_slot, z);
    const Keys keys{packed, first_tile, si, &kl};
    tg.begin();
    if (tg.avx512)
      item_avx512(out, lse, q, keys, s, dims, h, tile * z.Bq, z, sc, tg.gemm);
    else
      item_generic(out, lse, q, keys, s, dims, h, tile * z.Bq, z, sc, tg.gemm);
    tg.end();
  });
}

template void attention_forward_bf16<uint16_t>(uint16_t*, float*, const uint16_t*, const uint16_t*,
                                               const uint16_t*, std::span<const AttentionSegment>,
                                               const AttentionDims&, AttentionWorkspace&);
template void attention_forward_bf16<float>(float*, float*, const uint16_t*, const uint16_t*,
                                            const uint16_t*, std::span<const AttentionSegment>,
                                            const AttentionDims&, AttentionWorkspace&);

}  // namespace sft::ops
