// Elementwise CPU kernels. See elementwise.h.
#include "ops/cpu/elementwise.h"

#include <algorithm>
#include <type_traits>

#include "core/half.h"
#include "ops/cpu/bf16_simd.h"
#include "ops/cpu/cpu_features.h"
#include "ops/ops.h"

namespace sft::ops::cpu {

namespace {

constexpr int64_t kGrain = 1 << 15;

template <typename To, typename From>
To convert(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<From, uint16_t>) {
    return static_cast<To>(bf16_to_f32(x));
  } else if constexpr (std::is_same_v<To, uint16_t>) {
    return f32_to_bf16(static_cast<float>(x));
  } else {
    return static_cast<To>(x);
  }
}

// The f32 ↔ bf16 loops behind a run-time AVX-512 check: the same values as the scalar loops
// (bf16_simd.h rounds as f32_to_bf16; an add is one IEEE operation either way).
[[gnu::target(SFT_AVX512_TARGET)]] void to_bf16_avx512(uint16_t* dst, const float* src, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) bf16_store16(dst + i, _mm512_loadu_ps(src + i));
  for (; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
}

[[gnu::target(SFT_AVX512_TARGET)]] void from_bf16_avx512(float* dst, const uint16_t* src,
                                                         int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, bf16_load16(src + i));
  for (; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}

[[gnu::target(SFT_AVX512_TARGET)]] void add_avx512(float* dst, const float* src, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_add_ps(_mm512_loadu_ps(dst + i), _mm512_loadu_ps(src + i)));
  for (; i < n; ++i) dst[i] += src[i];
}

[[gnu::target(SFT_AVX512_TARGET)]] void add_avx512(float* dst, const uint16_t* src, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_add_ps(_mm512_loadu_ps(dst + i), bf16_load16(src + i)));
  for (; i < n; ++i) dst[i] += bf16_to_f32(src[i]);
}

[[gnu::target(SFT_AVX512_TARGET)]] void add_rounded_avx512(float* dst, const float* src,
                                                           uint16_t* rounded, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 sum = _mm512_add_ps(_mm512_loadu_ps(dst + i), _mm512_loadu_ps(src + i));
    _mm512_storeu_ps(dst + i, sum);
    bf16_store16(rounded + i, sum);
  }
  for (; i < n; ++i) rounded[i] = f32_to_bf16(dst[i] += src[i]);
}

}  // namespace

void round_row_to_bf16(uint16_t* dst, const float* src, int64_t n) {
  if (use_avx512()) return to_bf16_avx512(dst, src, n);
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
}

void widen_row_from_bf16(float* dst, const uint16_t* src, int64_t n) {
  if (use_avx512()) return from_bf16_avx512(dst, src, n);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}

void add_rounded(float* dst, const float* src, uint16_t* rounded, int64_t n) {
  const bool avx512 = use_avx512();
  parallel_for_rows(n, kGrain, [&](int64_t b, int64_t e) {
    if (avx512) return add_rounded_avx512(dst + b, src + b, rounded + b, e - b);
    for (int64_t i = b; i < e; ++i) rounded[i] = f32_to_bf16(dst[i] += src[i]);
  });
}

template <typename T, typename Src>
void add(T* dst, const Src* src, int64_t n) {
  if constexpr (std::is_same_v<T, float> &&
                (std::is_same_v<Src, float> || std::is_same_v<Src, uint16_t>)) {
    if (use_avx512())
      return parallel_for_rows(n, kGrain,
                               [&](int64_t b, int64_t e) { add_avx512(dst + b, src + b, e - b); });
  }
  parallel_for_rows(n, kGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dst[i] += convert<T>(src[i]);
  });
}

template <typename T>
void add_bias(T* y, const T* b, int64_t N, int64_t O) {
  parallel_for_rows(N, 64, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      for (int64_t o = 0; o < O; ++o) y[i * O + o] += b[o];
  });
}

template <typename T>
void bias_backward(T* db, const T* dy, int64_t N, int64_t O) {
  parallel_for_rows(O, 64, [&](int64_t lo, int64_t hi) {
    for (int64_t o = lo; o < hi; ++o) {
      T acc = 0;
      for (int64_t i = 0; i < N; ++i) acc += dy[i * O + o];
      db[o] += acc;
    }
  });
}

namespace {

// One thread's conversion of n contiguous elements: the AVX-512 row loops for f32 ↔ bf16.
template <typename To, typename From>
void cast_span(To* dst, const From* src, int64_t n) {
  if constexpr (std::is_same_v<To, uint16_t> && std::is_same_v<From, float>)
    round_row_to_bf16(dst, src, n);
  else if constexpr (std::is_same_v<To, float> && std::is_same_v<From, uint16_t>)
    widen_row_from_bf16(dst, src, n);
  else
    for (int64_t i = 0; i < n; ++i) dst[i] = convert<To>(src[i]);
}

}  // namespace

template <typename To, typename From>
void cast(To* dst, const From* src, int64_t n) {
  parallel_for_rows(n, kGrain, [&](int64_t b, int64_t e) { cast_span(dst + b, src + b, e - b); });
}

template <typename To, typename From>
void cast_rows(To* dst, int64_t ld_dst, const From* src, int64_t ld_src, int64_t rows,
               int64_t cols) {
  // Whole rows per chunk, about kGrain elements each.
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(cols, 1));
  parallel_for_rows(rows, grain, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) cast_span(dst + r * ld_dst, src + r * ld_src, cols);
  });
}

template void add<float, float>(float*, const float*, int64_t);
template void add<float, uint16_t>(float*, const uint16_t*, int64_t);
template void add<double, double>(double*, const double*, int64_t);
template void add_bias<float>(float*, const float*, int64_t, int64_t);
template void add_bias<double>(double*, const double*, int64_t, int64_t);
template void bias_backward<float>(float*, const float*, int64_t, int64_t);
template void bias_backward<double>(double*, const double*, int64_t, int64_t);
template void cast<uint16_t, float>(uint16_t*, const float*, int64_t);
template void cast<float, uint16_t>(float*, const uint16_t*, int64_t);
template void cast<double, float>(double*, const float*, int64_t);
template void cast<float, double>(float*, const double*, int64_t);
template void cast<float, float>(float*, const float*, int64_t);
template void cast_rows<uint16_t, float>(uint16_t*, int64_t, const float*, int64_t, int64_t,
                                         int64_t);
template void cast_rows<float, uint16_t>(float*, int64_t, const uint16_t*, int64_t, int64_t,
                                         int64_t);
template void cast_rows<double, float>(double*, int64_t, const float*, int64_t, int64_t, int64_t);
template void cast_rows<float, double>(float*, int64_t, const double*, int64_t, int64_t, int64_t);
template void cast_rows<float, float>(float*, int64_t, const float*, int64_t, int64_t, int64_t);

}  // namespace sft::ops::cpu
