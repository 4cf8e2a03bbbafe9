// The panel driver of AMX tile products (see amx_panels.h).
#include "ops/cpu/amx_panels.h"

#include <algorithm>

#include "core/thread_pool.h"
#include "ops/cpu/amx.h"
#include "ops/cpu/amx_pack.h"
#include "ops/cpu/tile_buffer.h"
#include "ops/ops.h"

namespace sft::ops::cpu {

namespace {

constexpr int64_t kPanelValues = int64_t{1} << 19;
constexpr int64_t kPanelK = 2048;

int64_t panel_columns(int64_t N, int64_t K, int64_t threads) {
  const int64_t fit = std::max<int64_t>(32, kPanelValues / std::min(K, kPanelK) / 32 * 32);
  // Every thread gets a panel where N allows it.
  const int64_t share = (N + threads - 1) / threads;
  return std::max<int64_t>(32, std::min(fit, (share + 31) / 32 * 32));
}

}  // namespace

void amx_panel_product(float* c, int64_t ldc, const uint16_t* a_tiles, int64_t a_row_tiles,
                       int64_t M, int64_t N, int64_t KW, int64_t extra_kt, bool accumulate,
                       const PanelFill& fill) {
  if (M == 0 || N == 0) return;
  const int64_t range_tiles = kPanelK / kTileK;
  const int64_t width = panel_columns(N, std::max<int64_t>(KW, 1) * kTileK,
                                      static_cast<int64_t>(default_thread_pool().size()));
  const int64_t column_panels = (N + width - 1) / width;
  parallel_for_rows(column_panels, 1, [&](int64_t b, int64_t e) {
    // Per thread, reused across calls: no allocation per step once sized.
    thread_local CacheLineVector<uint16_t> b_tiles;
    b_tiles.resize(static_cast<size_t>(tiles_of(width, 16) *
                                       (std::min(KW, range_tiles) + extra_kt) * kTileValues));
    amx_begin();
    for (int64_t q = b; q < e; ++q)
      // Ascending k ranges, each summed into C: one ascending sum per output element. K of
      // zero tiles (only the extra term) is one range.
      for (int64_t j0 = 0; j0 == 0 || j0 < KW; j0 += range_tiles) {
        const int64_t j1 = std::min(KW, j0 + range_tiles);
        const TilePanel p{q * width, std::min(width, N - q * width), j0, j1, j1 == KW};
        const int64_t kt = j1 - j0 + (p.last ? extra_kt : 0);
        fill(p, kt, b_tiles.data());
        gemm_bf16_amx_packed(c + p.n0, ldc, a_tiles + j0 * kTileValues, a_row_tiles, b_tiles.data(),
                             M, p.nb, kt, accumulate || j0 > 0);
      }
    amx_end();
  });
}

void pack_a_tiles_parallel(const uint16_t* a, int64_t lda, int64_t M, int64_t K, int64_t KT,
                           int64_t j0, uint16_t* a_tiles) {
  parallel_for_rows(tiles_of(M, 16), 4, [&](int64_t b, int64_t e) {
    pack_a_tiles(a, lda, M, K, b, e, KT, j0, a_tiles);
  });
}

}  // namespace sft::ops::cpu
