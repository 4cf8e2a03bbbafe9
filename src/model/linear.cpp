// linear forward/backward on ops::matmul. See linear.h.
#include "model/linear.h"

#include "ops/ops.h"

namespace sft::model {

template <typename T>
void linear_forward(T* y, const T* x, const T* w, const T* b, int64_t N, int64_t I, int64_t O) {
  ops::matmul(y, x, w, N, O, I, false, true, false);
  if (b) {
    ops::parallel_for_rows(N, 64, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        for (int64_t o = 0; o < O; ++o) y[i * O + o] += b[o];
    });
  }
}

template <typename T>
void linear_backward(T* dx, T* dw, T* db, const T* dy, const T* x, const T* w, int64_t N, int64_t I,
                     int64_t O, bool accumulate_dx) {
  if (dx) ops::matmul(dx, dy, w, N, I, O, false, false, accumulate_dx);
  ops::matmul(dw, dy, x, O, I, N, true, false, true);
  if (db) {
    ops::parallel_for_rows(O, 64, [&](int64_t lo, int64_t hi) {
      for (int64_t o = lo; o < hi; ++o) {
        T acc = 0;
        for (int64_t i = 0; i < N; ++i) acc += dy[i * O + o];
        db[o] += acc;
      }
    });
  }
}

template void linear_forward<float>(float*, const float*, const float*, const float*, int64_t,
                                    int64_t, int64_t);
template void linear_forward<double>(double*, const double*, const double*, const double*, int64_t,
                                     int64_t, int64_t);
template void linear_backward<float>(float*, float*, float*, const float*, const float*,
                                     const float*, int64_t, int64_t, int64_t, bool);
template void linear_backward<double>(double*, double*, double*, const double*, const double*,
                                      const double*, int64_t, int64_t, int64_t, bool);

}  // namespace sft::model
