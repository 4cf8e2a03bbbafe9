// The panel driver of AMX tile products (see amx_panels.h).
#include "ops/cpu/amx_panels.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "core/half.h"
#include "core/thread_pool.h"
#include "ops/cpu/amx.h"
#include "ops/cpu/amx_pack.h"
#include "ops/cpu/bf16_simd.h"
#include "ops/cpu/elementwise.h"
#include "ops/cpu/tile_buffer.h"
#include "ops/ops.h"

namespace sft::ops::cpu {

namespace {

constexpr int64_t kPanelValues = int64_t{1} << 19;
constexpr int64_t kPanelK = 2048;
constexpr int64_t kRangeTiles = kPanelK / kTileK;
// Rows of A per call of the tile product when C is rounded to bf16: the product's own block of
// two row tiles, so a strip's fp32 sums (32 KiB at 256 columns) are rounded from L1.
constexpr int64_t kStripRows = 32;

int64_t panel_columns(int64_t N, int64_t K, int64_t threads) {
  const int64_t fit = std::max<int64_t>(32, kPanelValues / std::min(K, kPanelK) / 32 * 32);
  // Every thread gets a panel where N allows it.
  const int64_t share = (N + threads - 1) / threads;
  return std::max<int64_t>(32, std::min(fit, (share + 31) / 32 * 32));
}

// Every thread's run of column panels, each k range filled (fill) and then handed to `product`
// with its k tile count and B's tiles, in ascending k order per panel.
template <typename Product>
void for_each_panel(int64_t M, int64_t N, int64_t KW, int64_t extra_kt, const PanelFill& fill,
                    const Product& product) {
  if (M == 0 || N == 0) return;
  const int64_t width = panel_columns(N, std::max<int64_t>(KW, 1) * kTileK,
                                      static_cast<int64_t>(default_thread_pool().size()));
  const int64_t column_panels = (N + width - 1) / width;
  parallel_for_rows(column_panels, 1, [&](int64_t b, int64_t e) {
    // Per thread, reused across calls: no allocation per step once sized.
    thread_local CacheLineVector<uint16_t> b_tiles;
    b_tiles.resize(static_cast<size_t>(tiles_of(width, 16) *
                                       (std::min(KW, kRangeTiles) + extra_kt) * kTileValues));
    amx_begin();
    for (int64_t q = b; q < e; ++q)
      // Ascending k ranges, each summed into C: one ascending sum per output element. K of
      // zero tiles (only the extra term) is one range.
      for (int64_t j0 = 0; j0 == 0 || j0 < KW; j0 += kRangeTiles) {
        const int64_t j1 = std::min(KW, j0 + kRangeTiles);
        const TilePanel p{q * width, std::min(width, N - q * width), j0, j1, j1 == KW};
        const int64_t kt = j1 - j0 + (p.last ? extra_kt : 0);
        fill(p, kt, b_tiles.data());
        product(p, kt, b_tiles.data(), width);
      }
    amx_end();
  });
}

// Rows of a strip's fp32 sums (ld nb) rounded into c (ldc), as cpu::round_row_to_bf16; each
// row's whole 64-byte lines of c with streaming stores.
[[gnu::target(SFT_AVX512_TARGET)]] void round_strip_streaming(uint16_t* c, int64_t ldc,
                                                              const float* strip, int64_t rows,
                                                              int64_t nb) {
  for (int64_t i = 0; i < rows; ++i) {
    uint16_t* dst = c + i * ldc;
    const float* src = strip + i * nb;
    int64_t j = 0;
    for (; j < nb && reinterpret_cast<uintptr_t>(dst + j) % 64 != 0; ++j)
      dst[j] = f32_to_bf16(src[j]);
    for (; j + 32 <= nb; j += 32) {
      const __m512i both =
          _mm512_inserti64x4(_mm512_castsi256_si512(bf16_round16(_mm512_loadu_ps(src + j))),
                             bf16_round16(_mm512_loadu_ps(src + j + 16)), 1);
      _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + j), both);
    }
    round_row_to_bf16(dst + j, src + j, nb - j);
  }
}

}  // namespace

void amx_panel_product(float* c, int64_t ldc, const uint16_t* a_tiles, int64_t a_row_tiles,
                       int64_t M, int64_t N, int64_t KW, int64_t extra_kt, bool accumulate,
                       const PanelFill& fill) {
  for_each_panel(M, N, KW, extra_kt, fill,
                 [&](const TilePanel& p, int64_t kt, const uint16_t* b_tiles, int64_t) {
                   gemm_bf16_amx_packed(c + p.n0, ldc, a_tiles + p.j0 * kTileValues, a_row_tiles,
                                        b_tiles, M, p.nb, kt, accumulate || p.j0 > 0);
                 });
}

void amx_panel_product_bf16(uint16_t* c, int64_t ldc, const uint16_t* a_tiles, int64_t a_row_tiles,
                            int64_t M, int64_t N, int64_t KW, int64_t extra_kt,
                            const PanelFill& fill, bool streaming) {
  const bool one_range = KW <= kRangeTiles;
  for_each_panel(M, N, KW, extra_kt, fill,
                 [&](const TilePanel& p, int64_t kt, const uint16_t* b_tiles, int64_t width) {
                   // Per worker thread (this body runs there), reused across calls.
                   thread_local CacheLineVector<float> sums;   // the panel's partial sums
                   thread_local CacheLineVector<float> strip;  // one range: a strip's sums
                   const uint16_t* a = a_tiles + p.j0 * kTileValues;
                   if (p.j0 == 0 && !one_range) sums.resize(static_cast<size_t>(M * width));
                   if (!p.last) {  // an earlier range: its sums stay fp32, in the panel's buffer
                     gemm_bf16_amx_packed(sums.data(), p.nb, a, a_row_tiles, b_tiles, M, p.nb, kt,
                                          p.j0 > 0);
                     return;
                   }
                   if (one_range) strip.resize(static_cast<size_t>(kStripRows * width));
                   // The last range strip by strip, each rounded while it is still in cache.
                   for (int64_t m0 = 0; m0 < M; m0 += kStripRows) {
                     const int64_t rows = std::min(kStripRows, M - m0);
                     float* acc = one_range ? strip.data() : sums.data() + m0 * p.nb;
                     gemm_bf16_amx_packed(acc, p.nb, a + m0 / 16 * a_row_tiles * kTileValues,
                                          a_row_tiles, b_tiles, rows, p.nb, kt, p.j0 > 0);
                     if (streaming)
                       round_strip_streaming(c + m0 * ldc + p.n0, ldc, acc, rows, p.nb);
                     else
                       for (int64_t r = 0; r < rows; ++r)
                         round_row_to_bf16(c + (m0 + r) * ldc + p.n0, acc + r * p.nb, p.nb);
                   }
                   if (streaming) _mm_sfence();  // the lines reach memory before C is read
                 });
}

void pack_a_tiles_parallel(const uint16_t* a, int64_t lda, int64_t M, int64_t K, int64_t KT,
                           int64_t j0, uint16_t* a_tiles) {
  parallel_for_rows(tiles_of(M, 16), 4, [&](int64_t b, int64_t e) {
    pack_a_tiles(a, lda, M, K, b, e, KT, j0, a_tiles);
  });
}

}  // namespace sft::ops::cpu
