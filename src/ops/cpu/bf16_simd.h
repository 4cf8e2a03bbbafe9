// 16-lane AVX-512 conversions between f32 and bf16 bits with exactly core/half.h's rounding
// (round to nearest, ties to even; NaN quieted with its sign and top payload kept; overflow to
// infinity; subnormals kept), for the CPU kernels that read or write bf16 (cast, add, rmsnorm,
// SwiGLU). Integer arithmetic rather than AVX512_BF16's vcvtneps2bf16, which treats subnormal
// inputs as zero and so would not match f32_to_bf16. Only call these from functions compiled
// with SFT_AVX512_TARGET (and chosen by cpu::use_avx512()).
#pragma once

#include <immintrin.h>

#include <cstdint>

#define SFT_AVX512_TARGET "avx512f,avx512dq,avx512bw,avx512vl"

namespace sft::ops::cpu {

// 16 f32 → 16 bf16 bits, as f32_to_bf16 on each lane.
[[gnu::always_inline, gnu::target(SFT_AVX512_TARGET)]] inline __m256i bf16_round16(__m512 v) {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(
      _mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7fff)), lsb), 16);
  const __m512i abs = _mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff));
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(abs, _mm512_set1_epi32(0x7f800000));
  const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
  return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rounded, quiet));
}

// 16 bf16 bits → 16 f32 (exact).
[[gnu::always_inline, gnu::target(SFT_AVX512_TARGET)]] inline __m512 bf16_widen16(__m256i h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

[[gnu::always_inline, gnu::target(SFT_AVX512_TARGET)]] inline __m512 bf16_load16(
    const uint16_t* p) {
  return bf16_widen16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

[[gnu::always_inline, gnu::target(SFT_AVX512_TARGET)]] inline void bf16_store16(uint16_t* p,
                                                                                __m512 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), bf16_round16(v));
}

}  // namespace sft::ops::cpu
