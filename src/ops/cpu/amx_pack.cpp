// Tile packers (amx_pack.h). Each tile row is one 64-byte store; loads past an edge are masked.
#include "ops/cpu/amx_pack.h"

#include <immintrin.h>

#include <algorithm>

#include "ops/cpu/fma_register_block.h"

namespace sft::ops::cpu {

namespace {

// The first n (0..32) of 32 bf16 values at p; zeros beyond.
[[gnu::always_inline, SFT_AVX512_TARGET]] inline __m512i load32(const uint16_t* p, int64_t n) {
  if (n >= 32) return _mm512_loadu_si512(p);
  if (n <= 0) return _mm512_setzero_si512();
  return _mm512_maskz_loadu_epi16((__mmask32{1} << n) - 1, p);
}

// The first n (0..16) of 16 bf16 values at p; zeros beyond.
[[gnu::always_inline, SFT_AVX512_TARGET]] inline __m256i load16(const uint16_t* p, int64_t n) {
  if (n >= 16) return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  if (n <= 0) return _mm256_setzero_si256();
  return _mm256_maskz_loadu_epi16(static_cast<__mmask16>((1u << n) - 1), p);
}

}  // namespace

[[SFT_AVX512_TARGET]] void pack_a_tiles(const uint16_t* a, int64_t lda, int64_t M, int64_t K,
                                        int64_t i0, int64_t i1, int64_t KT, int64_t j0,
                                        uint16_t* a_tiles) {
  for (int64_t i = i0; i < i1; ++i)
    for (int64_t j = 0; j < tiles_of(K, kTileK); ++j) {
      uint16_t* tile = a_tiles + (i * KT + j0 + j) * kTileValues;
      for (int64_t r = 0; r < 16; ++r) {
        const int64_t m = 16 * i + r;
        const __m512i row =
            m < M ? load32(a + m * lda + j * kTileK, K - j * kTileK) : _mm512_setzero_si512();
        _mm512_storeu_si512(tile + r * 32, row);
      }
    }
}

// B[k][n] pairs (k even, k + 1) are adjacent in a column given as a row: each tile row is one
// 32-bit word from each of 16 columns, a 16 × 16 transpose of 32-bit words.
[[SFT_AVX512_TARGET]] void pack_b_tiles_from_columns(const uint16_t* cols, int64_t ld,
                                                     int64_t n_valid, int64_t K, uint16_t* out) {
  const int64_t KT = tiles_of(K, kTileK);
  for (int64_t j = 0; j < KT; ++j) {
    __m512 t[16];
    for (int64_t n = 0; n < 16; ++n)
      t[n] = _mm512_castsi512_ps(n < n_valid ? load32(cols + n * ld + j * kTileK, K - j * kTileK)
                                             : _mm512_setzero_si512());
    fma_block::transpose16(t);
    uint16_t* tile = out + j * kTileValues;
    for (int64_t r = 0; r < 16; ++r) _mm512_storeu_ps(tile + r * 32, t[r]);
  }
}

// Rows 2r and 2r + 1 of B interleave element by element into tile row r.
[[SFT_AVX512_TARGET]] void pack_b_tiles_from_rows(const uint16_t* rows, int64_t ld, int64_t r_valid,
                                                  int64_t N, int64_t KT, uint16_t* out) {
  alignas(64) static constexpr uint16_t kInterleave[32] = {
      0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
      8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i interleave = _mm512_load_si512(kInterleave);
  const int64_t NT = tiles_of(N, 16);
  for (int64_t i = 0; i < NT; ++i) {
    uint16_t* tile = out + i * KT * kTileValues;
    const int64_t n0 = 16 * i;
    for (int64_t r = 0; r < 16; ++r) {
      const __m256i even =
          2 * r < r_valid ? load16(rows + 2 * r * ld + n0, N - n0) : _mm256_setzero_si256();
      const __m256i odd = 2 * r + 1 < r_valid ? load16(rows + (2 * r + 1) * ld + n0, N - n0)
                                              : _mm256_setzero_si256();
      const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(even), odd, 1);
      _mm512_storeu_si512(tile + r * 32, _mm512_permutexvar_epi16(interleave, both));
    }
  }
}

}  // namespace sft::ops::cpu
