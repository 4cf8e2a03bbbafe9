// Attention forward/backward per document; every product goes through matmul.
// See attention.h for the contract and masking rule.
#include "ops/cpu/attention_reference.h"

#include <cmath>
#include <limits>
#include <vector>

#include "ops/ops.h"

namespace sft::ops::cpu {

namespace {

// Keys [lo, hi) visible from query i.
inline void visible(const AttentionShape& s, int64_t i, int64_t* lo, int64_t* hi) {
  const int64_t pos = s.q_offset + i;
  *hi = pos + 1 < s.Tk ? pos + 1 : s.Tk;
  *lo = s.window > 0 && pos - s.window + 1 > 0 ? pos - s.window + 1 : 0;
}

template <typename T>
T scale_of(const AttentionShape& s) {
  return s.scale > 0 ? static_cast<T>(s.scale) : T(1) / std::sqrt(static_cast<T>(s.D));
}

}  // namespace

template <typename T>
void attention_forward(T* out, T* probs, const T* q, const T* k, const T* v,
                       const AttentionShape& s, const T* sinks) {
  const int64_t group = s.H / s.Hkv;
  const T scale = scale_of<T>(s), cap = static_cast<T>(s.softcap);
  for (int64_t h = 0; h < s.H; ++h) {
    const int64_t g = h / group;
    T* P = probs + h * s.Tq * s.Tk;
    matmul(P, q + h * s.D, k + g * s.D, s.Tq, s.Tk, s.D, false, true, false, s.H * s.D, s.Hkv * s.D,
           s.Tk);
    parallel_for_rows(s.Tq, 16, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        T* row = P + i * s.Tk;
        int64_t lo, hi;
        visible(s, i, &lo, &hi);
        T mx = -std::numeric_limits<T>::infinity();
        for (int64_t j = lo; j < hi; ++j) {
          row[j] *= scale;
          if (cap > T(0)) row[j] = std::tanh(row[j] / cap) * cap;
          mx = row[j] > mx ? row[j] : mx;
        }
        if (sinks) mx = sinks[h] > mx ? sinks[h] : mx;
        T sum = sinks ? std::exp(sinks[h] - mx) : T(0);
        for (int64_t j = lo; j < hi; ++j) {
          row[j] = std::exp(row[j] - mx);
          sum += row[j];
        }
        const T inv = T(1) / sum;
        for (int64_t j = 0; j < lo; ++j) row[j] = 0;
        for (int64_t j = lo; j < hi; ++j) row[j] *= inv;
        for (int64_t j = hi; j < s.Tk; ++j) row[j] = 0;
      }
    });
    matmul(out + h * s.D, P, v + g * s.D, s.Tq, s.D, s.Tk, false, false, false, s.Tk, s.Hkv * s.D,
           s.H * s.D);
  }
}

template <typename T>
void attention_backward(T* dq, T* dk, T* dv, T* scratch, const T* dout, const T* probs, const T* q,
                        const T* k, const T* v, const AttentionShape& s, T* dsinks) {
  const int64_t group = s.H / s.Hkv;
  const T scale = scale_of<T>(s), cap = static_cast<T>(s.softcap);
  // The soft-cap's derivative 1 − tanh² per score, recomputed from q kᵀ.
  std::vector<T> dcap(cap > T(0) ? static_cast<size_t>(s.Tq * s.Tk) : 0);
  std::vector<T> row_dsink(static_cast<size_t>(s.Tq));  // summed in row order: deterministic
  for (int64_t h = 0; h < s.H; ++h) {
    const int64_t g = h / group;
    const bool first_in_group = h % group == 0;  // overwrite dk/dv, later heads add
    const T* P = probs + h * s.Tq * s.Tk;
    // dV += Pᵀ dO
    matmul(dv + g * s.D, P, dout + h * s.D, s.Tk, s.D, s.Tq, true, false, !first_in_group, s.Tk,
           s.H * s.D, s.Hkv * s.D);
    if (cap > T(0)) {
      matmul(dcap.data(), q + h * s.D, k + g * s.D, s.Tq, s.Tk, s.D, false, true, false, s.H * s.D,
             s.Hkv * s.D, s.Tk);
      for (T& x : dcap) {
        const T t = std::tanh(x * scale / cap);
        x = T(1) - t * t;
      }
    }
    // dP = dO Vᵀ, then dS = P ⊙ (dP − rowsum(P ⊙ dP)) [⊙ (1 − tanh²)] · scale; a sink's dP is 0
    // (it carries no value), so its logit's gradient is −p_sink · rowsum(P ⊙ dP).
    matmul(scratch, dout + h * s.D, v + g * s.D, s.Tq, s.Tk, s.D, false, true, false, s.H * s.D,
           s.Hkv * s.D, s.Tk);
    parallel_for_rows(s.Tq, 16, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        T* d = scratch + i * s.Tk;
        const T* p = P + i * s.Tk;
        T dot = 0, mass = 0;
        for (int64_t j = 0; j < s.Tk; ++j) {
          dot += p[j] * d[j];
          mass += p[j];
        }
        for (int64_t j = 0; j < s.Tk; ++j) {
          d[j] = p[j] * (d[j] - dot);
          if (cap > T(0)) d[j] *= dcap[static_cast<size_t>(i * s.Tk + j)];
          d[j] *= scale;
        }
        row_dsink[static_cast<size_t>(i)] = -(T(1) - mass) * dot;
      }
    });
    if (dsinks)
      for (const T x : row_dsink) dsinks[h] += x;
    // dQ = dS K ; dK += dSᵀ Q
    matmul(dq + h * s.D, scratch, k + g * s.D, s.Tq, s.D, s.Tk, false, false, false, s.Tk,
           s.Hkv * s.D, s.H * s.D);
    matmul(dk + g * s.D, scratch, q + h * s.D, s.Tk, s.D, s.Tq, true, false, !first_in_group, s.Tk,
           s.H * s.D, s.Hkv * s.D);
  }
}

template void attention_forward<float>(float*, float*, const float*, const float*, const float*,
                                       const AttentionShape&, const float*);
template void attention_forward<double>(double*, double*, const double*, const double*,
                                        const double*, const AttentionShape&, const double*);
template void attention_backward<float>(float*, float*, float*, float*, const float*, const float*,
                                        const float*, const float*, const float*,
                                        const AttentionShape&, float*);
template void attention_backward<double>(double*, double*, double*, double*, const double*,
                                         const double*, const double*, const double*, const double*,
                                         const AttentionShape&, double*);

}  // namespace sft::ops::cpu
