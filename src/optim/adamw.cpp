#include "optim/adamw.h"

#include <cmath>

#include "core/error.h"
#include "core/thread_pool.h"

// torch's CPU kernels do not fuse multiply-adds here; fusing would change the last bits.
// (GCC in ISO C++ mode does not contract by default; clang does within a statement.)
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace sft {

AdamW::AdamW(size_t num_params, AdamWOptions options)
    : options_(options),
      exp_avg_(Tensor::zeros(DType::kF32, {static_cast<int64_t>(num_params)})),
      exp_avg_sq_(Tensor::zeros(DType::kF32, {static_cast<int64_t>(num_params)})) {}

void AdamW::step(std::span<float> params, std::span<const float> grads,
                 std::span<const ParamSlice> slices, double lr) {
  const size_t n = static_cast<size_t>(exp_avg_.numel());
  if (params.size() != n || grads.size() != n) {
    fail("optim", "AdamW was built for " + std::to_string(n) + " parameters, stepped with " +
                      std::to_string(params.size()) + " parameters and " +
                      std::to_string(grads.size()) + " grads");
  }
  ++steps_;
  const double t = static_cast<double>(steps_);
  // Scalars are computed in double and rounded to float once, as torch passes Python floats to
  // float kernels.
  const double bias_correction1 = 1.0 - std::pow(options_.beta1, t);
  const double bias_correction2 = 1.0 - std::pow(options_.beta2, t);
  const float neg_step_size = static_cast<float>(-(lr / bias_correction1));
  const float bc2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  const float eps = static_cast<float>(options_.eps);
  const float lerp_weight = static_cast<float>(1.0 - options_.beta1);
  const float beta2 = static_cast<float>(options_.beta2);
  const float one_minus_beta2 = static_cast<float>(1.0 - options_.beta2);
  const float decay_factor = static_cast<float>(1.0 - lr * options_.weight_decay);
  const bool use_decay = options_.weight_decay != 0.0;

  float* m = exp_avg_.mutable_values<float>().data();
  float* v = exp_avg_sq_.mutable_values<float>().data();
  for (const ParamSlice& slice : slices) {
    const bool decay = use_decay && slice.decay;
    default_thread_pool().parallel_for(slice.size, [&](size_t, size_t begin, size_t end) {
      for (size_t k = slice.offset + begin; k < slice.offset + end; ++k) {
        float p = params[k];
        const float g = grads[k];
        if (decay) p = p * decay_factor;
        // torch.lerp with weight < 0.5: start + weight * (end - start)
        m[k] = m[k] + lerp_weight * (g - m[k]);
        v[k] = v[k] * beta2;
        v[k] = v[k] + one_minus_beta2 * g * g;
        const float denom = std::sqrt(v[k]) / bc2_sqrt + eps;
        params[k] = p + neg_step_size * m[k] / denom;
      }
    });
  }
}

}  // namespace sft
