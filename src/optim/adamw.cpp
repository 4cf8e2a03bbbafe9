#include "optim/adamw.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "ops/ops.h"

namespace sft {

namespace {

// exp_avg_sq's place in a device optimizer's arena: after exp_avg, aligned.
size_t second_moment_at(size_t n) {
  return (n * sizeof(float) + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

}  // namespace

AdamW::AdamW(size_t num_params, AdamWOptions options, Device device)
    : options_(options), device_(device), num_params_(num_params), device_moments_(device) {
  if (device == Device::kCpu) {
    exp_avg_ = Tensor::zeros(DType::kF32, {static_cast<int64_t>(num_params)});
    exp_avg_sq_ = Tensor::zeros(DType::kF32, {static_cast<int64_t>(num_params)});
  } else {
    // One allocation for both moments, zero-filled as torch's zeros_like state.
    device_moments_.reserve(std::max<size_t>(kArenaAlignment, 2 * second_moment_at(num_params)));
  }
}

void AdamW::check_host() const {
  if (device_ != Device::kCpu)
    fail("optim", std::string("AdamW's moments are on the ") + device_name(device_) +
                      " device; read them through copy_to(Device::kCpu)");
}

float* AdamW::moment_data(int which) {
  if (device_ == Device::kCpu)
    return (which == 0 ? exp_avg_ : exp_avg_sq_).mutable_values<float>().data();
  return reinterpret_cast<float*>(device_moments_.data() +
                                  (which == 0 ? 0 : second_moment_at(num_params_)));
}

AdamW AdamW::copy_to(Device device) const {
  AdamW out(num_params_, options_, device);
  out.copy_state_from(*this);
  return out;
}

void AdamW::copy_state_from(const AdamW& other) {
  if (other.num_params_ != num_params_)
    fail("optim", "AdamW state of " + std::to_string(other.num_params_) +
                      " parameters loaded into an optimizer of " + std::to_string(num_params_));
  for (int which = 0; which < 2; ++which)
    copy_bytes(moment_data(which), device_, other.moment_data(which), other.device_,
               num_params_ * sizeof(float));
  options_ = other.options_;
  steps_ = other.steps_;
}

void AdamW::step(std::span<float> params, std::span<const float> grads,
                 std::span<const ParamSlice> slices, double lr, uint16_t* bf16_copies,
                 float grad_scale) {
  const size_t n = num_params_;
  if (params.size() != n || grads.size() != n) {
    fail("optim", "AdamW was built for " + std::to_string(n) + " parameters, stepped with " +
                      std::to_string(params.size()) + " parameters and " +
                      std::to_string(grads.size()) + " grads");
  }
  ++steps_;
  if (n == 0) return;  // a ZeRO rank whose shard is empty: nothing to view
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

  ops::AdamWScalars k{neg_step_size,   bc2_sqrt,     eps,       lerp_weight, beta2,
                      one_minus_beta2, decay_factor, use_decay, grad_scale};
  // Views on the optimizer's device: the parameters, gradients and copies are that device's
  // memory too (the ParameterSet's arenas), which the dispatcher checks. One call over every
  // slice: a LoRA run has a few hundred small ones (ops.h).
  const int64_t len = static_cast<int64_t>(n);
  auto view = [&](auto* base) { return ops::view_of(base, 1, len, device_); };
  const ops::View copy = bf16_copies ? view(bf16_copies) : ops::View{};
  ops::adamw_update_slices(view(params.data()), view(grads.data()), view(moment_data(0)),
                           view(moment_data(1)), slices, k, copy);
}

}  // namespace sft
