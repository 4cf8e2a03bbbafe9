// The bf16 attention's key/value packing pass (flash_attention_bf16.h, KvLayout): one work item
// per (segment, key tile, kv head) writes that block's layouts; the blocks do not overlap, so
// the pass is deterministic for any thread count. Compiled for the baseline and for AVX-512.
#include "ops/cpu/cpu_features.h"
#include "ops/cpu/flash_attention_bf16.h"
#include "ops/cpu/flash_attention_tiles.h"

namespace sft::ops::flash_bf16 {

KvLayout KvLayout::make(int64_t Bk, int64_t D, bool backward) {
  KvLayout l;
  l.Bk = Bk;
  l.Bk32 = round_up(Bk, 32);
  l.Dk = round_up(D, 32);
  l.Dn = round_up(D, 16);
  const int64_t transposed = l.Dk * l.Bk32, pairs = l.Bk32 * l.Dn;
  l.kt = 0;
  if (backward) {
    l.vt = transposed;
    l.kb = 2 * transposed;
    l.elems = 2 * transposed + pairs;
  } else {
    l.vb = transposed;
    l.elems = transposed + pairs;
  }
  l.elems = round_up(l.elems, 32);  // every block starts on a 64-byte line
  return l;
}

int64_t count_kv_tiles(std::span<const AttentionSegment> segments, int64_t Bk,
                       int64_t* first_tile) {
  first_tile[0] = 0;
  for (size_t i = 0; i < segments.size(); ++i)
    first_tile[i + 1] = first_tile[i] + (segments[i].k_len + Bk - 1) / Bk;
  return first_tile[segments.size()];
}

namespace {

[[gnu::always_inline]] inline void pack_block(bf16* dst, const bf16* k, const bf16* v, int64_t KD,
                                              int64_t nk, int64_t D, const KvLayout& l) {
  if (l.kt >= 0) pack_transposed(dst + l.kt, k, KD, nk, D, l.Bk32, l.Dk);
  if (l.vt >= 0) pack_transposed(dst + l.vt, v, KD, nk, D, l.Bk32, l.Dk);
  if (l.kb >= 0) pack_interleaved(dst + l.kb, k, KD, nk, D, l.Bk32, l.Dn);
  if (l.vb >= 0) pack_interleaved(dst + l.vb, v, KD, nk, D, l.Bk32, l.Dn);
}

void block_generic(bf16* dst, const bf16* k, const bf16* v, int64_t KD, int64_t nk, int64_t D,
                   const KvLayout& l) {
  pack_block(dst, k, v, KD, nk, D, l);
}

[[gnu::target("avx512f,avx512dq,avx512bw,avx512vl")]] void block_avx512(bf16* dst, const bf16* k,
                                                                        const bf16* v, int64_t KD,
                                                                        int64_t nk, int64_t D,
                                                                        const KvLayout& l) {
  pack_block(dst, k, v, KD, nk, D, l);
}

}  // namespace

void pack_kv(bf16* base, const int64_t* first_tile, const bf16* k, const bf16* v,
             std::span<const AttentionSegment> segments, const AttentionDims& d, const KvLayout& l,
             int64_t slots) {
  const int64_t nseg = static_cast<int64_t>(segments.size());
  const int64_t items = first_tile[nseg] * d.Hkv, KD = d.Hkv * d.D;
  const bool avx512 = cpu::use_avx512();
  flash::run_items(items, std::min(slots, std::max<int64_t>(1, items)), [&](int64_t item, int64_t) {
    const int64_t tile_all = item / d.Hkv, g = item % d.Hkv;
    const int64_t si =
        std::upper_bound(first_tile, first_tile + nseg + 1, tile_all) - first_tile - 1;
    const AttentionSegment& s = segments[static_cast<size_t>(si)];
    const int64_t j0 = (tile_all - first_tile[si]) * l.Bk;
    const int64_t nk = std::min(l.Bk, s.k_len - j0);
    const int64_t row = (s.k_begin + j0) * KD + g * d.D;
    bf16* dst = base + item * l.elems;
    if (avx512)
      block_avx512(dst, k + row, v + row, KD, nk, d.D, l);
    else
      block_generic(dst, k + row, v + row, KD, nk, d.D, l);
  });
}

}  // namespace sft::ops::flash_bf16
