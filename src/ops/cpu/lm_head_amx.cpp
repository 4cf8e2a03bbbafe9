// The LM head's products on AMX tiles (see lm_head_amx.h).
#include "ops/cpu/lm_head_amx.h"

#include <algorithm>

#include "ops/cpu/amx_pack.h"
#include "ops/cpu/amx_panels.h"
#include "ops/cpu/tile_buffer.h"

namespace sft::ops::cpu {

LmHeadRowTiles pack_lm_head_rows(const uint16_t* x, int64_t M, int64_t C) {
  thread_local CacheLineVector<uint16_t> buffer;
  const int64_t KT = tiles_of(C, kTileK);
  buffer.resize(static_cast<size_t>(tiles_of(M, 16) * KT * kTileValues));
  pack_a_tiles_parallel(x, C, M, C, KT, 0, buffer.data());
  return {buffer.data(), M, KT};
}

void lm_head_logits_bf16_amx(uint16_t* z, int64_t ldz, const LmHeadRowTiles& x, int64_t rows,
                             const uint16_t* w, int64_t V, int64_t C) {
  // B's column n is W's row n: C long and contiguous, packed by 16-row tiles. The logits (311 MB
  // at T 1024) are read back only by the row pass, after the whole vocabulary: streamed.
  amx_panel_product_bf16(
      z, ldz, x.tiles, x.KT, rows, V, x.KT, 0,
      [&](const TilePanel& p, int64_t kt, uint16_t* b_tiles) {
        const int64_t k0 = p.j0 * kTileK, kc = std::min(C, p.j1 * kTileK) - k0;
        for (int64_t t = 0; t < tiles_of(p.nb, 16); ++t)
          pack_b_tiles_from_columns(w + (p.n0 + 16 * t) * C + k0, C,
                                    std::min<int64_t>(16, p.nb - 16 * t), kc,
                                    b_tiles + t * kt * kTileValues);
      },
      /*streaming=*/true);
}

void lm_head_dx_amx(float* dx, const uint16_t* dz, int64_t ld_dz, int64_t M, int64_t nb,
                    const uint16_t* w_rows, int64_t C, bool accumulate) {
  // A is dZ_b (K = nb, the block's vocabulary rows); B's row k is W_b's row k.
  thread_local CacheLineVector<uint16_t> dz_tiles;
  const int64_t KT = tiles_of(nb, kTileK);
  dz_tiles.resize(static_cast<size_t>(tiles_of(M, 16) * KT * kTileValues));
  pack_a_tiles_parallel(dz, ld_dz, M, nb, KT, 0, dz_tiles.data());
  amx_panel_product(dx, C, dz_tiles.data(), KT, M, C, KT, 0, accumulate,
                    [&](const TilePanel& p, int64_t kt, uint16_t* b_tiles) {
                      for (int64_t j = p.j0; j < p.j1; ++j)
                        pack_b_tiles_from_rows(w_rows + 32 * j * C + p.n0, C,
                                               std::min<int64_t>(32, nb - 32 * j), p.nb, kt,
                                               b_tiles + (j - p.j0) * kTileValues);
                    });
}

}  // namespace sft::ops::cpu
