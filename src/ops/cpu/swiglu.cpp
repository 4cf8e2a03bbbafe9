// SwiGLU forward/backward. See swiglu.h.
#include "ops/cpu/swiglu.h"

#include <cmath>

#include "core/half.h"
#include "ops/ops.h"

namespace sft::ops::cpu {

namespace {

template <typename T>
T widen(T x) {
  return x;
}
float widen(uint16_t bits) {
  return bf16_to_f32(bits);
}

}  // namespace

template <typename T, typename In>
void swiglu_forward(T* h, const In* gate, const In* up, int64_t N) {
  parallel_for_rows(N, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T g = widen(gate[i]);
      const T sig = T(1) / (T(1) + std::exp(-g));
      h[i] = g * sig * widen(up[i]);
    }
  });
}

template <typename T, typename In>
void swiglu_backward(T* dgate, T* dup, const T* dh, const In* gate, const In* up, int64_t N) {
  // d silu(g)/dg = σ(g) (1 + g (1 − σ(g)))
  parallel_for_rows(N, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T g = widen(gate[i]);
      const T sig = T(1) / (T(1) + std::exp(-g));
      const T silu = g * sig;
      dup[i] = dh[i] * silu;
      dgate[i] = dh[i] * widen(up[i]) * sig * (T(1) + g * (T(1) - sig));
    }
  });
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
