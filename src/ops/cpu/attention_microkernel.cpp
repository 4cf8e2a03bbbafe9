// The AVX-512 bodies of attention_microkernel.h. Compiled with function-level target attributes
// (libsft is built without -march); every function here runs only after cpu::use_avx512().
#include "ops/cpu/attention_microkernel.h"

#include <immintrin.h>

#include <algorithm>

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

// C's rows [0, MR) × columns [0, 16·NV) (the last vector's lanes cut to `last`) over all K.
template <int MR, int NV, ALayout L>
[[gnu::always_inline, SFT_MICROKERNEL_AVX512]] inline void block(float* c, int64_t ldc,
                                                                 const float* a, int64_t lda,
                                                                 const float* b, int64_t ldb,
                                                                 int64_t K, bool accumulate,
                                                                 __mmask16 last) {
  // Element (m, k) of A at a[m·row + k·step].
  const int64_t row = L == ALayout::kRows ? lda : 1, step = L == ALayout::kRows ? 1 : lda;
  __m512 acc[MR][NV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v)
      acc[i][v] = accumulate
                      ? _mm512_maskz_loadu_ps(v == NV - 1 ? last : 0xffff, c + i * ldc + 16 * v)
                      : _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    __m512 bk[NV];
    for (int v = 0; v < NV; ++v)
      bk[v] = _mm512_maskz_loadu_ps(v == NV - 1 ? last : 0xffff, b + k * ldb + 16 * v);
    for (int i = 0; i < MR; ++i) {
      const __m512 x = _mm512_set1_ps(a[i * row + k * step]);
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(x, bk[v], acc[i][v]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v)
      _mm512_mask_storeu_ps(c + i * ldc + 16 * v, v == NV - 1 ? last : 0xffff, acc[i][v]);
}

// All M rows of one column panel of at most 16·NV columns: whole blocks of kBlockRows, then the
// remaining rows in one narrower block.
template <int NV, ALayout L>
[[SFT_MICROKERNEL_AVX512]] void panel(float* c, int64_t ldc, const float* a, int64_t lda,
                                      const float* b, int64_t ldb, int64_t M, int64_t K,
                                      bool accumulate, __mmask16 last) {
  const int64_t a_row = L == ALayout::kRows ? lda : 1;
  int64_t m = 0;
  for (; m + kBlockRows <= M; m += kBlockRows)
    block<kBlockRows, NV, L>(c + m * ldc, ldc, a + m * a_row, lda, b, ldb, K, accumulate, last);
  float* cm = c + m * ldc;
  const float* am = a + m * a_row;
  switch (M - m) {
    case 1:
      block<1, NV, L>(cm, ldc, am, lda, b, ldb, K, accumulate, last);
      break;
    case 2:
      block<2, NV, L>(cm, ldc, am, lda, b, ldb, K, accumulate, last);
      break;
    case 3:
      block<3, NV, L>(cm, ldc, am, lda, b, ldb, K, accumulate, last);
      break;
    case 4:
      block<4, NV, L>(cm, ldc, am, lda, b, ldb, K, accumulate, last);
      break;
    case 5:
      block<5, NV, L>(cm, ldc, am, lda, b, ldb, K, accumulate, last);
      break;
    default:
      break;
  }
  static_assert(kBlockRows == 6, "the remainder cases above cover 1 .. kBlockRows - 1 rows");
}

template <ALayout L>
[[SFT_MICROKERNEL_AVX512]] void gemm_panels(float* c, int64_t ldc, const float* a, int64_t lda,
                                            const float* b, int64_t ldb, int64_t M, int64_t N,
                                            int64_t K, bool accumulate) {
  for (int64_t n = 0; n < N; n += kBlockColumns) {
    const int64_t width = std::min(kBlockColumns, N - n);
    const int64_t vectors = (width + 15) / 16;
    const __mmask16 last = first_lanes(width - 16 * (vectors - 1));
    switch (vectors) {
      case 1:
        panel<1, L>(c + n, ldc, a, lda, b + n, ldb, M, K, accumulate, last);
        break;
      case 2:
        panel<2, L>(c + n, ldc, a, lda, b + n, ldb, M, K, accumulate, last);
        break;
      case 3:
        panel<3, L>(c + n, ldc, a, lda, b + n, ldb, M, K, accumulate, last);
        break;
      default:
        panel<kBlockVectors, L>(c + n, ldc, a, lda, b + n, ldb, M, K, accumulate, last);
    }
  }
}

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
  for (int m = 0; m < 4;
       ++m) {  // column 4q + m gathers lane q of t[m], t[4 + m], t[8 + m], t[12 + m]
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

[[SFT_MICROKERNEL_AVX512]] void gemm(float* c, int64_t ldc, const float* a, int64_t lda,
                                     ALayout a_layout, const float* b, int64_t ldb, int64_t M,
                                     int64_t N, int64_t K, bool accumulate) {
  if (M <= 0 || N <= 0) return;
  if (a_layout == ALayout::kRows)
    gemm_panels<ALayout::kRows>(c, ldc, a, lda, b, ldb, M, N, K, accumulate);
  else
    gemm_panels<ALayout::kColumns>(c, ldc, a, lda, b, ldb, M, N, K, accumulate);
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
