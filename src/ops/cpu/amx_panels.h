// A · B on AMX tiles where A is packed once (amx_pack.h) and B is produced by the caller a panel
// at a time, straight into tiles: dequantized from 4 bits (matmul_4bit_amx.cpp) or packed from
// plain bf16 rows (lm_head_amx.cpp). The driver owns the blocking, the threads and the bits.
//
// Blocking: a panel is output columns × a range of at most kPanelK of K, ~kPanelValues of B
// (1 MiB of tiles: 256 columns at 2048 k), which with a 32-row strip of A over the same k
// (128 KiB) stays within a core's 2 MiB L2. Each thread takes a contiguous run of column
// panels and, per panel and ascending k range, has the caller fill B's tiles, then runs every
// row of A against them, summing into C (gemm_bf16_amx_packed). K beyond kPanelK goes in more
// ranges: at K = 6144 a panel keeps 256 columns (not 64 over the whole of K, which read all of
// A from L3 four times as often; one thread, 1024 × 6144 × 2048: ~1.1 → ~1.5 TFLOP/s).
//
// Bits: each output element is one ascending sum over its k tiles (C's fp32 tiles round-trip
// exactly between ranges), so they do not depend on the thread count or the panel width.
// Callers hold use_amx(); A's tiles are read by every thread.
#pragma once

#include <cstdint>
#include <functional>

namespace sft::ops::cpu {

// Output columns [n0, n0 + nb) and K's k tiles [j0, j1) (in tiles of 32); the last range also
// carries the extra tiles (below) after K's.
struct TilePanel {
  int64_t n0, nb, j0, j1;
  bool last;
};

// Fills k tiles 0 .. kt - 1 of every column tile of the panel: column tile t's k tile j at
// b_tiles + (t·kt + j)·512 (amx_pack.h's B layout with KT = kt). Called on the worker threads.
using PanelFill = std::function<void(const TilePanel& panel, int64_t kt, uint16_t* b_tiles)>;

// c (M × N fp32, ldc floats per row) =, or += with accumulate, A · B. A's tiles (amx_pack.h):
// a_row_tiles per row of 16 rows, K's KW k tiles first, then extra_kt tiles of a term summed
// after all of K's (LowRankTerm), which fill supplies in the last range.
void amx_panel_product(float* c, int64_t ldc, const uint16_t* a_tiles, int64_t a_row_tiles,
                       int64_t M, int64_t N, int64_t KW, int64_t extra_kt, bool accumulate,
                       const PanelFill& fill);

// The same product rounded once into a bf16 c (M × N, ldc elements per row): each element's
// fp32 sum over all of K and the extra tiles, then f32_to_bf16 — the bits amx_panel_product's
// fp32 C has when cast afterwards. The last k range runs 32 rows of A at a time, each strip's
// sums rounded from L1; earlier ranges (K beyond kPanelK) keep their sums in an fp32 buffer of
// the panel (M × its columns, per thread). No accumulate: a bf16 C would be rounded twice.
// `streaming`: whole 64-byte lines of C are written with streaming stores, which skip reading
// each line into the cache first — for an output far larger than the caches that is read only
// much later (the LM head's logits); fenced before the call returns. The same values.
void amx_panel_product_bf16(uint16_t* c, int64_t ldc, const uint16_t* a_tiles, int64_t a_row_tiles,
                            int64_t M, int64_t N, int64_t KW, int64_t extra_kt,
                            const PanelFill& fill, bool streaming = false);

// A's tiles of a (M × K bf16, lda) into a_tiles with KT tiles per row, from k tile j0 on, on
// the pool's threads (pack_a_tiles split by rows of tiles).
void pack_a_tiles_parallel(const uint16_t* a, int64_t lda, int64_t M, int64_t K, int64_t KT,
                           int64_t j0, uint16_t* a_tiles);

}  // namespace sft::ops::cpu
