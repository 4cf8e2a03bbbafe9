// Gated GELU (tanh approximation) forward/backward. See gelu_tanh_gated.h.
//
// The reference form is a template over float and double. The fast path is for bf16 gates
// (bf16 compute): a bf16 value has 2¹⁶ bit patterns, so gelu_tanh(g) and its derivative are
// looked up in two tables computed once with the float expression the f32 kernel evaluates
// (bit for bit the same values, no tanh per element), then multiplied as the f32 kernel does.
// Outputs are f32, or rounded to bf16 (f32_to_bf16) in the same pass.
#include "ops/cpu/gelu_tanh_gated.h"

#include <cmath>
#include <numbers>
#include <type_traits>
#include <vector>

#include "core/half.h"
#include "ops/ops.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace sft::ops::cpu {

namespace {

// u = √(2/π)(x + 0.044715 x³), t = tanh(u): gelu = x/2 (1 + t) and
// gelu' = (1 + t)/2 + x/2 (1 − t²) √(2/π) (1 + 3 · 0.044715 x²).
template <typename T>
struct GeluTanh {
  T value, slope;
};

template <typename T>
GeluTanh<T> gelu_tanh(T x) {
  const T k = static_cast<T>(std::numbers::sqrt2 / std::sqrt(std::numbers::pi));  // √(2/π)
  const T a = static_cast<T>(0.044715);
  const T t = std::tanh(k * (x + a * x * x * x));
  const T half = static_cast<T>(0.5);
  return {half * x * (T(1) + t),
          half * (T(1) + t) + half * x * (T(1) - t * t) * k * (T(1) + T(3) * a * x * x)};
}

// gelu_tanh of every bf16 value and its slope, indexed by its bits.
struct Tables {
  std::vector<float> value, slope;
};
const Tables& tables_of_bf16() {
  static const Tables tables = [] {
    Tables t{std::vector<float>(1 << 16), std::vector<float>(1 << 16)};
    for (uint32_t bits = 0; bits < (1u << 16); ++bits) {
      const GeluTanh<float> g = gelu_tanh(bf16_to_f32(static_cast<uint16_t>(bits)));
      t.value[bits] = g.value;
      t.slope[bits] = g.slope;
    }
    return t;
  }();
  return tables;
}

template <typename Out>
void put(Out* o, int64_t i, float v) {
  if constexpr (std::is_same_v<Out, uint16_t>)
    o[i] = f32_to_bf16(v);
  else
    o[i] = v;
}

template <typename Out>
void forward_bf16(Out* h, const uint16_t* gate, const uint16_t* up, int64_t N) {
  const float* value = tables_of_bf16().value.data();
  parallel_for_rows(N, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) put(h, i, value[gate[i]] * bf16_to_f32(up[i]));
  });
}

template <typename Out>
void backward_bf16(Out* dgate, Out* dup, const float* dh, const uint16_t* gate, const uint16_t* up,
                   int64_t N) {
  const Tables& t = tables_of_bf16();
  const float* value = t.value.data();
  const float* slope = t.slope.data();
  parallel_for_rows(N, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      put(dup, i, dh[i] * value[gate[i]]);
      put(dgate, i, dh[i] * bf16_to_f32(up[i]) * slope[gate[i]]);
    }
  });
}

}  // namespace

template <typename T, typename In>
void gelu_tanh_gated_forward(T* h, const In* gate, const In* up, int64_t N) {
  if constexpr (std::is_same_v<In, uint16_t>) {
    forward_bf16(h, gate, up, N);
  } else {
    parallel_for_rows(N, 1 << 14, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) h[i] = gelu_tanh(gate[i]).value * up[i];
    });
  }
}

template <typename T, typename In>
void gelu_tanh_gated_backward(T* dgate, T* dup, const T* dh, const In* gate, const In* up,
                              int64_t N) {
  if constexpr (std::is_same_v<In, uint16_t>) {
    backward_bf16(dgate, dup, dh, gate, up, N);
  } else {
    parallel_for_rows(N, 1 << 14, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const GeluTanh<T> g = gelu_tanh(gate[i]);
        dup[i] = dh[i] * g.value;
        dgate[i] = dh[i] * up[i] * g.slope;
      }
    });
  }
}

void gelu_tanh_gated_forward_bf16(uint16_t* h, const uint16_t* gate, const uint16_t* up,
                                  int64_t N) {
  forward_bf16(h, gate, up, N);
}

void gelu_tanh_gated_backward_bf16(uint16_t* dgate, uint16_t* dup, const float* dh,
                                   const uint16_t* gate, const uint16_t* up, int64_t N) {
  backward_bf16(dgate, dup, dh, gate, up, N);
}

template void gelu_tanh_gated_forward<float>(float*, const float*, const float*, int64_t);
template void gelu_tanh_gated_forward<double>(double*, const double*, const double*, int64_t);
template void gelu_tanh_gated_backward<float>(float*, float*, const float*, const float*,
                                              const float*, int64_t);
template void gelu_tanh_gated_backward<double>(double*, double*, const double*, const double*,
                                               const double*, int64_t);
template void gelu_tanh_gated_forward<float, uint16_t>(float*, const uint16_t*, const uint16_t*,
                                                       int64_t);
template void gelu_tanh_gated_backward<float, uint16_t>(float*, float*, const float*,
                                                        const uint16_t*, const uint16_t*, int64_t);

}  // namespace sft::ops::cpu
