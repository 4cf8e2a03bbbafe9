// The AMX path of ops::matmul_4bit (see matmul_4bit_amx.h).
#include "ops/cpu/matmul_4bit_amx.h"

#include <algorithm>
#include <vector>

#include "core/thread_pool.h"
#include "ops/cpu/amx.h"
#include "ops/cpu/amx_pack.h"
#include "ops/cpu/dequant4.h"
#include "ops/cpu/tile_buffer.h"

namespace sft::ops::cpu {

namespace {

// A panel is output columns × a range of k: kPanelK of K (64 k tiles) at most, and ~kPanelValues
// of W, 1 MiB of bf16 tiles (256 columns at 2048 k), which with a 32-row strip of A over the
// same k (128 KiB) stays within a core's 2 MiB L2. K beyond kPanelK goes in more panels summed
// into C: a strip of A then covers the panel's k range only, so at K = 6144 the panel keeps 256
// columns (not 64 over the whole of K, which read all of A from L3 four times as often; one
// thread, 1024 × 6144 × 2048: ~1.1 → ~1.5 TFLOP/s).
constexpr int64_t kPanelValues = int64_t{1} << 19;
constexpr int64_t kPanelK = 2048;
// W's rows for a · Wᵀ are dequantized 16 × kKChunk values at a time (8 KiB, a multiple of the
// tile's 32): at K = 6144 whole rows (192 KiB) made the dequantize-and-transpose 3.5× slower.
constexpr int64_t kKChunk = 256;

int64_t panel_columns(int64_t N, int64_t K, int64_t threads) {
  const int64_t fit = std::max<int64_t>(32, kPanelValues / std::min(K, kPanelK) / 32 * 32);
  // Every thread gets a panel where N allows it.
  const int64_t share = (N + threads - 1) / threads;
  return std::max<int64_t>(32, std::min(fit, (share + 31) / 32 * 32));
}

// Output columns [n0, n0 + nb) and W's k tiles [j0, j1).
struct Panel {
  int64_t n0, nb, j0, j1;
};

// The panel's part of op(W) into k tiles 0 .. j1 - j0 of B's tiles (amx_pack.h; KT k tiles per
// column tile), through a scratch of plain bf16 rows that stays in cache (16 of W's rows ×
// kKChunk, or 32 rows of nb columns).
void dequantize_panel(const Packed4& w, int64_t cols, int64_t K, bool trans_w, const Panel& p,
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
  parallel_for_rows(MT, 4, [&](int64_t b, int64_t e) {
    pack_a_tiles(a.as<uint16_t>(), a.ld(), M, K, b, e, KT, 0, a_tiles);
    if (!extra.empty())
      pack_a_tiles(extra.a.as<uint16_t>(), extra.a.ld(), M, extra.a.cols, b, e, KT, KW, a_tiles);
  });

  const Packed4 packed = packed4_of(w);
  const int64_t width = panel_columns(N, K, static_cast<int64_t>(default_thread_pool().size()));
  const int64_t column_panels = (N + width - 1) / width, k_tiles = kPanelK / kTileK;
  float* out = c.as<float>();
  const int64_t ldc = c.ld();
  parallel_for_rows(column_panels, 1, [&](int64_t b, int64_t e) {
    // Per thread, reused across calls: no allocation per step once sized.
    thread_local CacheLineVector<uint16_t> b_tiles, scratch;
    b_tiles.resize(
        static_cast<size_t>(tiles_of(width, 16) * (std::min(KW, k_tiles) + KR) * kTileValues));
    amx_begin();
    for (int64_t q = b; q < e; ++q)
      // Ascending k ranges, each summed into C: one ascending sum per output element.
      for (int64_t j0 = 0; j0 < KW; j0 += k_tiles) {
        const Panel p{q * width, std::min(width, N - q * width), j0, std::min(KW, j0 + k_tiles)};
        const bool last = p.j1 == KW;
        const int64_t panel_kt = p.j1 - p.j0 + (last ? KR : 0);
        dequantize_panel(packed, w.cols, K, trans_w, p, panel_kt, scratch, b_tiles.data());
        if (last && KR > 0)
          pack_term_panel(extra.b, trans_w, p.n0, p.nb, panel_kt, p.j1 - p.j0, b_tiles.data());
        gemm_bf16_amx_packed(out + p.n0, ldc, a_tiles + p.j0 * kTileValues, KT, b_tiles.data(), M,
                             p.nb, panel_kt, accumulate || j0 > 0);
      }
    amx_end();
  });
}

}  // namespace sft::ops::cpu
