// The AVX-512 bodies of attention_microkernel.h. Compiled with function-level target attributes
// (libsft is built without -march); every function here runs only after cpu::use_avx512().
#include "ops/cpu/attention_microkernel.h"

#include <immintrin.h>

#include <algorithm>
#include <array>

#define SFT_MICROKERNEL_AVX512 gnu::target("avx512f,avx512dq,avx512bw,avx512vl")

namespace sft::ops::cpu::attention_microkernel {

namespace {

// The register block: 6 rows × 4 vectors of 16 columns = 24 accumulators, plus 4 vectors of B
// and one broadcast of A: 29 of the 32 zmm registers.
constexpr int kBlockRows = 6;
constexpr int kBlockVectors = 4;
constexpr int64_t kBlockColumns = 16 * kBlockVectors;

// The first n lanes (1 ≤ n ≤ 16).
inline __mmask16 first_lanes(int64_t n) {
  return static_cast<__mmask16>((1u << n) - 1u);
}

// One register block's share of a Product: rows [0, MR) of c, columns [0, 16·NV) (the last
// vector's lanes cut to `last`), steps [k0, k1) of K. a points at the block's first row, b and c
// at its first column.
struct Block {
  float* c;
  int64_t ldc;
  const float* a;
  int64_t lda;
  const float* b;
  int64_t ldb;
  int64_t k0, k1;
  bool accumulate;
  const float* c_row_scale;  // the block's rows' scales, or null
  __mmask16 last;
};

template <int MR, int NV, ALayout L>
[[SFT_MICROKERNEL_AVX512]] void block(const Block& blk) {
  float* const c = blk.c;
  const float* const a = blk.a;
  const float* const b = blk.b;
  const int64_t ldc = blk.ldc, ldb = blk.ldb;
  // Element (m, k) of A at a[m·row + k·step].
  const int64_t row = L == ALayout::kRows ? blk.lda : 1, step = L == ALayout::kRows ? 1 : blk.lda;
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
  // C joins once, after the call's sum: with C carried across a tile's calls (the key or query
  // tiles), the error grows with the tiles, not with every term of the whole sum.
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

// block<MR, NV, L> for MR in [1, 6], NV in [1, 4]: kBlocks<L>[MR − 1][NV − 1].
using BlockFn = void (*)(const Block&);
template <int MR, ALayout L>
constexpr std::array<BlockFn, kBlockVectors> kBlockRow = {block<MR, 1, L>, block<MR, 2, L>,
                                                          block<MR, 3, L>, block<MR, 4, L>};
template <ALayout L>
constexpr std::array<std::array<BlockFn, kBlockVectors>, kBlockRows> kBlocks = {
    kBlockRow<1, L>, kBlockRow<2, L>, kBlockRow<3, L>,
    kBlockRow<4, L>, kBlockRow<5, L>, kBlockRow<6, L>};
static_assert(kBlockRows == 6 && kBlockVectors == 4, "kBlocks lists every block shape");

// t[x] = column x of the 16 × 16 block whose rows were t[0..16): unpacks pair rows within each
// 128-bit lane, then 64-bit pairs, then moves whole 128-bit lanes.
[[gnu::always_inline, SFT_MICROKERNEL_AVX512]] inline void transpose16(__m512 t[16]) {
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

}  // namespace

[[SFT_MICROKERNEL_AVX512]] void gemm(const Product& p) {
  if (p.M <= 0 || p.N <= 0) return;
  const auto& blocks =
      p.a_layout == ALayout::kRows ? kBlocks<ALayout::kRows> : kBlocks<ALayout::kColumns>;
  const int64_t a_row = p.a_layout == ALayout::kRows ? p.lda : 1;
  // Column panels outside, row blocks inside: a panel of B stays in L1 while A streams past.
  for (int64_t n0 = 0; n0 < p.N; n0 += kBlockColumns)
    for (int64_t m0 = 0; m0 < p.M; m0 += kBlockRows) {
      const int64_t rows = std::min<int64_t>(kBlockRows, p.M - m0), last_row = m0 + rows - 1;
      int64_t n1 = std::min(p.N, n0 + kBlockColumns), k0 = 0, k1 = p.K;
      switch (p.skip) {
        case Skip::kNothing:
          break;
        case Skip::kColumnsPastDiagonal:
          n1 = std::min(n1, last_row + p.diagonal);
          break;
        case Skip::kDepthPastDiagonal:
          k1 = std::clamp<int64_t>(last_row + p.diagonal, 0, p.K);
          break;
        case Skip::kDepthBeforeDiagonal:
          k0 = std::clamp<int64_t>(m0 - p.diagonal + 1, 0, p.K);
          break;
      }
      if (n1 <= n0) continue;  // no column of this block is needed (nor written)
      const int64_t width = n1 - n0, vectors = (width + 15) / 16;
      // With K = 0 A and B may be null (nothing is read): no offset is applied to a null pointer.
      const Block blk{p.c + m0 * p.ldc + n0,
                      p.ldc,
                      p.a ? p.a + m0 * a_row : nullptr,
                      p.lda,
                      p.b ? p.b + n0 : nullptr,
                      p.ldb,
                      k0,
                      k1,
                      p.accumulate,
                      p.c_row_scale ? p.c_row_scale + m0 : nullptr,
                      first_lanes(width - 16 * (vectors - 1))};
      blocks[static_cast<size_t>(rows - 1)][static_cast<size_t>(vectors - 1)](blk);
    }
}

[[SFT_MICROKERNEL_AVX512]] void transpose(float* dst, int64_t ld_dst, const float* src,
                                          int64_t ld_src, int64_t rows, int64_t cols) {
  for (int64_t r0 = 0; r0 < rows; r0 += 16) {
    const int64_t nr = std::min<int64_t>(16, rows - r0);
    for (int64_t x0 = 0; x0 < cols; x0 += 16) {
      const int64_t nx = std::min<int64_t>(16, cols - x0);
      const __mmask16 in = first_lanes(nx), out = first_lanes(nr);
      __m512 t[16];
      for (int i = 0; i < 16; ++i)
        t[i] =
            i < nr ? _mm512_maskz_loadu_ps(in, src + (r0 + i) * ld_src + x0) : _mm512_setzero_ps();
      transpose16(t);
      for (int x = 0; x < 16; ++x)
        if (x < nx) _mm512_mask_storeu_ps(dst + (x0 + x) * ld_dst + r0, out, t[x]);
    }
  }
}

}  // namespace sft::ops::cpu::attention_microkernel
