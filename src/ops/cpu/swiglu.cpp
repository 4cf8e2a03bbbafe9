// SwiGLU forward/backward. See swiglu.h.
//
// bf16 gate: a bf16 value has only 2¹⁶ bit patterns, so σ(g) = 1 / (1 + exp(−g)) is looked up
// in a table computed once with exactly the expression the f32 kernel evaluates per element
// (the same std::exp): bit for bit the same σ, without an exp per element. The rest of the
// arithmetic is the f32 kernel's, operation by operation, with no multiply-add contraction
// (the pragma), in a scalar loop or, chosen at run time (cpu_features.h), 16 lanes of AVX-512
// gathering σ from the table. Outputs are f32, or rounded to bf16 (f32_to_bf16) in the same pass.
#include "ops/cpu/swiglu.h"

#include <cmath>
#include <type_traits>
#include <vector>

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
T sigmoid(T g) {
  return T(1) / (T(1) + std::exp(-g));
}

// σ of every bf16 value, indexed by its bits.
const float* sigmoid_of_bf16() {
  static const std::vector<float> table = [] {
    std::vector<float> t(1 << 16);
    for (uint32_t bits = 0; bits < (1u << 16); ++bits)
      t[bits] = sigmoid(bf16_to_f32(static_cast<uint16_t>(bits)));
    return t;
  }();
  return table.data();
}

template <typename Out>
void put(Out* o, int64_t i, float v) {
  if constexpr (std::is_same_v<Out, uint16_t>)
    o[i] = f32_to_bf16(v);
  else
    o[i] = v;
}

// The per-element bodies, shared by the scalar loops and the vector loops' tails.
template <typename Out>
void forward_bf16_scalar(Out* h, const uint16_t* gate, const uint16_t* up, const float* sig,
                         int64_t b, int64_t e) {
  for (int64_t i = b; i < e; ++i) {
    const float g = bf16_to_f32(gate[i]);
    put(h, i, g * sig[gate[i]] * bf16_to_f32(up[i]));
  }
}

// d silu(g)/dg = σ(g) (1 + g (1 − σ(g)))
template <typename Out>
void backward_bf16_scalar(Out* dgate, Out* dup, const float* dh, const uint16_t* gate,
                          const uint16_t* up, const float* sig_table, int64_t b, int64_t e) {
  for (int64_t i = b; i < e; ++i) {
    const float g = bf16_to_f32(gate[i]);
    const float sig = sig_table[gate[i]];
    const float silu = g * sig;
    put(dup, i, dh[i] * silu);
    put(dgate, i, dh[i] * bf16_to_f32(up[i]) * sig * (1.0f + g * (1.0f - sig)));
  }
}

template <typename Out>
[[gnu::target(SFT_AVX512_TARGET)]] void put16(Out* o, __m512 v) {
  if constexpr (std::is_same_v<Out, uint16_t>)
    bf16_store16(o, v);
  else
    _mm512_storeu_ps(o, v);
}

[[gnu::target(SFT_AVX512_TARGET)]] inline __m512i bits16(const uint16_t* p) {
  return _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

template <typename Out>
[[gnu::target(SFT_AVX512_TARGET)]] void forward_bf16_avx512(Out* h, const uint16_t* gate,
                                                            const uint16_t* up, const float* sig,
                                                            int64_t b, int64_t e) {
  int64_t i = b;
  for (; i + 16 <= e; i += 16) {
    const __m512i gb = bits16(gate + i);
    const __m512 g = _mm512_castsi512_ps(_mm512_slli_epi32(gb, 16));
    const __m512 s = _mm512_i32gather_ps(gb, sig, 4);
    put16(h + i, _mm512_mul_ps(_mm512_mul_ps(g, s), bf16_load16(up + i)));
  }
  forward_bf16_scalar(h, gate, up, sig, i, e);
}

template <typename Out>
[[gnu::target(SFT_AVX512_TARGET)]] void backward_bf16_avx512(Out* dgate, Out* dup, const float* dh,
                                                             const uint16_t* gate,
                                                             const uint16_t* up,
                                                             const float* sig_table, int64_t b,
                                                             int64_t e) {
  const __m512 one = _mm512_set1_ps(1.0f);
  int64_t i = b;
  for (; i + 16 <= e; i += 16) {
    const __m512i gb = bits16(gate + i);
    const __m512 g = _mm512_castsi512_ps(_mm512_slli_epi32(gb, 16));
    const __m512 sig = _mm512_i32gather_ps(gb, sig_table, 4);
    const __m512 d = _mm512_loadu_ps(dh + i);
    put16(dup + i, _mm512_mul_ps(d, _mm512_mul_ps(g, sig)));
    const __m512 slope = _mm512_add_ps(one, _mm512_mul_ps(g, _mm512_sub_ps(one, sig)));
    put16(dgate + i,
          _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(d, bf16_load16(up + i)), sig), slope));
  }
  backward_bf16_scalar(dgate, dup, dh, gate, up, sig_table, i, e);
}

template <typename Out>
void forward_bf16(Out* h, const uint16_t* gate, const uint16_t* up, int64_t N) {
  const float* sig = sigmoid_of_bf16();
  const bool avx512 = use_avx512();
  parallel_for_rows(N, 1 << 14, [&](int64_t b, int64_t e) {
    if (avx512) return forward_bf16_avx512(h, gate, up, sig, b, e);
    forward_bf16_scalar(h, gate, up, sig, b, e);
  });
}

template <typename Out>
void backward_bf16(Out* dgate, Out* dup, const float* dh, const uint16_t* gate, const uint16_t* up,
                   int64_t N) {
  const float* sig = sigmoid_of_bf16();
  const bool avx512 = use_avx512();
  parallel_for_rows(N, 1 << 14, [&](int64_t b, int64_t e) {
    if (avx512) return backward_bf16_avx512(dgate, dup, dh, gate, up, sig, b, e);
    backward_bf16_scalar(dgate, dup, dh, gate, up, sig, b, e);
  });
}

}  // namespace

template <typename T, typename In>
void swiglu_forward(T* h, const In* gate, const In* up, int64_t N) {
  if constexpr (std::is_same_v<In, uint16_t>) {
    forward_bf16(h, gate, up, N);
  } else {
    parallel_for_rows(N, 1 << 14, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T g = gate[i];
        const T sig = sigmoid(g);
        h[i] = g * sig * up[i];
      }
    });
  }
}

template <typename T, typename In>
void swiglu_backward(T* dgate, T* dup, const T* dh, const In* gate, const In* up, int64_t N) {
  if constexpr (std::is_same_v<In, uint16_t>) {
    backward_bf16(dgate, dup, dh, gate, up, N);
  } else {
    // d silu(g)/dg = σ(g) (1 + g (1 − σ(g)))
    parallel_for_rows(N, 1 << 14, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T g = gate[i];
        const T sig = sigmoid(g);
        const T silu = g * sig;
        dup[i] = dh[i] * silu;
        dgate[i] = dh[i] * up[i] * sig * (T(1) + g * (T(1) - sig));
      }
    });
  }
}

void swiglu_forward_bf16(uint16_t* h, const uint16_t* gate, const uint16_t* up, int64_t N) {
  forward_bf16(h, gate, up, N);
}

void swiglu_backward_bf16(uint16_t* dgate, uint16_t* dup, const float* dh, const uint16_t* gate,
                          const uint16_t* up, int64_t N) {
  backward_bf16(dgate, dup, dh, gate, up, N);
}

template void swiglu_forward<float>(float*, const float*, const float*, int64_t);
template void swiglu_forward<double>(double*, const double*, const double*, int64_t);
template void swiglu_backward<float>(float*, float*, const float*, const float*, const float*,
                                     int64_t);
template void swiglu_backward<double>(double*, double*, const double*, const double*, const double*,
                                      int64_t);
template void swiglu_forward<float, uint16_t>(float*, const uint16_t*, const uint16_t*, int64_t);
template void swiglu_backward<float, uint16_t>(float*, float*, const float*, const uint16_t*,
                                               const uint16_t*, int64_t);

}  // namespace sft::ops::cpu
