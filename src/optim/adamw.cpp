#include "optim/adamw.h"

#include <cmath>

#include "core/error.h"
#include "ops/ops.h"

namespace sft {

AdamW::AdamW(size_t num_params, AdamWOptions options)
    : options_(options),
      exp_avg_(Tensor::zeros(DType::kF32, {static_cast<int64_t>(num_params)})),
      exp_avg_sq_(Tensor::zeros(DType::kF32, {static_cast<int64_t>(num_params)})) {}

void AdamW::step(std::span<float> params, std::span<const float> grads,
                 std::span<const ParamSlice> slices, double lr, uint16_t* bf16_copies,
                 float grad_scale) {
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
  ops::AdamWScalars k{neg_step_size,   bc2_sqrt,     eps,   lerp_weight, beta2,
                      one_minus_beta2, decay_factor, false, grad_scale};
  for (const ParamSlice& slice : slices) {
    k.decay = use_decay && slice.decay;
    const int64_t n = static_cast<int64_t>(slice.size);
    auto view = [&](auto* base) { return ops::view_of(base + slice.offset, 1, n); };
    const ops::View copy = bf16_copies ? view(bf16_copies) : ops::View{};
    ops::adamw_update(view(params.data()), view(grads.data()), view(m), view(v), k, copy);
  }
}

}  // namespace sft
