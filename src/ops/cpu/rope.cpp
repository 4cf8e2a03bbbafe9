// Rotary embedding rotation kernels. See rope.h.
#include "ops/cpu/rope.h"

#include "ops/ops.h"

namespace sft::ops::cpu {

namespace {

// Rotates each (x[i], x[i + R/2]) pair of a head by +θ, or by −θ when `inverse` (the backward of
// a rotation is the opposite rotation). Negating sin is exact, so both directions share a body.
template <typename T>
void rotate_halves(T* x, const T* cos, const T* sin, int64_t Tn, int64_t NH, int64_t D, int64_t ld,
                   int64_t R, bool inverse) {
  const int64_t half = (R > 0 ? R : D) / 2;
  parallel_for_rows(Tn, 16, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const T* c = cos + t * half;
      const T* s = sin + t * half;
      for (int64_t h = 0; h < NH; ++h) {
        T* v = x + t * ld + h * D;
        for (int64_t i = 0; i < half; ++i) {
          const T si = inverse ? -s[i] : s[i];
          const T a = v[i], b = v[i + half];
          v[i] = a * c[i] - b * si;
          v[i + half] = b * c[i] + a * si;
        }
      }
    }
  });
}

}  // namespace

template <typename T>
void rope_forward(T* x, const T* cos, const T* sin, int64_t Tn, int64_t NH, int64_t D, int64_t ld,
                  int64_t R) {
  rotate_halves(x, cos, sin, Tn, NH, D, ld, R, /*inverse=*/false);
}

template <typename T>
void rope_backward(T* dx, const T* cos, const T* sin, int64_t Tn, int64_t NH, int64_t D, int64_t ld,
                   int64_t R) {
  rotate_halves(dx, cos, sin, Tn, NH, D, ld, R, /*inverse=*/true);
}

template void rope_forward<float>(float*, const float*, const float*, int64_t, int64_t, int64_t,
                                  int64_t, int64_t);
template void rope_forward<double>(double*, const double*, const double*, int64_t, int64_t, int64_t,
                                   int64_t, int64_t);
template void rope_backward<float>(float*, const float*, const float*, int64_t, int64_t, int64_t,
                                   int64_t, int64_t);
template void rope_backward<double>(double*, const double*, const double*, int64_t, int64_t,
                                    int64_t, int64_t, int64_t);

}  // namespace sft::ops::cpu
