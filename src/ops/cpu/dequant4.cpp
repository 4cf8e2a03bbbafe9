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

// 16 bytes → their 32 indices in element order, as two halves of 16 bytes: the even element's
// index is the byte's high nibble, so each byte contributes (byte >> 4, byte). The bits above
// each nibble are left as they fall (the shift brings in the neighbouring byte's low bits, the
// unshifted byte keeps its high nibble): the lookups below read only an index's low 4 bits.
struct Indices {
  __m128i first, second;
};
[[gnu::always_inline, gnu::target(SFT_AVX512_TARGET)]] inline Indices indices32(const uint8_t* p) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i high = _mm_srli_epi16(b, 4);
  return {_mm_unpacklo_epi8(high, b), _mm_unpackhi_epi8(high, b)};
}
[[gnu::always_inline, gnu::target(SFT_AVX512_TARGET)]] inline __m128i indices16(const uint8_t* p) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm_unpacklo_epi8(_mm_srli_epi16(b, 4), b);
}

// A block's 16 possible values, code × absmax (one f32 multiply each, as the scalar path), are
// computed once; every element is then a table lookup: vpermps on the f32 values, or vpermw on
// the values already rounded to bf16 (16 lanes, repeated in both halves of the register so
// that 32 lookups ignore the index's bit 4).
struct F32Table {
  __m512 values;
};
struct Bf16Table {
  __m512i values;
};

[[gnu::always_inline, gnu::target(SFT_AVX512_TARGET)]] inline F32Table table_of(__m512 products,
                                                                                float*) {
  return {products};
}
[[gnu::always_inline, gnu::target(SFT_AVX512_TARGET)]] inline Bf16Table table_of(__m512 products,
                                                                                 uint16_t*) {
  return {_mm512_broadcast_i64x4(bf16_round16(products))};
}

[[gnu::always_inline, gnu::target(SFT_AVX512_TARGET)]] inline void lookup32(const F32Table& t,
                                                                            Indices i, float* out) {
  _mm512_storeu_ps(out, _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(i.first), t.values));
  _mm512_storeu_ps(out + 16, _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(i.second), t.values));
}
[[gnu::always_inline, gnu::target(SFT_AVX512_TARGET)]] inline void lookup32(const Bf16Table& t,
                                                                            Indices i,
                                                                            uint16_t* out) {
  const __m512i idx = _mm512_cvtepu8_epi16(_mm256_set_m128i(i.second, i.first));
  _mm512_storeu_si512(out, _mm512_permutexvar_epi16(idx, t.values));
}
[[gnu::always_inline, gnu::target(SFT_AVX512_TARGET)]] inline void lookup16(const F32Table& t,
                                                                            __m128i i, float* out) {
  _mm512_storeu_ps(out, _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(i), t.values));
}
[[gnu::always_inline, gnu::target(SFT_AVX512_TARGET)]] inline void lookup16(const Bf16Table& t,
                                                                            __m128i i,
                                                                            uint16_t* out) {
  _mm256_storeu_si256(
      reinterpret_cast<__m256i*>(out),
      _mm256_permutexvar_epi16(_mm256_cvtepu8_epi16(i), _mm512_castsi512_si256(t.values)));
}

// Block by block: an odd start takes one scalar element so the vector loads begin on a byte;
// the block's remainder below 16 is scalar.
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
    if (i + 16 <= block_end) {
      const auto table = table_of(_mm512_mul_ps(code, _mm512_set1_ps(w.absmax[block])), out);
      for (; i + 32 <= block_end; i += 32)
        lookup32(table, indices32(w.packed + i / 2), out + (i - first));
      for (; i + 16 <= block_end; i += 16)
        lookup16(table, indices16(w.packed + i / 2), out + (i - first));
    }
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
