// RMSNorm forward/backward. See rmsnorm.h for the contract.
#include "ops/cpu/rmsnorm.h"

#include <cmath>
#include <vector>

#include "ops/ops.h"

namespace sft::ops::cpu {

template <typename T>
void rmsnorm_forward(T* out, T* rstd, const T* x, const T* w, int64_t N, int64_t C, double eps) {
  parallel_for_rows(N, 64, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T* xi = x + i * C;
      T ss = 0;
      for (int64_t j = 0; j < C; ++j) ss += xi[j] * xi[j];
      const T r = T(1) / std::sqrt(ss / static_cast<T>(C) + static_cast<T>(eps));
      rstd[i] = r;
      T* oi = out + i * C;
      for (int64_t j = 0; j < C; ++j) oi[j] = w[j] * (xi[j] * r);
    }
  });
}

template <typename T>
void rmsnorm_backward(T* dx, T* dw, const T* dout, const T* x, const T* rstd, const T* w, int64_t N,
                      int64_t C) {
  // y_j = w_j x_j r  ⇒  dx_j = r (w_j dy_j − x_j r² · mean_k(w_k dy_k x_k)).
  parallel_for_rows(N, 64, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T* xi = x + i * C;
      const T* gi = dout + i * C;
      const T r = rstd[i];
      T dot = 0;
      for (int64_t j = 0; j < C; ++j) dot += w[j] * gi[j] * xi[j];
      const T c = dot * r * r / static_cast<T>(C);
      T* dxi = dx + i * C;
      for (int64_t j = 0; j < C; ++j) dxi[j] = r * (w[j] * gi[j] - xi[j] * c);
    }
  });
  // dw summed over rows in a fixed order (serial over rows, parallel over features). Rows are
  // the outer loop so memory is read contiguously; each feature still sums its rows in order.
  parallel_for_rows(C, 256, [&](int64_t b, int64_t e) {
    thread_local std::vector<T> acc;  // this worker's own, grown once
    acc.assign(static_cast<size_t>(e - b), T(0));
    for (int64_t i = 0; i < N; ++i) {
      const T* gi = dout + i * C;
      const T* xi = x + i * C;
      const T r = rstd[i];
      for (int64_t j = b; j < e; ++j) acc[static_cast<size_t>(j - b)] += gi[j] * xi[j] * r;
    }
    for (int64_t j = b; j < e; ++j) dw[j] += acc[static_cast<size_t>(j - b)];
  });
}

template void rmsnorm_forward<float>(float*, float*, const float*, const float*, int64_t, int64_t,
                                     double);
template void rmsnorm_forward<double>(double*, double*, const double*, const double*, int64_t,
                                      int64_t, double);
template void rmsnorm_backward<float>(float*, float*, const float*, const float*, const float*,
                                      const float*, int64_t, int64_t);
template void rmsnorm_backward<double>(double*, double*, const double*, const double*,
                                       const double*, const double*, int64_t, int64_t);

}  // namespace sft::ops::cpu
