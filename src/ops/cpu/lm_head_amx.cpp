// The LM head's products on AMX tiles (see lm_head_amx.h).
#include "ops/cpu/lm_head_amx.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "core/half.h"
#include "ops/cpu/amx.h"
#include "ops/cpu/amx_pack.h"
#include "ops/cpu/amx_panels.h"
#include "ops/cpu/bf16_simd.h"
#include "ops/cpu/elementwise.h"
#include "ops/cpu/tile_buffer.h"
#include "ops/ops.h"

namespace sft::ops::cpu {

LmHeadRowTiles pack_lm_head_rows(const uint16_t* x, int64_t M, int64_t C) {
  thread_local CacheLineVector<uint16_t> buffer;
  const int64_t KT = tiles_of(C, kTileK);
  buffer.resize(static_cast<size_t>(tiles_of(M, 16) * KT * kTileValues));
  pack_a_tiles_parallel(x, C, M, C, KT, 0, buffer.data());
  return {buffer.data(), M, KT};
}

namespace {

// Vocabulary columns per panel: W's panel of tiles about 1 MiB (amx_panels.h's budget), so that
// it stays in a core's L2 while every strip of X runs against it.
constexpr int64_t kPanelValues = int64_t{1} << 19;
constexpr int64_t kStripRows = 32;  // gemm_bf16_amx_packed's row block

// B's column n is W's row n: C long and contiguous, packed by 16-row tiles.
void pack_w_panel(uint16_t* b_tiles, const uint16_t* w, int64_t n0, int64_t nb, int64_t C,
                  int64_t KT) {
  for (int64_t t = 0; t < tiles_of(nb, 16); ++t)
    pack_b_tiles_from_columns(w + (n0 + 16 * t) * C, C, std::min<int64_t>(16, nb - 16 * t), C,
                              b_tiles + t * KT * kTileValues);
}

// Rows of a strip's fp32 products (ld nb) rounded into z (ldz). The logits go to memory and are
// read back only by the row pass, after the whole vocabulary: whole 64-byte lines are written
// with streaming stores, which skip reading each line into the cache first (the rounding as a
// plain store cost about as much as the panel packing, for a write of the logits' 311 MB at T
// 1024). The caller fences before the logits are read. Values as cpu::round_row_to_bf16.
[[gnu::target(SFT_AVX512_TARGET)]] void round_strip(uint16_t* z, int64_t ldz, const float* strip,
                                                    int64_t rows, int64_t nb) {
  for (int64_t i = 0; i < rows; ++i) {
    uint16_t* dst = z + i * ldz;
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

void lm_head_logits_bf16_amx(uint16_t* z, int64_t ldz, const LmHeadRowTiles& x, int64_t rows,
                             const uint16_t* w, int64_t V, int64_t C) {
  if (rows == 0 || V == 0) return;
  const int64_t KT = x.KT;
  const int64_t width = std::max<int64_t>(32, kPanelValues / (KT * kTileK) / 32 * 32);
  const int64_t panels = (V + width - 1) / width;
  parallel_for_rows(panels, 1, [&](int64_t b, int64_t e) {
    // Per thread, reused across calls: no allocation per step once sized.
    thread_local CacheLineVector<uint16_t> b_tiles;
    thread_local CacheLineVector<float> strip;
    b_tiles.resize(static_cast<size_t>(tiles_of(width, 16) * KT * kTileValues));
    strip.resize(static_cast<size_t>(kStripRows * width));
    amx_begin();
    for (int64_t q = b; q < e; ++q) {
      const int64_t n0 = q * width, nb = std::min(width, V - n0);
      pack_w_panel(b_tiles.data(), w, n0, nb, C, KT);
      for (int64_t r0 = 0; r0 < rows; r0 += kStripRows) {
        const int64_t mr = std::min(kStripRows, rows - r0);
        gemm_bf16_amx_packed(strip.data(), nb, x.tiles + (r0 / 16) * KT * kTileValues, KT,
                             b_tiles.data(), mr, nb, KT, false);
        round_strip(z + r0 * ldz + n0, ldz, strip.data(), mr, nb);
      }
    }
    _mm_sfence();  // the streaming stores reach memory before the row pass reads them
    amx_end();
  });
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
