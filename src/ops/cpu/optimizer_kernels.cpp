// The optimizer's elementwise kernels on the CPU: AdamW's update, the squared L2 norm, scaling.
#include <cmath>
#include <vector>

#include "ops/ops.h"
#include "ops/profile.h"

// torch's CPU kernels do not fuse multiply-adds here; fusing would change the last bits.
// (GCC in ISO C++ mode does not contract by default; clang does within a statement.)
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace sft::ops {

namespace {

void require_cpu_f32(const char* op, std::initializer_list<View> views, int64_t n) {
  for (const View& v : views) {
    if (v.device != Device::kCpu || v.dtype != DType::kF32 || v.numel() != n)
      fail("ops", std::string(op) + ": needs CPU f32 views of " + std::to_string(n) +
                      " elements, got a " + std::string(dtype_name(v.dtype)) + " " +
                      device_name(v.device) + " view of " + std::to_string(v.numel()));
  }
}

// Fixed-size blocks (not thread chunks) so the summation order never depends on the pool size.
constexpr int64_t kNormBlock = 1 << 14;

}  // namespace

void adamw_update(View param, View grad, View exp_avg, View exp_avg_sq, const AdamWScalars& k) {
  const ScopedOp op("adamw_update");
  const int64_t n = param.numel();
  require_cpu_f32("adamw_update", {param, grad, exp_avg, exp_avg_sq}, n);
  float* p = param.as<float>();
  const float* g = grad.as<float>();
  float* m = exp_avg.as<float>();
  float* v = exp_avg_sq.as<float>();
  parallel_for_rows(n, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      float pi = p[i];
      const float gi = g[i];
      if (k.decay) pi = pi * k.decay_factor;
      // torch.lerp with weight < 0.5: start + weight * (end - start)
      m[i] = m[i] + k.lerp_weight * (gi - m[i]);
      v[i] = v[i] * k.beta2;
      v[i] = v[i] + k.one_minus_beta2 * gi * gi;
      const float denom = std::sqrt(v[i]) / k.bc2_sqrt + k.eps;
      p[i] = pi + k.neg_step_size * m[i] / denom;
    }
  });
}

double sum_of_squares(View x) {
  const ScopedOp op("sum_of_squares");
  const int64_t n = x.numel();
  require_cpu_f32("sum_of_squares", {x}, n);
  const float* a = x.as<float>();
  const int64_t blocks = (n + kNormBlock - 1) / kNormBlock;
  // The caller's buffer (a thread_local named inside the lambda would be each worker's own).
  thread_local std::vector<double> buffer;
  std::vector<double>& partial = buffer;
  partial.assign(static_cast<size_t>(blocks), 0.0);
  parallel_for_rows(blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      double sum = 0.0;
      const int64_t stop = std::min(n, (b + 1) * kNormBlock);
      for (int64_t i = b * kNormBlock; i < stop; ++i) sum += static_cast<double>(a[i]) * a[i];
      partial[static_cast<size_t>(b)] = sum;
    }
  });
  double total = 0.0;
  for (double s : partial) total += s;
  return total;
}

void scale(View x, float factor) {
  const ScopedOp op("scale");
  require_cpu_f32("scale", {x}, x.numel());
  float* a = x.as<float>();
  parallel_for_rows(x.numel(), 1 << 15, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) a[i] *= factor;
  });
}

}  // namespace sft::ops
