// The AVX-512 fp32 register block that our own products are built from, shared by the tiled
// attention's tile products (attention_microkernel.cpp) and the projection / LM-head GEMM
// (gemm_microkernel.cpp); include it only from .cpp files whose callers checked
// cpu::use_avx512() (cpu_features.h): the bodies carry function-level AVX-512 target attributes.
//
// block<MR, NV, kAColumns> computes C (MR, 16·NV) = (or += with accumulate) A (MR, k1 − k0) ·
// B (k1 − k0, 16·NV) with C held in MR × NV zmm registers while K streams through: per step of
// K, NV vector loads of B and MR broadcasts of A feed MR · NV fused multiply-adds. At 6 × 4 that
// is 24 accumulators, 4 vectors of B and one broadcast: 29 of the 32 zmm registers.
//
// Numerics, which both callers' bit-stability rests on: each C element is one chain of fused
// multiply-adds in ascending k from 0, to which C's old value (times its row's scale) is added
// once at the end with accumulate. The order depends on the element and the block's K alone.
#pragma once

#include <immintrin.h>

#include <array>
#include <cstdint>

#define SFT_AVX512_TARGET gnu::target("avx512f,avx512dq,avx512bw,avx512vl")

namespace sft::ops::cpu::fma_block {

constexpr int kRows = 6;
constexpr int kVectors = 4;
constexpr int64_t kColumns = 16 * kVectors;

// The first n lanes (1 ≤ n ≤ 16).
inline __mmask16 first_lanes(int64_t n) {
  return static_cast<__mmask16>((1u << n) - 1u);
}

// One register block's operands: rows [0, MR) of c, columns [0, 16·NV) (the last vector's lanes
// cut to `last`), steps [k0, k1) of K. a points at the block's first row, b and c at its first
// column. A's element (m, k) is at a[m·lda + k] (rows) or a[k·lda + m] (kAColumns); B's (k, n)
// at b[k·ldb + n].
struct Block {
  float* c;
  int64_t ldc;
  const float* a;
  int64_t lda;
  const float* b;
  int64_t ldb;
  int64_t k0, k1;
  bool accumulate;
  const float* c_row_scale;  // the block's rows' scales (with accumulate), or null for 1
  __mmask16 last;
};

template <int MR, int NV, bool kAColumns>
[[SFT_AVX512_TARGET]] void block(const Block& blk) {
  float* const c = blk.c;
  const float* const a = blk.a;
  const float* const b = blk.b;
  const int64_t ldc = blk.ldc, ldb = blk.ldb;
  const int64_t row = kAColumns ? 1 : blk.lda, step = kAColumns ? blk.lda : 1;
  const __mmask16 last = blk.last;
  // acc must live in registers (clang promotes it once the loops are unrolled): a change here
  // that spills it to the stack shows as a 2–3× slower BM_TileProduct (bench_attention).
  __m512 acc[MR][NV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();
  for (int64_t k = blk.k0; k < blk.k1; ++k) {
    __m512 bk[NV];
    for (int v = 0; v < NV; ++v)
      bk[v] = _mm512_maskz_loadu_ps(v == NV - 1 ? last : 0xffff, b + k * ldb + 16 * v);
    for (int i = 0; i < MR; ++i) {
      const __m512 x = _mm512_set1_ps(a[i * row + k * step]);
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(x, bk[v], acc[i][v]);
    }
  }
  // C joins once, after the block's sum: with C carried across calls (attention's key or query
  // tiles, the GEMM's slices of K), the error grows with the calls, not with every term.
  if (blk.accumulate) {
    for (int i = 0; i < MR; ++i) {
      const __m512 scale = _mm512_set1_ps(blk.c_row_scale ? blk.c_row_scale[i] : 1.0f);
      for (int v = 0; v < NV; ++v)
        acc[i][v] = _mm512_fmadd_ps(
            _mm512_maskz_loadu_ps(v == NV - 1 ? last : 0xffff, c + i * ldc + 16 * v), scale,
            acc[i][v]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v)
      _mm512_mask_storeu_ps(c + i * ldc + 16 * v, v == NV - 1 ? last : 0xffff, acc[i][v]);
}

// block<MR, NV, kAColumns> for MR in [1, 6], NV in [1, 4]: kBlocks<kAColumns>[MR − 1][NV − 1].
using BlockFn = void (*)(const Block&);
template <int MR, bool kAColumns>
inline constexpr std::array<BlockFn, kVectors> kBlockRow = {
    block<MR, 1, kAColumns>, block<MR, 2, kAColumns>, block<MR, 3, kAColumns>,
    block<MR, 4, kAColumns>};
template <bool kAColumns>
inline constexpr std::array<std::array<BlockFn, kVectors>, kRows> kBlocks = {
    kBlockRow<1, kAColumns>, kBlockRow<2, kAColumns>, kBlockRow<3, kAColumns>,
    kBlockRow<4, kAColumns>, kBlockRow<5, kAColumns>, kBlockRow<6, kAColumns>};
static_assert(kRows == 6 && kVectors == 4, "kBlocks lists every block shape");

// The block for `rows` rows (1..6) and `width` columns (1..64), with its last vector's lanes.
template <bool kAColumns>
inline BlockFn block_for(int64_t rows, int64_t width, __mmask16& last) {
  const int64_t vectors = (width + 15) / 16;
  last = first_lanes(width - 16 * (vectors - 1));
  return kBlocks<kAColumns>[static_cast<size_t>(rows - 1)][static_cast<size_t>(vectors - 1)];
}

// t[x] = column x of the 16 × 16 block whose rows were t[0..16): unpacks pair rows within each
// 128-bit lane, then 64-bit pairs, then moves whole 128-bit lanes.
[[gnu::always_inline, SFT_AVX512_TARGET]] inline void transpose16(__m512 t[16]) {
  __m512 u[16];
  for (int i = 0; i < 8; ++i) {  // lane q of u[2i]: (r2i[4q], r2i+1[4q], r2i[4q+1], r2i+1[4q+1])
    u[2 * i] = _mm512_unpacklo_ps(t[2 * i], t[2 * i + 1]);
    u[2 * i + 1] = _mm512_unpackhi_ps(t[2 * i], t[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {  // lane q of t[4i + m]: rows 4i .. 4i+3 of column 4q + m
    const __m512d e0 = _mm512_castps_pd(u[4 * i]), e1 = _mm512_castps_pd(u[4 * i + 1]);
    const __m512d e2 = _mm512_castps_pd(u[4 * i + 2]), e3 = _mm512_castps_pd(u[4 * i + 3]);
    t[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(e0, e2));
    t[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(e0, e2));
    t[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(e1, e3));
    t[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(e1, e3));
  }
  // Column 4q + m gathers lane q of t[m], t[4 + m], t[8 + m], t[12 + m].
  for (int m = 0; m < 4; ++m) {
    const __m512 lo01 = _mm512_shuffle_f32x4(t[m], t[4 + m], 0x44);
    const __m512 hi01 = _mm512_shuffle_f32x4(t[m], t[4 + m], 0xee);
    const __m512 lo23 = _mm512_shuffle_f32x4(t[8 + m], t[12 + m], 0x44);
    const __m512 hi23 = _mm512_shuffle_f32x4(t[8 + m], t[12 + m], 0xee);
    u[m] = _mm512_shuffle_f32x4(lo01, lo23, 0x88);
    u[4 + m] = _mm512_shuffle_f32x4(lo01, lo23, 0xdd);
    u[8 + m] = _mm512_shuffle_f32x4(hi01, hi23, 0x88);
    u[12 + m] = _mm512_shuffle_f32x4(hi01, hi23, 0xdd);
  }
  for (int x = 0; x < 16; ++x) t[x] = u[x];
}

}  // namespace sft::ops::cpu::fma_block
