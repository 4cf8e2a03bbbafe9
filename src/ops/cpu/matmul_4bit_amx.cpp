// The AMX path of ops::matmul_4bit (see matmul_4bit_amx.h).
#include "ops/cpu/matmul_4bit_amx.h"

#include <algorithm>
#include <vector>

#include "ops/cpu/amx.h"
#include "ops/cpu/amx_pack.h"
#include "ops/cpu/amx_panels.h"
#include "ops/cpu/dequant4.h"
#include "ops/cpu/tile_buffer.h"

namespace sft::ops::cpu {

namespace {

// W's rows for a · Wᵀ are dequantized 16 × kKChunk values at a time (8 KiB, a multiple of the
// tile's 32): at K = 6144 whole rows (192 KiB) made the dequantize-and-transpose 3.5× slower.
constexpr int64_t kKChunk = 256;

// The panel's part of op(W) into k tiles 0 .. j1 - j0 of B's tiles (amx_pack.h; KT k tiles per
// column tile), through a scratch of plain bf16 rows that stays in cache (16 of W's rows ×
// kKChunk, or 32 rows of nb columns).
void dequantize_panel(const Packed4& w, int64_t cols, int64_t K, bool trans_w, const TilePanel& p,
                      int64_t KT, CacheLineVector<uint16_t>& scratch, uint16_t* b_tiles) {
  const int64_t k_begin = p.j0 * kTileK, k_end = std::min(K, p.j1 * kTileK);
  if (trans_w) {  // B's column n is W's row n0 + n, K long and contiguous.
    scratch.resize(static_cast<size_t>(16 * kKChunk));
    for (int64_t t = 0; t < tiles_of(p.nb, 16); ++t) {
      const int64_t n_valid = std::min<int64_t>(16, p.nb - 16 * t);
      for (int64_t k0 = k_begin; k0 < k_end; k0 += kKChunk) {
        const int64_t kc = std::min(kKChunk, k_end - k0);
        for (int64_t n = 0; n < n_valid; ++n)
          dequantize4(w, (p.n0 + 16 * t + n) * cols + k0, kc, scratch.data() + n * kKChunk);
        pack_b_tiles_from_columns(scratch.data(), kKChunk, n_valid, kc,
                                  b_tiles + (t * KT + (k0 - k_begin) / kTileK) * kTileValues);
      }
    }
  } else {  // B's row k is W's row k, columns n0 ..
    scratch.resize(static_cast<size_t>(32 * p.nb));
    for (int64_t j = p.j0; j < p.j1; ++j) {
      const int64_t r_valid = std::min<int64_t>(32, K - 32 * j);
      for (int64_t r = 0; r < r_valid; ++r)
        dequantize4(w, (32 * j + r) * cols + p.n0, p.nb, scratch.data() + r * p.nb);
      pack_b_tiles_from_rows(scratch.data(), p.nb, r_valid, p.nb, KT,
                             b_tiles + (j - p.j0) * kTileValues);
    }
  }
}

// The low-rank term's columns [n0, n0 + nb) of op(b2) (r of them deep) into k tiles j0 .. of
// B's tiles: already bf16, so packed straight from b2's rows.
void pack_term_panel(const View& b2, bool trans_w, int64_t n0, int64_t nb, int64_t KT, int64_t j0,
                     uint16_t* b_tiles) {
  const uint16_t* bits = b2.as<uint16_t>();
  const int64_t ld = b2.ld();
  if (trans_w) {  // (N, r): B's column n is b2's row n0 + n
    const int64_t r = b2.cols;
    for (int64_t t = 0; t < tiles_of(nb, 16); ++t)
      pack_b_tiles_from_columns(bits + (n0 + 16 * t) * ld, ld, std::min<int64_t>(16, nb - 16 * t),
                                r, b_tiles + (t * KT + j0) * kTileValues);
  } else {  // (r, N): B's row k is b2's row k
    const int64_t r = b2.rows;
    for (int64_t j = 0; j < tiles_of(r, kTileK); ++j)
      pack_b_tiles_from_rows(bits + 32 * j * ld + n0, ld, std::min<int64_t>(32, r - 32 * j), nb, KT,
                             b_tiles + (j0 + j) * kTileValues);
  }
}

}  // namespace

bool matmul_4bit_amx_applies(const View& a) {
  return a.dtype == DType::kBF16 && use_amx();
}

void matmul_4bit_amx(View c, View a, const Weight4Bit& w, bool trans_w, bool accumulate,
                     const LowRankTerm& extra) {
  const int64_t M = a.rows, K = trans_w ? w.cols : w.rows, N = trans_w ? w.rows : w.cols;
  if (M == 0) return;
  // W's k tiles, then the term's: KT of them per row of tiles.
  const int64_t KW = tiles_of(K, kTileK), KR = extra.empty() ? 0 : tiles_of(extra.a.cols, kTileK),
                KT = KW + KR;
  const int64_t MT = tiles_of(M, 16);
  // A's tiles, read by every thread; the calling thread's buffer, reused across calls.
  // (A pointer, not the name, goes into the parallel tasks: a thread_local named there would be
  // each pool thread's own.)
  thread_local CacheLineVector<uint16_t> a_buffer;
  a_buffer.resize(static_cast<size_t>(MT * KT * kTileValues));
  uint16_t* a_tiles = a_buffer.data();
  pack_a_tiles_parallel(a.as<uint16_t>(), a.ld(), M, K, KT, 0, a_tiles);
  if (!extra.empty())
    pack_a_tiles_parallel(extra.a.as<uint16_t>(), extra.a.ld(), M, extra.a.cols, KT, KW, a_tiles);

  const Packed4 packed = packed4_of(w);
  const PanelFill fill = [&](const TilePanel& p, int64_t kt, uint16_t* b_tiles) {
    thread_local CacheLineVector<uint16_t> scratch;  // per worker thread
    dequantize_panel(packed, w.cols, K, trans_w, p, kt, scratch, b_tiles);
    if (p.last && KR > 0) pack_term_panel(extra.b, trans_w, p.n0, p.nb, kt, p.j1 - p.j0, b_tiles);
  };
  if (c.dtype == DType::kBF16)
    amx_panel_product_bf16(c.as<uint16_t>(), c.ld(), a_tiles, KT, M, N, KW, KR, fill);
  else
    amx_panel_product(c.as<float>(), c.ld(), a_tiles, KT, M, N, KW, KR, accumulate, fill);
}

}  // namespace sft::ops::cpu
