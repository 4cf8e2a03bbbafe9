// Chunked LM head + cross-entropy. See lm_head_reference.h.
#include "ops/cpu/lm_head_reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/cpu/lm_head_rows.h"
#include "ops/ops.h"

namespace sft::ops::cpu {

namespace {

// Rows per chunk: about 32 MiB of fp32 logits.
int64_t chunk_rows(int64_t V) {
  return std::max<int64_t>(1, (int64_t{1} << 23) / V);
}

// The row pass is the fused kernels' scalar one (lm_head_rows.h), exp in the compute dtype.
using lm_head_detail::RowStats;
using lm_head_detail::scalar_row_stats;

// z = cap · tanh(z / cap) over n logits, the tanh kept in t when given.
template <typename T>
void soft_cap(T* z, T* t, int64_t n, T cap) {
  for (int64_t i = 0; i < n; ++i) {
    const T th = std::tanh(z[i] / cap);
    z[i] = cap * th;
    if (t) t[i] = th;
  }
}

}  // namespace

template <typename T>
LossStats lm_head_loss_forward(T* logits, const T* x, const T* w, const int64_t* targets,
                               int64_t Tn, int64_t C, int64_t V, std::vector<T>& workspace,
                               T softcap) {
  LossStats total;
  std::vector<int64_t> rows;  // scored rows, or all rows when logits are wanted
  for (int64_t t = 0; t < Tn; ++t)
    if (logits || targets[t] >= 0) rows.push_back(t);
  const int64_t n = static_cast<int64_t>(rows.size());
  const int64_t R = chunk_rows(V);
  workspace.resize(static_cast<size_t>(std::min(n, R) * (V + C)));
  std::vector<RowStats> stats(static_cast<size_t>(std::min(n, R)));
  for (int64_t c0 = 0; c0 < n; c0 += R) {
    const int64_t m = std::min(R, n - c0);
    T* z = workspace.data();
    T* xs = z + m * V;
    for (int64_t i = 0; i < m; ++i)
      std::memcpy(xs + i * C, x + rows[c0 + i] * C, static_cast<size_t>(C) * sizeof(T));
    matmul(z, xs, w, m, V, C, false, true, false);
    if (softcap > 0) soft_cap(z, static_cast<T*>(nullptr), m * V, softcap);
    if (logits)
      for (int64_t i = 0; i < m; ++i)
        std::memcpy(logits + rows[c0 + i] * V, z + i * V, static_cast<size_t>(V) * sizeof(T));
    parallel_for_rows(m, 4, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t tgt = targets[rows[c0 + i]];
        if (tgt >= 0) stats[i] = scalar_row_stats(z + i * V, V, tgt, false, T(0));
      }
    });
    for (int64_t i = 0; i < m; ++i) {  // fixed-order reduction
      if (targets[rows[c0 + i]] < 0) continue;
      total.loss_sum += stats[i].loss;
      total.entropy_sum += stats[i].entropy;
      total.correct += stats[i].correct ? 1 : 0;
      total.count += 1;
    }
  }
  return total;
}

template <typename T>
void lm_head_loss_backward(T* dx, T* dw, const T* x, const T* w, const int64_t* targets, T scale,
                           int64_t Tn, int64_t C, int64_t V, std::vector<T>& workspace, T softcap) {
  std::memset(dx, 0, static_cast<size_t>(Tn * C) * sizeof(T));
  std::vector<int64_t> rows;
  for (int64_t t = 0; t < Tn; ++t)
    if (targets[t] >= 0) rows.push_back(t);
  const int64_t n = static_cast<int64_t>(rows.size());
  const int64_t R = chunk_rows(V);
  workspace.resize(static_cast<size_t>(std::min(n, R) * (2 * V + 2 * C)));
  for (int64_t c0 = 0; c0 < n; c0 += R) {
    const int64_t m = std::min(R, n - c0);
    T* z = workspace.data();
    T* xs = z + m * V;
    T* dxs = xs + m * C;
    T* th = dxs + m * C;  // (m, V) the soft-cap's tanh
    for (int64_t i = 0; i < m; ++i)
      std::memcpy(xs + i * C, x + rows[c0 + i] * C, static_cast<size_t>(C) * sizeof(T));
    matmul(z, xs, w, m, V, C, false, true, false);
    if (softcap > 0) soft_cap(z, th, m * V, softcap);
    parallel_for_rows(m, 4, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        scalar_row_stats(z + i * V, V, targets[rows[c0 + i]], true, scale);
    });
    if (softcap > 0)  // through the cap: d(cap · tanh(z / cap))/dz = 1 − tanh²
      for (int64_t i = 0; i < m * V; ++i) z[i] *= T(1) - th[i] * th[i];
    matmul(dxs, z, w, m, C, V, false, false, false);
    matmul(dw, z, xs, V, C, m, true, false, true);
    for (int64_t i = 0; i < m; ++i)
      std::memcpy(dx + rows[c0 + i] * C, dxs + i * C, static_cast<size_t>(C) * sizeof(T));
  }
}

template LossStats lm_head_loss_forward<float>(float*, const float*, const float*, const int64_t*,
                                               int64_t, int64_t, int64_t, std::vector<float>&,
                                               float);
template LossStats lm_head_loss_forward<double>(double*, const double*, const double*,
                                                const int64_t*, int64_t, int64_t, int64_t,
                                                std::vector<double>&, double);
template void lm_head_loss_backward<float>(float*, float*, const float*, const float*,
                                           const int64_t*, float, int64_t, int64_t, int64_t,
                                           std::vector<float>&, float);
template void lm_head_loss_backward<double>(double*, double*, const double*, const double*,
                                            const int64_t*, double, int64_t, int64_t, int64_t,
                                            std::vector<double>&, double);

}  // namespace sft::ops::cpu
