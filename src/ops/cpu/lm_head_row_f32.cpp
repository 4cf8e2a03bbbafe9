// The fused LM head's float row pass (lm_head_rows.h: row_stats_f32, and the three pieces of a
// vocabulary shard's row: row_max_f32, row_exp_sums_f32, row_scale_f32), compiled for the
// baseline and, behind a run-time check (cpu_features.h), for AVX-512: on the 152k-entry
// vocabulary the row pass is as long as the chunk's matmuls unless it is vectorised. The whole
// row and the shard's pieces are built from the same inline loops, so a shard's exponentials
// are bit for bit the whole row's.
#include <limits>

#include "core/half.h"
#include "ops/cpu/bf16_simd.h"
#include "ops/cpu/cpu_features.h"
#include "ops/cpu/fast_exp.h"
#include "ops/cpu/lm_head_rows.h"

namespace sft::ops::lm_head_detail {

namespace {

constexpr int kMaxLanes = 16, kSumLanes = 8;

// The largest element over 16 lanes (NaNs are passed over; −inf when there is nothing else).
[[gnu::always_inline]] inline float lane_max(const float* z, int64_t V) {
  float lane[kMaxLanes];
  for (int l = 0; l < kMaxLanes; ++l) lane[l] = -std::numeric_limits<float>::infinity();
  const int64_t body = V / kMaxLanes * kMaxLanes;
  for (int64_t j = 0; j < body; j += kMaxLanes)
    for (int l = 0; l < kMaxLanes; ++l) lane[l] = z[j + l] > lane[l] ? z[j + l] : lane[l];
  float mx = -std::numeric_limits<float>::infinity();
  for (int l = 0; l < kMaxLanes; ++l) mx = lane[l] > mx ? lane[l] : mx;
  for (int64_t j = body; j < V; ++j) mx = z[j] > mx ? z[j] : mx;
  return mx;
}

// The row's max and its first index.
[[gnu::always_inline]] inline float row_max(const float* z, int64_t V, int64_t* arg) {
  const float mx = lane_max(z, V);
  int64_t first = 0;
  while (first < V && !(z[first] == mx)) ++first;
  *arg = first < V ? first : 0;  // all-NaN rows: index 0, as the scalar scan
  return first < V ? mx : z[0];
}

// Σ exp(z − mx) and Σ exp(z − mx)·(z − mx) over 8 double lanes combined in lane order; with
// store, z becomes exp(z − mx).
[[gnu::always_inline]] inline void exp_sums(float* z, int64_t V, float mx, bool store, double* sum,
                                            double* sum_pz) {
  double s[kSumLanes] = {}, spz[kSumLanes] = {};
  const int64_t body = V / kSumLanes * kSumLanes;
  for (int64_t j = 0; j < body; j += kSumLanes) {
    for (int l = 0; l < kSumLanes; ++l) {
      const float d = z[j + l] - mx;
      const float e = cpu::exp_score(d);
      s[l] += static_cast<double>(e);
      spz[l] += static_cast<double>(e * d);
      if (store) z[j + l] = e;
    }
  }
  for (int64_t j = body; j < V; ++j) {
    const float d = z[j] - mx;
    const float e = cpu::exp_score(d);
    s[j - body] += static_cast<double>(e);
    spz[j - body] += static_cast<double>(e * d);
    if (store) z[j] = e;
  }
  double a = 0, b = 0;
  for (int l = 0; l < kSumLanes; ++l) a += s[l], b += spz[l];
  *sum = a;
  *sum_pz = b;
}

[[gnu::always_inline]] inline RowStats row_body(float* z, int64_t V, int64_t target, bool grad,
                                                float scale) {
  int64_t arg = 0;
  const float mx = row_max(z, V, &arg);
  const float zt = z[target];
  double sum = 0, sum_pz = 0;
  exp_sums(z, V, mx, grad, &sum, &sum_pz);
  return finish_row(z, V, target, grad, scale, mx, zt, arg, sum, sum_pz);
}

[[gnu::always_inline]] inline void scale_row(float* z, int64_t V, float k) {
  for (int64_t j = 0; j < V; ++j) z[j] *= k;
}

// row_bf16_body's first pass: row = z widened, and lane_max's max over the same 16 lanes.
[[gnu::always_inline]] inline float widen_lane_max(float* row, const uint16_t* z, int64_t V) {
  float lane[kMaxLanes];
  for (int l = 0; l < kMaxLanes; ++l) lane[l] = -std::numeric_limits<float>::infinity();
  const int64_t body = V / kMaxLanes * kMaxLanes;
  for (int64_t j = 0; j < body; j += kMaxLanes)
    for (int l = 0; l < kMaxLanes; ++l) {
      const float v = bf16_to_f32(z[j + l]);
      row[j + l] = v;
      lane[l] = v > lane[l] ? v : lane[l];
    }
  float mx = -std::numeric_limits<float>::infinity();
  for (int l = 0; l < kMaxLanes; ++l) mx = lane[l] > mx ? lane[l] : mx;
  for (int64_t j = body; j < V; ++j) {
    row[j] = bf16_to_f32(z[j]);
    mx = row[j] > mx ? row[j] : mx;
  }
  return mx;
}

// row_stats_f32 on a row of bf16 logits z widened into row, its first passes fused (widening
// with the max); *k receives finish_row's factor, 1/sum · scale, and row keeps exp(z − mx)
// unscaled (with grad): the dlogits are rounded from it by the caller (scale_round).
[[gnu::always_inline]] inline RowStats row_bf16_stats(uint16_t* z, float* row, int64_t V,
                                                      int64_t target, bool grad, float scale,
                                                      float* k) {
  float mx = widen_lane_max(row, z, V);
  int64_t arg = 0;  // the first index of the max: 16 lanes to the block holding it, then one
  for (; arg + kMaxLanes <= V; arg += kMaxLanes) {
    bool hit = false;
    for (int l = 0; l < kMaxLanes; ++l) hit |= row[arg + l] == mx;
    if (hit) break;
  }
  while (arg < V && !(row[arg] == mx)) ++arg;
  if (arg == V) arg = 0, mx = row[0];  // all-NaN rows: as row_max
  const float zt = row[target];
  double sum = 0, sum_pz = 0;
  exp_sums(row, V, mx, grad, &sum, &sum_pz);
  *k = static_cast<float>(1.0 / sum) * scale;
  return finish_row(row, V, target, false, scale, mx, zt, arg, sum, sum_pz);
}

// finish_row's scaling and the rounding in one pass: z[j] = f32_to_bf16(row[j] · k), and at the
// target f32_to_bf16(row · k − scale) (finish_row's two steps, then the rounding).
[[gnu::always_inline]] inline void scale_round_tail(uint16_t* z, const float* row, int64_t j,
                                                    int64_t V, float k, int64_t target,
                                                    float scale) {
  for (; j < V; ++j) z[j] = f32_to_bf16(row[j] * k);
  z[target] = f32_to_bf16(row[target] * k - scale);
}

RowStats row_generic(float* z, int64_t V, int64_t target, bool grad, float scale) {
  return row_body(z, V, target, grad, scale);
}
float max_generic(const float* z, int64_t V) {
  return lane_max(z, V);
}
void sums_generic(float* z, int64_t V, float mx, bool store, double* sum, double* sum_pz) {
  exp_sums(z, V, mx, store, sum, sum_pz);
}
void scale_generic(float* z, int64_t V, float k) {
  scale_row(z, V, k);
}

RowStats row_bf16_generic(uint16_t* z, float* row, int64_t V, int64_t target, bool grad,
                          float scale) {
  float k = 0;
  const RowStats r = row_bf16_stats(z, row, V, target, grad, scale, &k);
  if (grad) scale_round_tail(z, row, 0, V, k, target, scale);
  return r;
}

#define SFT_AVX512 [[gnu::target("avx512f,avx512dq,avx512bw,avx512vl")]]
SFT_AVX512 RowStats row_bf16_avx512(uint16_t* z, float* row, int64_t V, int64_t target, bool grad,
                                    float scale) {
  float k = 0;
  const RowStats r = row_bf16_stats(z, row, V, target, grad, scale, &k);
  if (!grad) return r;
  const __m512 kv = _mm512_set1_ps(k);
  int64_t j = 0;
  for (; j + 16 <= V; j += 16)
    cpu::bf16_store16(z + j, _mm512_mul_ps(_mm512_loadu_ps(row + j), kv));
  scale_round_tail(z, row, j, V, k, target, scale);
  return r;
}
SFT_AVX512 RowStats row_avx512(float* z, int64_t V, int64_t target, bool grad, float scale) {
  return row_body(z, V, target, grad, scale);
}
SFT_AVX512 float max_avx512(const float* z, int64_t V) {
  return lane_max(z, V);
}
SFT_AVX512 void sums_avx512(float* z, int64_t V, float mx, bool store, double* sum,
                            double* sum_pz) {
  exp_sums(z, V, mx, store, sum, sum_pz);
}
SFT_AVX512 void scale_avx512(float* z, int64_t V, float k) {
  scale_row(z, V, k);
}
#undef SFT_AVX512

}  // namespace

RowStats row_stats_f32(float* z, int64_t V, int64_t target, bool grad, float scale) {
  return cpu::use_avx512() ? row_avx512(z, V, target, grad, scale)
                           : row_generic(z, V, target, grad, scale);
}

RowStats row_stats_bf16(uint16_t* z, float* row, int64_t V, int64_t target, bool grad,
                        float scale) {
  return cpu::use_avx512() ? row_bf16_avx512(z, row, V, target, grad, scale)
                           : row_bf16_generic(z, row, V, target, grad, scale);
}

float row_max_f32(const float* z, int64_t V) {
  return cpu::use_avx512() ? max_avx512(z, V) : max_generic(z, V);
}

void row_exp_sums_f32(float* z, int64_t V, float mx, bool store, double* sum, double* sum_pz) {
  return cpu::use_avx512() ? sums_avx512(z, V, mx, store, sum, sum_pz)
                           : sums_generic(z, V, mx, store, sum, sum_pz);
}

void row_scale_f32(float* z, int64_t V, float k) {
  return cpu::use_avx512() ? scale_avx512(z, V, k) : scale_generic(z, V, k);
}

}  // namespace sft::ops::lm_head_detail
