// Operands packed as AMX tiles for gemm_bf16_amx_packed (amx.h): the layouts, and the packers
// from plain bf16 rows. A tile is 512 bf16 values (1 KiB), stored contiguously, so a tile load
// reads 16 rows of 64 bytes one after the other.
//
//   A tiles (the activations, M × K): tile (i, j) = rows 16i.., k 32j.., row r at r·32;
//     at a_tiles + (i·KT + j)·512.
//   B tiles (the weight, K × N, in VNNI pairs): tile (i, j) = columns 16i.., k 32j..; its row r
//     holds, for column n, the pair (B[32j + 2r][16i + n], B[32j + 2r + 1][16i + n]) at
//     r·32 + 2n; at b_tiles + (i·KT + j)·512.
//
// Rows, columns and k beyond the matrix are zeros, so M, N and K need no particular multiple.
// The packers are bit moves only (no rounding). AVX-512 (callers hold use_amx(), which implies
// it); one thread, callers split the work.
#pragma once

#include <cstdint>

namespace sft::ops::cpu {

constexpr int64_t kTileValues = 512;  // bf16 values per tile
constexpr int64_t kTileK = 32;        // k per tile

inline int64_t tiles_of(int64_t n, int64_t per_tile) {
  return (n + per_tile - 1) / per_tile;
}

// A tiles of rows [16·i0, 16·i1) of a (M × K bf16, lda elements per row) into a_tiles, as k
// tiles j0, j0 + 1, .. of rows of KT tiles (so that a second matrix can follow as more k tiles).
void pack_a_tiles(const uint16_t* a, int64_t lda, int64_t M, int64_t K, int64_t i0, int64_t i1,
                  int64_t KT, int64_t j0, uint16_t* a_tiles);

// One column tile of B (all KT k tiles, at out) from B's columns given as rows: cols[n·ld + k]
// = B[k][n] for n < n_valid (≤ 16) and k < K; that is W's rows for a · Wᵀ.
void pack_b_tiles_from_columns(const uint16_t* cols, int64_t ld, int64_t n_valid, int64_t K,
                               uint16_t* out);

// One k tile j of every column tile of B (tile i at out + i·KT·512) from 32 of B's rows:
// rows[r·ld + n] = B[32j + r][n] for r < r_valid (≤ 32) and n < N; that is W's rows for a · W.
void pack_b_tiles_from_rows(const uint16_t* rows, int64_t ld, int64_t r_valid, int64_t N,
                            int64_t KT, uint16_t* out);

}  // namespace sft::ops::cpu
