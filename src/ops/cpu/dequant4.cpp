// 4-bit dequantization kernels. See dequant4.h.
#include "ops/cpu/dequant4.h"

#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "core/half.h"
#include "ops/cpu/bf16_simd.h"
#include "ops/cpu/bnb_quant.h"
#include "ops/cpu/cpu_features.h"

namespace sft::ops::cpu {

namespace {

template <typename T>
T stored(float v) {
  if constexpr (std::is_same_v<T, float>)
    return v;
  else
    return f32_to_bf16(v);
}

template <typename T>
void scalar(const Packed4& w, int64_t first, int64_t n, T* out) {
  for (int64_t j = 0; j < n; ++j)
    out[j] = stored<T>(quant4_element(w.packed, w.absmax, w.code, first + j, w.blocksize));
}

[[gnu::always_inline, gnu::target(SFT_AVX512_TARGET)]] inline void store16(float* out, __m512 v) {
  _mm512_storeu_ps(out, v);
}
[[gnu::always_inline, gnu::target(SFT_AVX512_TARGET)]] inline void store16(uint16_t* out,
                                                                            __m512 v) {
  bf16_store16(out, v);
}

// 16 bytes → 32 indices in element order: the even element's index is the byte's high nibble,
// so each byte contributes (byte >> 4, byte) to the interleave. Only bits 3..0 of a vpermps
// index count, so neither half needs masking: the shifted-in bits of the neighbouring byte
// and the high nibble left in `bytes` fall above them.
template <typename T>
[[gnu::always_inline, gnu::target(SFT_AVX512_TARGET)]] inline void expand32(const uint8_t* bytes,
                                                                            __m512 code,
                                                                            __m512 scale, T* out) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes));
  const __m128i high = _mm_srli_epi16(b, 4);
  const __m512i first = _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(high, b));
  const __m512i second = _mm512_cvtepu8_epi32(_mm_unpackhi_epi8(high, b));
  store16(out, _mm512_mul_ps(_mm512_permutexvar_ps(first, code), scale));
  store16(out + 16, _mm512_mul_ps(_mm512_permutexvar_ps(second, code), scale));
}

template <typename T>
[[gnu::always_inline, gnu::target(SFT_AVX512_TARGET)]] inline void expand16(const uint8_t* bytes,
                                                                            __m512 code,
                                                                            __m512 scale, T* out) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes));
  const __m512i idx = _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(_mm_srli_epi16(b, 4), b));
  store16(out, _mm512_mul_ps(_mm512_permutexvar_ps(idx, code), scale));
}

// Block by block: within a block the scale is one broadcast; an odd start takes one scalar
// element so the vector loads begin on a byte; the block's remainder below 16 is scalar.
template <typename T>
[[gnu::target(SFT_AVX512_TARGET)]] void avx512(const Packed4& w, int64_t first, int64_t n, T* out) {
  const __m512 code = _mm512_loadu_ps(w.code);
  int64_t i = first;
  const int64_t end = first + n;
  while (i < end) {
    const int64_t block = i / w.blocksize;
    const int64_t block_end = std::min(end, (block + 1) * w.blocksize);
    if (i % 2 == 1) {
      out[i - first] = stored<T>(quant4_element(w.packed, w.absmax, w.code, i, w.blocksize));
      ++i;
    }
    const __m512 scale = _mm512_set1_ps(w.absmax[block]);
    for (; i + 32 <= block_end; i += 32) expand32(w.packed + i / 2, code, scale, out + (i - first));
    for (; i + 16 <= block_end; i += 16) expand16(w.packed + i / 2, code, scale, out + (i - first));
    for (; i < block_end; ++i)
      out[i - first] = stored<T>(quant4_element(w.packed, w.absmax, w.code, i, w.blocksize));
  }
}

}  // namespace

Packed4 packed4_of(const Weight4Bit& w) {
  return {w.packed.as<uint8_t>(), w.absmax.as<float>(), quant4_code(w.type).data(), w.blocksize};
}

void dequantize4_scalar(const Packed4& w, int64_t first, int64_t n, float* out) {
  scalar(w, first, n, out);
}
void dequantize4_scalar(const Packed4& w, int64_t first, int64_t n, uint16_t* out) {
  scalar(w, first, n, out);
}
void dequantize4_avx512(const Packed4& w, int64_t first, int64_t n, float* out) {
  avx512(w, first, n, out);
}
void dequantize4_avx512(const Packed4& w, int64_t first, int64_t n, uint16_t* out) {
  avx512(w, first, n, out);
}

void dequantize4(const Packed4& w, int64_t first, int64_t n, float* out) {
  if (use_avx512()) return avx512(w, first, n, out);
  scalar(w, first, n, out);
}
void dequantize4(const Packed4& w, int64_t first, int64_t n, uint16_t* out) {
  if (use_avx512()) return avx512(w, first, n, out);
  scalar(w, first, n, out);
}

}  // namespace sft::ops::cpu
