// RMSNorm forward/backward. See rmsnorm.h for the contract.
//
// The f32 forward (f32 or bf16 out) and backward have AVX-512 paths chosen at run time
// (cpu_features.h) that compute exactly what the scalar loops do: a row's Σ x² (backward: its
// Σ w·dy·x) stays a sequential sum in index order (the latency chain that dominates), but 16
// rows run at once, one per lane, fed by 16 × 16 tiles transposed in registers; the
// elementwise loops and dw's per-feature row sums go 16 features at a time. No multiply-add
// contraction anywhere (the pragma), so the AVX-512 and baseline builds agree bit for bit.
#include "ops/cpu/rmsnorm.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/half.h"
#include "ops/cpu/bf16_simd.h"
#include "ops/cpu/cpu_features.h"
#include "ops/ops.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace sft::ops::cpu {

namespace {

template <typename T>
T inverse_rms(T ss, int64_t C, double eps) {
  return T(1) / std::sqrt(ss / static_cast<T>(C) + static_cast<T>(eps));
}

// out's element j of a row: w_j · (x_j · r), stored as T or rounded to bf16.
template <typename T, typename Out>
void store_normed(Out* o, const T* xi, const T* w, T r, int64_t C) {
  for (int64_t j = 0; j < C; ++j) {
    const T y = w[j] * (xi[j] * r);
    if constexpr (std::is_same_v<Out, uint16_t>)
      o[j] = f32_to_bf16(y);
    else
      o[j] = y;
  }
}

template <typename T, typename Out>
void forward_rows_generic(Out* out, T* rstd, const T* x, const T* w, int64_t b, int64_t e,
                          int64_t C, double eps) {
  for (int64_t i = b; i < e; ++i) {
    const T* xi = x + i * C;
    T ss = 0;
    for (int64_t j = 0; j < C; ++j) ss += xi[j] * xi[j];
    const T r = inverse_rms(ss, C, eps);
    rstd[i] = r;
    store_normed(out + i * C, xi, w, r, C);
  }
}

// t[c] lane l = p[l · ld + c] for l, c < 16: a 16 × 16 tile of 16 rows, transposed in
// registers (unpack within 128-bit lanes, then a 4 × 4 transpose of the lanes), so that one
// vector add advances 16 rows' sums by one feature each.
[[gnu::always_inline, gnu::target(SFT_AVX512_TARGET)]] inline void load_transposed(__m512 t[16],
                                                                                   const float* p,
                                                                                   int64_t ld) {
  __m512 a[16], u[16];
  for (int l = 0; l < 16; ++l) a[l] = _mm512_loadu_ps(p + l * ld);
  for (int k = 0; k < 8; ++k) {  // lane q: (r2k[4q], r2k+1[4q], r2k[4q+1], r2k+1[4q+1]) / +2
    u[2 * k] = _mm512_unpacklo_ps(a[2 * k], a[2 * k + 1]);
    u[2 * k + 1] = _mm512_unpackhi_ps(a[2 * k], a[2 * k + 1]);
  }
  for (int k = 0; k < 4; ++k) {  // a[4k + m] lane q: rows 4k..4k+3 of feature 4q + m
    const __m512d t0 = _mm512_castps_pd(u[4 * k]), t1 = _mm512_castps_pd(u[4 * k + 1]);
    const __m512d t2 = _mm512_castps_pd(u[4 * k + 2]), t3 = _mm512_castps_pd(u[4 * k + 3]);
    a[4 * k] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
    a[4 * k + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
    a[4 * k + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
    a[4 * k + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
  }
  for (int m = 0; m < 4; ++m) {  // feature 4q + m, lane p: a[4p + m] lane q
    const __m512 s0 = _mm512_shuffle_f32x4(a[m], a[4 + m], 0x44);
    const __m512 s1 = _mm512_shuffle_f32x4(a[m], a[4 + m], 0xee);
    const __m512 s2 = _mm512_shuffle_f32x4(a[8 + m], a[12 + m], 0x44);
    const __m512 s3 = _mm512_shuffle_f32x4(a[8 + m], a[12 + m], 0xee);
    t[m] = _mm512_shuffle_f32x4(s0, s2, 0x88);
    t[4 + m] = _mm512_shuffle_f32x4(s0, s2, 0xdd);
    t[8 + m] = _mm512_shuffle_f32x4(s1, s3, 0x88);
    t[12 + m] = _mm512_shuffle_f32x4(s1, s3, 0xdd);
  }
}

template <typename Out>
[[gnu::target(SFT_AVX512_TARGET)]] void forward_rows_avx512(Out* out, float* rstd, const float* x,
                                                            const float* w, int64_t b, int64_t e,
                                                            int64_t C, double eps) {
  int64_t i = b;
  // Lane l sums row i + l in index order: the scalar loop's sum, 16 rows per chain.
  alignas(64) float sums[16];
  for (; i + 16 <= e; i += 16) {
    const float* x0 = x + i * C;
    __m512 ss = _mm512_setzero_ps();
    int64_t j0 = 0;
    for (; j0 + 16 <= C; j0 += 16) {
      __m512 t[16];
      load_transposed(t, x0 + j0, C);
      for (int c = 0; c < 16; ++c) ss = _mm512_add_ps(ss, _mm512_mul_ps(t[c], t[c]));
    }
    _mm512_store_ps(sums, ss);
    for (int l = 0; l < 16; ++l) {
      const float* xl = x0 + l * C;
      for (int64_t j = j0; j < C; ++j) sums[l] += xl[j] * xl[j];
      rstd[i + l] = inverse_rms(sums[l], C, eps);
    }
  }
  for (int64_t k = i; k < e; ++k) {
    const float* xi = x + k * C;
    float ss = 0;
    for (int64_t j = 0; j < C; ++j) ss += xi[j] * xi[j];
    rstd[k] = inverse_rms(ss, C, eps);
  }
  for (int64_t k = b; k < e; ++k) {
    const float* xi = x + k * C;
    Out* oi = out + k * C;
    const __m512 r = _mm512_set1_ps(rstd[k]);
    int64_t j = 0;
    for (; j + 16 <= C; j += 16) {
      const __m512 y =
          _mm512_mul_ps(_mm512_loadu_ps(w + j), _mm512_mul_ps(_mm512_loadu_ps(xi + j), r));
      if constexpr (std::is_same_v<Out, uint16_t>)
        bf16_store16(oi + j, y);
      else
        _mm512_storeu_ps(oi + j, y);
    }
    store_normed(oi + j, xi + j, w + j, rstd[k], C - j);
  }
}

// dx of row i from its dot: r (w_j g_ij − x_ij c) with c = dot r² / C.
[[gnu::target(SFT_AVX512_TARGET)]] void backward_dx_row_avx512(float* dx, const float* dout,
                                                               const float* x, const float* rstd,
                                                               const float* w, int64_t i, int64_t C,
                                                               float dot) {
  const float r = rstd[i];
  const float c = dot * r * r / static_cast<float>(C);
  const float* xi = x + i * C;
  const float* gi = dout + i * C;
  float* dxi = dx + i * C;
  const __m512 rv = _mm512_set1_ps(r), cv = _mm512_set1_ps(c);
  int64_t j = 0;
  for (; j + 16 <= C; j += 16) {
    const __m512 wg = _mm512_mul_ps(_mm512_loadu_ps(w + j), _mm512_loadu_ps(gi + j));
    const __m512 xc = _mm512_mul_ps(_mm512_loadu_ps(xi + j), cv);
    _mm512_storeu_ps(dxi + j, _mm512_mul_ps(rv, _mm512_sub_ps(wg, xc)));
  }
  for (; j < C; ++j) dxi[j] = r * (w[j] * gi[j] - xi[j] * c);
}

// Backward's dx for rows [b, e): dot_i = Σ_j (w_j g_ij) x_ij in index order, 16 rows per chain
// (as the forward's Σ x²), then dx_ij = r (w_j g_ij − x_ij c_i) 16 features at a time.
[[gnu::target(SFT_AVX512_TARGET)]] void backward_dx_avx512(float* dx, const float* dout,
                                                           const float* x, const float* rstd,
                                                           const float* w, int64_t b, int64_t e,
                                                           int64_t C) {
  alignas(64) float dots[16];
  int64_t i = b;
  for (; i + 16 <= e; i += 16) {
    const float* x0 = x + i * C;
    const float* g0 = dout + i * C;
    __m512 dot = _mm512_setzero_ps();
    int64_t j0 = 0;
    for (; j0 + 16 <= C; j0 += 16) {
      __m512 tg[16], tx[16];
      load_transposed(tg, g0 + j0, C);
      load_transposed(tx, x0 + j0, C);
      for (int c = 0; c < 16; ++c) {
        const __m512 wg = _mm512_mul_ps(_mm512_set1_ps(w[j0 + c]), tg[c]);
        dot = _mm512_add_ps(dot, _mm512_mul_ps(wg, tx[c]));
      }
    }
    _mm512_store_ps(dots, dot);
    for (int l = 0; l < 16; ++l) {
      const float* gl = g0 + l * C;
      const float* xl = x0 + l * C;
      for (int64_t j = j0; j < C; ++j) dots[l] += w[j] * gl[j] * xl[j];
      backward_dx_row_avx512(dx, dout, x, rstd, w, i + l, C, dots[l]);
    }
  }
  for (; i < e; ++i) {
    const float* xi = x + i * C;
    const float* gi = dout + i * C;
    float dot = 0;
    for (int64_t j = 0; j < C; ++j) dot += w[j] * gi[j] * xi[j];
    backward_dx_row_avx512(dx, dout, x, rstd, w, i, C, dot);
  }
}

// Backward's dw terms of features [b, e) summed over all rows in row order into acc.
[[gnu::target(SFT_AVX512_TARGET)]] void backward_dw_avx512(float* acc, const float* dout,
                                                           const float* x, const float* rstd,
                                                           int64_t N, int64_t C, int64_t b,
                                                           int64_t e) {
  for (int64_t i = 0; i < N; ++i) {
    const float* gi = dout + i * C;
    const float* xi = x + i * C;
    const float r = rstd[i];
    const __m512 rv = _mm512_set1_ps(r);
    int64_t j = b;
    for (; j + 16 <= e; j += 16) {
      const __m512 t =
          _mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(gi + j), _mm512_loadu_ps(xi + j)), rv);
      _mm512_storeu_ps(acc + (j - b), _mm512_add_ps(_mm512_loadu_ps(acc + (j - b)), t));
    }
    for (; j < e; ++j) acc[j - b] += gi[j] * xi[j] * r;
  }
}

template <typename T, typename Out>
void forward_rows(Out* out, T* rstd, const T* x, const T* w, int64_t b, int64_t e, int64_t C,
                  double eps) {
  if constexpr (std::is_same_v<T, float>) {
    if (use_avx512()) return forward_rows_avx512(out, rstd, x, w, b, e, C, eps);
  }
  forward_rows_generic(out, rstd, x, w, b, e, C, eps);
}

template <typename T, typename Out>
void forward(Out* out, T* rstd, const T* x, const T* w, int64_t N, int64_t C, double eps) {
  parallel_for_rows(N, 64,
                    [&](int64_t b, int64_t e) { forward_rows(out, rstd, x, w, b, e, C, eps); });
}

// Rows summed this many at a time, then normed while they are in L1/L2: one AVX-512 group.
constexpr int64_t kSumBlock = 16;

// dw's features per stack tile (a multiple of 16; 8 KiB of doubles).
constexpr int64_t kDwTile = 1024;

}  // namespace

template <typename T>
void rmsnorm_forward(T* out, T* rstd, const T* x, const T* w, int64_t N, int64_t C, double eps) {
  forward(out, rstd, x, w, N, C, eps);
}

void rmsnorm_forward_bf16(uint16_t* out, float* rstd, const float* x, const float* w, int64_t N,
                          int64_t C, double eps) {
  forward(out, rstd, x, w, N, C, eps);
}

template <typename T, typename Out>
void add_rmsnorm_forward(T* sum, Out* out, T* rstd, const T* a, const T* b, const T* w, int64_t N,
                         int64_t C, double eps) {
  parallel_for_rows(N, 64, [&](int64_t lo, int64_t hi) {
    for (int64_t r0 = lo; r0 < hi; r0 += kSumBlock) {
      const int64_t r1 = std::min(hi, r0 + kSumBlock);
      for (int64_t i = r0 * C; i < r1 * C; ++i) sum[i] = a[i] + b[i];
      forward_rows(out, rstd, static_cast<const T*>(sum), w, r0, r1, C, eps);
    }
  });
}

template <typename T>
void rmsnorm_backward(T* dx, T* dw, const T* dout, const T* x, const T* rstd, const T* w, int64_t N,
                      int64_t C) {
  // y_j = w_j x_j r  ⇒  dx_j = r (w_j dy_j − x_j r² · mean_k(w_k dy_k x_k)).
  const bool avx512 = std::is_same_v<T, float> && use_avx512();
  parallel_for_rows(N, 64, [&](int64_t b, int64_t e) {
    if constexpr (std::is_same_v<T, float>) {
      if (avx512) return backward_dx_avx512(dx, dout, x, rstd, w, b, e, C);
    }
    for (int64_t i = b; i < e; ++i) {
      const T* xi = x + i * C;
      const T* gi = dout + i * C;
      const T r = rstd[i];
      T dot = 0;
      for (int64_t j = 0; j < C; ++j) dot += w[j] * gi[j] * xi[j];
      const T c = dot * r * r / static_cast<T>(C);
      T* dxi = dx + i * C;
      for (int64_t j = 0; j < C; ++j) dxi[j] = r * (w[j] * gi[j] - xi[j] * c);
    }
  });
  if (!dw) return;  // a frozen weight
  // dw summed over rows in a fixed order (serial over rows, parallel over features). Rows are
  // the outer loop so memory is read contiguously; each feature still sums its rows in order.
  // Each chunk of features sums in tiles of kDwTile on the stack (no scratch to own); a tile is
  // a multiple of 16 wide, so every feature takes the same vector or scalar path as untiled.
  parallel_for_rows(C, 256, [&](int64_t b, int64_t e) {
    T acc[kDwTile];
    for (int64_t t0 = b; t0 < e; t0 += kDwTile) {
      const int64_t t1 = std::min(e, t0 + kDwTile);
      std::fill(acc, acc + (t1 - t0), T(0));
      bool done = false;
      if constexpr (std::is_same_v<T, float>) {
        if (avx512) backward_dw_avx512(acc, dout, x, rstd, N, C, t0, t1), done = true;
      }
      if (!done)
        for (int64_t i = 0; i < N; ++i) {
          const T* gi = dout + i * C;
          const T* xi = x + i * C;
          const T r = rstd[i];
          for (int64_t j = t0; j < t1; ++j) acc[j - t0] += gi[j] * xi[j] * r;
        }
      for (int64_t j = t0; j < t1; ++j) dw[j] += acc[j - t0];
    }
  });
}

template void rmsnorm_forward<float>(float*, float*, const float*, const float*, int64_t, int64_t,
                                     double);
template void rmsnorm_forward<double>(double*, double*, const double*, const double*, int64_t,
                                      int64_t, double);
template void add_rmsnorm_forward<float, float>(float*, float*, float*, const float*, const float*,
                                                const float*, int64_t, int64_t, double);
template void add_rmsnorm_forward<float, uint16_t>(float*, uint16_t*, float*, const float*,
                                                   const float*, const float*, int64_t, int64_t,
                                                   double);
template void add_rmsnorm_forward<double, double>(double*, double*, double*, const double*,
                                                  const double*, const double*, int64_t, int64_t,
                                                  double);
template void rmsnorm_backward<float>(float*, float*, const float*, const float*, const float*,
                                      const float*, int64_t, int64_t);
template void rmsnorm_backward<double>(double*, double*, const double*, const double*,
                                       const double*, const double*, int64_t, int64_t);

}  // namespace sft::ops::cpu
