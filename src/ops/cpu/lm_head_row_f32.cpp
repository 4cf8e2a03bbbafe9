// The fused LM head's float row pass (lm_head_rows.h: row_stats_f32), compiled for the baseline
// and, behind a run-time check (cpu_features.h), for AVX-512: on the 152k-entry vocabulary the
// row pass is as long as the chunk's matmuls unless it is vectorised.
#include <limits>

#include "ops/cpu/cpu_features.h"
#include "ops/cpu/fast_exp.h"
#include "ops/cpu/lm_head_rows.h"

namespace sft::ops::lm_head_detail {

namespace {

constexpr int kMaxLanes = 16, kSumLanes = 8;

// The row's max and its first index.
[[gnu::always_inline]] inline float row_max(const float* z, int64_t V, int64_t* arg) {
  float lane[kMaxLanes];
  for (int l = 0; l < kMaxLanes; ++l) lane[l] = -std::numeric_limits<float>::infinity();
  const int64_t body = V / kMaxLanes * kMaxLanes;
  for (int64_t j = 0; j < body; j += kMaxLanes)
    for (int l = 0; l < kMaxLanes; ++l) lane[l] = z[j + l] > lane[l] ? z[j + l] : lane[l];
  float mx = -std::numeric_limits<float>::infinity();
  for (int l = 0; l < kMaxLanes; ++l) mx = lane[l] > mx ? lane[l] : mx;
  for (int64_t j = body; j < V; ++j) mx = z[j] > mx ? z[j] : mx;
  int64_t first = 0;
  while (first < V && !(z[first] == mx)) ++first;
  *arg = first < V ? first : 0;  // all-NaN rows: index 0, as the scalar scan
  return first < V ? mx : z[0];
}

[[gnu::always_inline]] inline RowStats row_body(float* z, int64_t V, int64_t target, bool grad,
                                                float scale) {
  int64_t arg = 0;
  const float mx = row_max(z, V, &arg);
  const float zt = z[target];
  double s[kSumLanes] = {}, spz[kSumLanes] = {};
  const int64_t body = V / kSumLanes * kSumLanes;
  for (int64_t j = 0; j < body; j += kSumLanes) {
    for (int l = 0; l < kSumLanes; ++l) {
      const float d = z[j + l] - mx;
      const float e = cpu::exp_score(d);
      s[l] += static_cast<double>(e);
      spz[l] += static_cast<double>(e * d);
      if (grad) z[j + l] = e;
    }
  }
  for (int64_t j = body; j < V; ++j) {
    const float d = z[j] - mx;
    const float e = cpu::exp_score(d);
    s[j - body] += static_cast<double>(e);
    spz[j - body] += static_cast<double>(e * d);
    if (grad) z[j] = e;
  }
  double sum = 0, sum_pz = 0;
  for (int l = 0; l < kSumLanes; ++l) sum += s[l], sum_pz += spz[l];
  return finish_row(z, V, target, grad, scale, mx, zt, arg, sum, sum_pz);
}

RowStats row_generic(float* z, int64_t V, int64_t target, bool grad, float scale) {
  return row_body(z, V, target, grad, scale);
}

[[gnu::target("avx512f,avx512dq,avx512bw,avx512vl")]] RowStats row_avx512(float* z, int64_t V,
                                                                          int64_t target, bool grad,
                                                                          float scale) {
  return row_body(z, V, target, grad, scale);
}

}  // namespace

RowStats row_stats_f32(float* z, int64_t V, int64_t target, bool grad, float scale) {
  return cpu::use_avx512() ? row_avx512(z, V, target, grad, scale)
                           : row_generic(z, V, target, grad, scale);
}

}  // namespace sft::ops::lm_head_detail
