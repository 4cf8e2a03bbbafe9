// SwiGLU forward/backward. See mlp.h.
#include "ops/cpu/swiglu.h"

#include <cmath>

#include "ops/ops.h"

namespace sft::ops::cpu {

template <typename T>
void swiglu_forward(T* h, const T* gate, const T* up, int64_t N) {
  parallel_for_rows(N, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T g = gate[i];
      const T sig = T(1) / (T(1) + std::exp(-g));
      h[i] = g * sig * up[i];
    }
  });
}

template <typename T>
void swiglu_backward(T* dgate, T* dup, const T* dh, const T* gate, const T* up, int64_t N) {
  // d silu(g)/dg = σ(g) (1 + g (1 − σ(g)))
  parallel_for_rows(N, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T g = gate[i];
      const T sig = T(1) / (T(1) + std::exp(-g));
      const T silu = g * sig;
      dup[i] = dh[i] * silu;
      dgate[i] = dh[i] * up[i] * sig * (T(1) + g * (T(1) - sig));
    }
  });
}

template void swiglu_forward<float>(float*, const float*, const float*, int64_t);
template void swiglu_forward<double>(double*, const double*, const double*, int64_t);
template void swiglu_backward<float>(float*, float*, const float*, const float*, const float*,
                                     int64_t);
template void swiglu_backward<double>(double*, double*, const double*, const double*, const double*,
                                      int64_t);

}  // namespace sft::ops::cpu
